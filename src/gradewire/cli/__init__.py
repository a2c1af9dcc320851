"""The ``gradewire`` command line: demo, serve, eval, compare, power, audit, agreement, sync.

The top layer: it may import every other folder, and nothing imports it.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.cli._main import main as main

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
