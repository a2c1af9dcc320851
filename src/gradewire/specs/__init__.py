"""Graders declared as data: specs in a TOML/JSON file, built by one factory.

`load_graders` reads a grader file, `build_grader` turns one spec into a grader, and
`grader_config` gives back the specs to log as run config. The spec models are loaded
only when a file is read, which keeps ``import gradewire`` light. Imports `core`, `judges`
and `tools`.
"""

from gradewire.specs._factory import build_grader, grader_config, load_graders

__all__ = ["build_grader", "grader_config", "load_graders"]
