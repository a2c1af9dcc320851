"""Graders that act on the world: run a command, or call a remote reward endpoint.

`CommandGrader` scores a command's exit code with the completion passed as data, never as
shell code; `EndpointGrader` posts the sample to a reward service. Imports `core`, `helpers`
and `http`; each name is imported when first used.
"""

from gradewire.core._lazy import HUD_NAMES, attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.tools._command_grader import CommandGrader as CommandGrader
    from gradewire.tools._command_grader import CompletionVia as CompletionVia
    from gradewire.tools._endpoint_grader import EndpointGrader as EndpointGrader

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, moved={"BashGrader": HUD_NAMES["BashGrader"]})
