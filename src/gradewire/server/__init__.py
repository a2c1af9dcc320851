"""The reward server: graders behind HTTP, for trainers that fetch rewards remotely.

`create_app` / `serve` (and ``gradewire serve``) answer ``/v1/grade``, ``/v1/grade_batch``,
OpenRLHF's ``/get_reward`` and NeMo Gym's ``/verify``; `ServerSettings` holds their limits,
timeouts and access rules. aiohttp is imported only when a server is built (extra
``serve``). Imports `core` and `specs`.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.server._server import create_app as create_app
    from gradewire.server._server import serve as serve
    from gradewire.server._settings import ServerSettings as ServerSettings

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
