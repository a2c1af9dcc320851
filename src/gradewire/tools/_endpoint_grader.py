"""EndpointGrader: a grader whose score comes from an HTTP reward endpoint."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._grade import Grade
from gradewire.core._grader import BaseGrader
from gradewire.core._settings import check_positive_seconds
from gradewire.core._thread import StringThread
from gradewire.http._fast_http import DEFAULT_MAX_RESPONSE_BYTES, max_response_bytes_setting
from gradewire.http._loop_senders import LoopSenders
from gradewire.http._retry import RetryPolicy
from gradewire.http._settings import check_headers
from gradewire.tools._endpoint_wire import (
    PAYLOADS,
    Payload,
    decode_answer,
    encode_request,
    failure_for_status,
    read_grade,
)

__all__ = ["EndpointGrader"]

_DEFAULT_ATTEMPT_S = 30.0


class EndpointGrader(BaseGrader):
    """Score each sample by POSTing it to a reward endpoint (Adaptive's external endpoint).

    The request is JSON in one of two shapes (``payload=``):

    - ``"gradewire"`` (default): ``{"thread": StringThread.to_dict()}``, plus ``"grader"``
      when ``remote_grader`` is set. The answer's number is read from ``reward``, ``score``
      or ``value`` (with an optional ``reasoning``), or from ``grade`` (a `Grade.to_dict`,
      children and info kept), which is what ``gradewire serve`` answers; an answer with
      ``abstained: true`` abstains, one with only an ``error`` fails.
    - ``"openrlhf"``: ``{"query": [prompt + completion], "prompts": [prompt],
      "labels": [metadata.get("label")]}``, OpenRLHF's remote reward model request; the
      reward is ``rewards[0]``. The prompt is ``metadata["prompt"]`` when it is a str (the
      exact chat-templated prompt), else the last user message. When the answer flags the
      sample as gradewire's ``/get_reward`` does (``extra_logs.reward_abstained[0]`` or
      ``reward_failed[0]`` set, or an ``errors[0]`` message), its ``rewards[0]`` is only a
      stand-in: the sample abstains, or fails with `GradingError`, rather than score it.

    429, 5xx, 408, 409, timeouts, dropped connections and non-JSON bodies are retried under
    ``retry`` (exponential backoff with full jitter, ``Retry-After`` honoured). When the
    attempts run out, or the endpoint refuses the request (other 4xx), or its answer holds
    no finite number, the sample fails with `ModelCallError`: counted in
    ``score/error_count``, never scored 0.

    Two bounds, named as in Inspect AI: ``attempt_timeout`` (default 30 s) bounds each HTTP
    attempt, which is then retried; ``timeout`` bounds the whole grade, attempts and the
    waits between them included, as on every grader (`BaseGrader.timeout`): past it the
    sample is a timeout outcome (`GradeTimeoutError`, ``score/timeout_count``).

    Calls go through gradewire's lean HTTP/1.1 client (keep-alive connections per event
    loop, closed when the loop shuts down or at `aclose`), or through httpx when the
    environment names a proxy for the URL.

    Each sample logs ``score`` and ``attempts`` (so ``attempts/mean`` shows a struggling
    endpoint); with ``sample_tables`` also prompt, completion and reasoning.

    Example:
        >>> grader = EndpointGrader("rm", "http://rm-host:8000/v1/grade", token="...")
        >>> grades = await grader.grade_many(samples)  # doctest: +SKIP
    """

    def __init__(
        self,
        grader_key: str,
        url: str,
        *,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        attempt_timeout: float | None = None,
        max_attempts: int | None = None,
        retry: RetryPolicy | None = None,
        payload: Payload = "gradewire",
        remote_grader: str | None = None,
        sample_tables: bool = False,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        """Configure the endpoint.

        Args:
            grader_key: The grader's logical name.
            url: The full URL to POST to, e.g. ``http://host:8000/v1/grade``.
            token: Sent as ``Authorization: Bearer <token>``.
            headers: More HTTP headers for every request.
            timeout: Seconds the whole grade may take, every attempt and the waits
                between them (`BaseGrader.timeout`); None (the default): no bound but the
                attempts'. It used to bound each attempt (now
                ``attempt_timeout``): given alone, it warns (`DeprecationWarning`) and
                bounds the whole grade.
            attempt_timeout: Seconds one HTTP attempt may take: connecting, sending and
                reading the answer share this one deadline (default 30).
            max_attempts: Attempts per sample, the first included (default: the retry
                policy's, 5). Given with ``retry``, it replaces that policy's
                ``max_attempts`` and keeps the rest (backoff, sleep and jitter sources), as
                `OpenAIChatModel` does.
            retry: The full `RetryPolicy` (default: `RetryPolicy()`, 5 attempts, as the
                judge client).
            payload: ``"gradewire"`` or ``"openrlhf"``: the request and answer shape.
            remote_grader: Which grader of a gradewire reward server to use (sent as
                ``"grader"``; needed when the server hosts several).
            sample_tables: Log prompt, completion and reasoning for the sample tables.
            max_response_bytes: Largest answer accepted (decompressed); a larger one is an
                error, not retried (default 64 MiB).
        """
        super().__init__(grader_key, sample_tables=sample_tables, timeout=timeout)
        if timeout is not None and attempt_timeout is None:
            warnings.warn(
                "EndpointGrader(timeout=...) bounds the whole grade, retries included, as on "
                "every grader; it used to bound each HTTP attempt, which is now "
                "attempt_timeout=. Pass attempt_timeout= as well (or instead) to say which "
                "you mean",
                DeprecationWarning,
                stacklevel=2,
            )
        self.attempt_timeout = check_positive_seconds(
            "attempt_timeout", _DEFAULT_ATTEMPT_S if attempt_timeout is None else attempt_timeout
        )
        if not isinstance(url, str):
            raise InvalidTypeError(f"url must be a str, not {type(url).__name__}")
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInputError(
                f"url must be an http:// or https:// URL with a host, not {url!r}; e.g. "
                "'http://127.0.0.1:8000/v1/grade'"
            )
        self.url = url.strip()
        self.max_response_bytes = max_response_bytes_setting(max_response_bytes)
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise InvalidTypeError(f"retry must be a RetryPolicy, not {type(retry).__name__}")
        policy = retry or RetryPolicy()
        if max_attempts is not None:
            if (
                isinstance(max_attempts, bool)
                or not isinstance(max_attempts, int)
                or max_attempts < 1
            ):
                raise InvalidInputError(
                    f"max_attempts must be an int >= 1 (1: no retry), not {max_attempts!r}"
                )
            policy = dataclasses.replace(policy, max_attempts=max_attempts)
        self.retry = policy
        if payload not in PAYLOADS:
            raise InvalidInputError(f"payload must be 'gradewire' or 'openrlhf', not {payload!r}")
        self.payload: Payload = payload
        if remote_grader is not None and (
            not isinstance(remote_grader, str) or not remote_grader.strip()
        ):
            raise InvalidInputError(
                f"remote_grader must be a non-empty str or None, not {remote_grader!r}"
            )
        if remote_grader is not None and payload != "gradewire":
            raise InvalidInputError(
                "remote_grader is sent in the 'gradewire' payload only; for OpenRLHF's shape "
                "put the grader in the URL: .../get_reward?grader=KEY"
            )
        self.remote_grader = remote_grader
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token is not None:
            if not isinstance(token, str):
                raise InvalidTypeError(f"token must be a str, not {type(token).__name__}")
            if token.strip():
                # A token pasted with its newline is the usual cause of "invalid header".
                self._headers["Authorization"] = f"Bearer {token.strip()}"
        if headers:
            if not isinstance(headers, Mapping):
                raise InvalidTypeError(f"headers must be a dict, not {type(headers).__name__}")
            self._headers.update(headers)
        check_headers(self._headers)
        self._what = f"reward endpoint of grader {grader_key!r}"
        self._senders = LoopSenders(self.url, self.attempt_timeout)

    async def grade(self, sample: StringThread) -> Grade:
        """POST the sample and read its grade (retrying what is worth retrying)."""
        body = encode_request(sample, self.payload, self.remote_grader)
        sender = await self._senders.sender()
        attempts = 0

        async def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            status, headers, content = await sender.post(
                self.url, body, self._headers, self.attempt_timeout, self.max_response_bytes
            )
            if 200 <= status < 300:
                return decode_answer(content, self.url)
            raise failure_for_status(
                status, headers, content, url=self.url, what=self._what, attempts=attempts
            )

        data = await self.retry.call(attempt, endpoint=self.url, what=self._what)
        grade = read_grade(data, self.payload, grader_key=self.grader_key, url=self.url)
        grade = grade.replace(info={**grade.info, "endpoint": self.url, "attempts": attempts})
        log: dict[str, Any] = {"score": grade.value, "attempts": attempts}
        if self.sample_tables:
            log["prompt"] = sample.last_user_content() or ""
            log["completion"] = sample.completion() or ""
            if grade.reasoning is not None:
                log["reasoning"] = grade.reasoning
        self.add_log(log)
        return grade

    async def aclose(self) -> None:
        """Close this event loop's connections (those of other loops close with them)."""
        await self._senders.aclose()

    async def __aenter__(self) -> EndpointGrader:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return (
            f"EndpointGrader(grader_key={self.grader_key!r}, url={self.url!r}, "
            f"payload={self.payload!r})"
        )
