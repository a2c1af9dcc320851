"""HTTP for graders that call out: a keep-alive client, senders, retries, endpoint state.

What the judges and the endpoint grader share to reach a server: `RetryPolicy` (jittered
backoff that honours ``Retry-After``), one concurrency budget per endpoint, refusals that
name a parameter (`ParameterRefusedError`, never retried), what was learnt about each
endpoint, and connections closed with their event loop. Imports `core` only.
"""

from gradewire.http._endpoint_facts import forget_endpoint_facts
from gradewire.http._refusal import ParameterRefusedError
from gradewire.http._retry import ModelHTTPError, RetryPolicy

__all__ = ["ModelHTTPError", "ParameterRefusedError", "RetryPolicy", "forget_endpoint_facts"]
