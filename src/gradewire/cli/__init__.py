"""The ``gradewire`` command line: ``demo``, ``serve``, ``eval``, ``compare``, ``power``.

The top layer: it may import every other folder, and nothing imports it.
"""

from gradewire.cli._main import main

__all__ = ["main"]
