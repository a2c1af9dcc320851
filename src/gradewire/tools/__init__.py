"""Graders that act on the world: run a command, or call a remote reward endpoint.

`BashGrader` scores a command's exit code with the completion passed as data, never as
shell code; `EndpointGrader` posts the sample to a reward service. Imports `core`, `helpers`
and `http`.
"""

from gradewire.tools._bash_grader import BashGrader, CompletionVia
from gradewire.tools._endpoint_grader import EndpointGrader

__all__ = ["BashGrader", "CompletionVia", "EndpointGrader"]
