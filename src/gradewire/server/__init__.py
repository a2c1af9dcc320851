"""The reward server: graders behind HTTP, for trainers that fetch rewards remotely.

`create_app` / `serve` (and ``gradewire serve``) answer ``/v1/grade``, ``/v1/grade_batch``,
OpenRLHF's ``/get_reward`` and NeMo Gym's ``/verify``; `ServerSettings` holds their limits,
timeouts and access rules. aiohttp is imported only when a server is built (extra
``serve``). Imports `core` and `specs`.
"""

from gradewire.server._server import create_app, serve
from gradewire.server._settings import ServerSettings

__all__ = ["ServerSettings", "create_app", "serve"]
