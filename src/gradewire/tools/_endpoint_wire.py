"""The wire formats `EndpointGrader` speaks: a request body out, a Grade (or why not) back in.

Two shapes:

* ``"gradewire"``: ``{"thread": StringThread.to_dict()}`` (plus ``"grader"`` to pick one of
  several graders on a gradewire reward server); the answer carries a number in ``reward``,
  ``score`` or ``value`` (and optional ``reasoning``), or a whole ``grade`` as written by
  `Grade.to_dict` with ``error`` / ``abstained`` when there is none.
* ``"openrlhf"``: OpenRLHF's remote reward model request,
  ``{"query": [prompt + completion], "prompts": [prompt], "labels": [label]}``; the answer
  carries ``rewards[0]``, unless it flags the sample as abstained or failed the way
  gradewire's ``/get_reward`` does (``extra_logs.reward_abstained`` / ``reward_failed``,
  ``errors``), where ``rewards[0]`` is only the server's stand-in ``failure_value``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Literal

from gradewire.core._errors import (
    GradingError,
    IgnoreGradeException,
    InvalidInputError,
)
from gradewire.core._grade import Grade
from gradewire.core._thread import StringThread
from gradewire.http._failure import body_snippet
from gradewire.http._failure import failure_for_status as http_failure
from gradewire.http._retry import ModelHTTPError, RetryableError

__all__ = [
    "PAYLOADS",
    "Payload",
    "decode_answer",
    "encode_request",
    "failure_for_status",
    "openrlhf_prompt",
    "read_grade",
]

Payload = Literal["gradewire", "openrlhf"]
PAYLOADS: tuple[Payload, ...] = ("gradewire", "openrlhf")
_REWARD_FIELDS = ("reward", "score", "value")


def openrlhf_prompt(sample: StringThread) -> str:
    """The prompt of an OpenRLHF request for a sample.

    That is ``metadata["prompt"]`` when it is a str (the exact, chat-templated prompt a
    trainer used), else the last user message.
    """
    prompt = sample.metadata.get("prompt")
    if isinstance(prompt, str):
        return prompt
    return sample.last_user_content() or ""


def encode_request(sample: StringThread, payload: Payload, remote_grader: str | None) -> bytes:
    """The JSON body for one sample."""
    if not isinstance(sample, StringThread):
        raise InvalidInputError(
            f"EndpointGrader grades a StringThread, not {type(sample).__name__}"
        )
    data: dict[str, Any]
    if payload == "gradewire":
        data = {"thread": sample.to_dict()}
        if remote_grader is not None:
            data["grader"] = remote_grader
    else:
        prompt = openrlhf_prompt(sample)
        data = {
            "query": [prompt + (sample.completion() or "")],
            "prompts": [prompt],
            "labels": [sample.metadata.get("label")],
        }
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"the sample cannot be sent as JSON ({exc}); keep metadata to str, numbers, "
            "bools, None, lists and dicts"
        ) from exc
    try:
        return text.encode()
    except UnicodeEncodeError:
        # Lone surrogates (a cut emoji): JSON's \\u escapes carry them losslessly.
        return json.dumps(data, separators=(",", ":")).encode()


def decode_answer(body: bytes, url: str) -> Any:
    """Parse a 2xx body; one that is not JSON may be a proxy's page, so it is retried."""
    try:
        return json.loads(body.decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise RetryableError(
            f"HTTP 200 with a body that is not JSON ({exc}; body starts with {body_snippet(body)})",
            advice=(
                f"check that {url} is a reward endpoint that answers JSON and that nothing "
                "between rewrites the answers"
            ),
        ) from exc


def read_grade(data: Any, payload: Payload, *, grader_key: str, url: str) -> Grade:
    """The Grade an endpoint's JSON answer stands for.

    Raises:
        IgnoreGradeException: The endpoint abstained.
        GradingError: The endpoint reported that its grader failed on the sample.
        ModelHTTPError: The answer holds no finite reward.
    """
    if payload == "openrlhf":
        if isinstance(data, Mapping):
            _check_openrlhf_flags(data, url)
        rewards = data.get("rewards") if isinstance(data, Mapping) else None
        if not isinstance(rewards, list) or not rewards:
            raise _no_reward(data, url, "a non-empty list in 'rewards' (OpenRLHF's shape)")
        return Grade(_finite(rewards[0], "rewards[0]", data, url), grader_key)
    if not isinstance(data, Mapping):
        raise _no_reward(data, url, _GRADEWIRE_EXPECTED)
    if "grade" in data and data["grade"] is not None:
        return _remote_grade(data["grade"], grader_key, url)
    if data.get("abstained") is True:
        raise IgnoreGradeException(f"the reward endpoint abstained: {data.get('error') or ''}")
    error = data.get("error")
    if error:
        raise GradingError(f"the reward endpoint at {url} could not grade the sample: {error}")
    for field in _REWARD_FIELDS:
        if field in data:
            value = _finite(data[field], field, data, url)
            reasoning = data.get("reasoning")
            return Grade(value, grader_key, reasoning if isinstance(reasoning, str) else None)
    raise _no_reward(data, url, _GRADEWIRE_EXPECTED)


_GRADEWIRE_EXPECTED = "a finite number in 'reward', 'score' or 'value', or a 'grade' object"


def _check_openrlhf_flags(data: Mapping[str, Any], url: str) -> None:
    """Raise when an OpenRLHF answer says its reward is a stand-in, not a grade.

    gradewire's ``/get_reward`` answers ``failure_value`` for a sample it could not grade,
    flags it in ``extra_logs`` and says why in ``errors``: reading that reward as a grade
    would be a silent 0.
    """
    extra = data.get("extra_logs")
    flags = extra if isinstance(extra, Mapping) else {}
    error = _first(data.get("errors"))
    reason = error if isinstance(error, str) and error.strip() else None
    if _flagged(flags.get("reward_abstained")):
        raise IgnoreGradeException(
            f"the reward endpoint abstained: {reason or 'flagged in extra_logs.reward_abstained'}"
        )
    if _flagged(flags.get("reward_failed")) or reason is not None:
        raise GradingError(
            f"the reward endpoint at {url} could not grade the sample: "
            f"{reason or 'flagged in extra_logs.reward_failed'}"
        )


def _first(values: object) -> object:
    return values[0] if isinstance(values, list) and values else None


def _flagged(values: object) -> bool:
    flag = _first(values)
    # 1.0 (what gradewire sends) or true; 0, false, null, NaN and anything else are no flag.
    return isinstance(flag, (int, float)) and math.isfinite(flag) and flag != 0


_RETRY_ADVICE = {
    429: "the endpoint is rate limiting: lower max_concurrency of grade_many",
}
_REFUSAL_ADVICE = {
    400: "Check that payload= is the shape the endpoint speaks ('gradewire' or 'openrlhf')",
    401: "Check the token (token=, or the variable named by token_env in a grader file)",
    403: (
        "The token has no access to this endpoint: check its permissions (a gradewire server "
        "without a token refuses host names it was not given with --allow-host)"
    ),
    404: (
        "Check the URL: a gradewire reward server takes POST /v1/grade (payload='gradewire') "
        "and POST /get_reward (payload='openrlhf')"
    ),
    413: "The sample is too large for the endpoint: raise its size limit or shorten the sample",
    415: "The endpoint wants another Content-Type: check the headers= given to the grader",
    422: "The endpoint could not read the request: check payload= and the grader it names",
}


def failure_for_status(
    status: int, headers: Mapping[str, str], body: bytes, *, url: str, what: str, attempts: int
) -> RetryableError | ModelHTTPError:
    """What an error answer of a reward endpoint means: worth a retry, or a refusal."""
    return http_failure(
        status,
        headers,
        body,
        what=what,
        url=url,
        attempts=attempts,
        retry_advice=_RETRY_ADVICE,
        refusal_advice=_REFUSAL_ADVICE,
    )


def _remote_grade(raw: object, grader_key: str, url: str) -> Grade:
    if not isinstance(raw, Mapping):
        raise _no_reward({"grade": raw}, url, "'grade' as written by Grade.to_dict()")
    try:
        grade = Grade.from_dict(raw)
    except (InvalidInputError, TypeError) as exc:
        raise ModelHTTPError(
            f"the reward endpoint at {url} answered a 'grade' gradewire cannot read ({exc}); "
            "it should be the output of Grade.to_dict()",
            endpoint=url,
            status=200,
        ) from exc
    return grade.replace(grader_key=grader_key, weight=1.0)


def _finite(value: object, field: str, data: object, url: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number):
            return number
    raise ModelHTTPError(
        f"the reward endpoint at {url} answered {field}={value!r}, not a finite number; "
        f"the answer was {body_snippet(_dump(data))}. Fix the endpoint so it returns a finite "
        "number, or have it report an error or abstention instead",
        endpoint=url,
        status=200,
    )


def _no_reward(data: object, url: str, expected: str) -> ModelHTTPError:
    return ModelHTTPError(
        f"the reward endpoint at {url} answered without a reward: expected {expected}, got "
        f"{body_snippet(_dump(data))}. Check the endpoint and the payload= shape it speaks",
        endpoint=url,
        status=200,
    )


def _dump(data: object) -> bytes:
    try:
        return json.dumps(data, ensure_ascii=False).encode()
    except (TypeError, ValueError):
        return repr(data).encode()
