"""Graders that act on the world: run a command, or call a remote reward endpoint.

`CommandGrader` scores a command's exit code with the completion passed as data, never as
shell code; `EndpointGrader` posts the sample to a reward service. Imports `core`, `helpers`
and `http`; each name is imported when first used.
"""

from typing import TYPE_CHECKING

from gradewire.core._lazy import HUD_NAMES, attach

if TYPE_CHECKING:
    from gradewire.tools._command_grader import CommandGrader, CompletionVia
    from gradewire.tools._endpoint_grader import EndpointGrader

__all__ = ["CommandGrader", "CompletionVia", "EndpointGrader"]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(
        __name__,
        {
            "._command_grader": ["CommandGrader", "CompletionVia"],
            "._endpoint_grader": ["EndpointGrader"],
        },
        moved={"BashGrader": HUD_NAMES["BashGrader"]},
    )
