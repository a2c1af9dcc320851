"""HTTP for graders that call out: a keep-alive client, senders, retries, endpoint state.

What the judges and the endpoint grader share to reach a server: `RetryPolicy` (jittered
backoff that honours ``Retry-After``), one concurrency budget per endpoint, refusals that
name a parameter (`ParameterRefusedError`, never retried), what was learnt about each
endpoint, and connections closed with their event loop. Imports `core` only.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.http._endpoint_facts import forget_endpoint_facts as forget_endpoint_facts
    from gradewire.http._refusal import ParameterRefusedError as ParameterRefusedError
    from gradewire.http._retry import ModelHTTPError as ModelHTTPError
    from gradewire.http._retry import RetryPolicy as RetryPolicy

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
