"""Graders declared as data: specs in a TOML/JSON file, built by one factory.

`load_graders` reads a grader file, `build_grader` turns one spec into a grader, and
`grader_config` gives back the specs to log as run config. The spec models are loaded
only when a file is read, which keeps ``import gradewire`` light. Imports `core`, `judges`
and `tools`.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.specs._factory import build_grader as build_grader
    from gradewire.specs._factory import grader_config as grader_config
    from gradewire.specs._factory import load_graders as load_graders

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
