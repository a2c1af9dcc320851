"""The OpenAI chat completions wire format: request bodies in, `ChatCompletion`s out.

Also decides what an HTTP answer means: a completion, a failure worth retrying
(`RetryableError`) or a refusal that no retry will change (`ModelHTTPError`).
`OpenAIProvider` is this format as a `Provider` of the client core.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from gradewire.core._errors import InvalidTypeError
from gradewire.http._failure import body_snippet
from gradewire.http._failure import failure_for_status as http_failure
from gradewire.http._retry import ModelHTTPError, RetryableError
from gradewire.models._chat_model import ChatCompletion, ChatMessage, TokenLogprob, Usage
from gradewire.models._dialects import OPENAI_DIALECTS, Dialects, apply_dialect
from gradewire.models._negotiation import WirePlan
from gradewire.models._openai_config import (
    DEFAULT_BASE_URL,
    base_url_setting,
    check_public_key,
)
from gradewire.models._provider import Provider
from gradewire.models._response_format import ReadOnlyDict

__all__ = [
    "OpenAIProvider",
    "build_payload",
    "encode_payload",
    "failure_for_status",
    "parse_completion",
]


class OpenAIProvider(Provider):
    """OpenAI's chat completions API, as OpenAI, vLLM, Ollama, llama.cpp and gateways serve it."""

    name: ClassVar[str] = "openai"
    dialects: ClassVar[Dialects] = OPENAI_DIALECTS
    logprobs: ClassVar[bool] = True
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL
    base_url_env: ClassVar[str] = "OPENAI_BASE_URL"
    api_key_env: ClassVar[str] = "OPENAI_API_KEY"
    public_host: ClassVar[str | None] = "api.openai.com"

    def base_url(self, given: str | None) -> str:
        return base_url_setting(given)

    def check_key(self, base_url: str, key: str | None, *, base_url_given: bool) -> None:
        check_public_key(base_url, key, base_url_given=base_url_given)

    def url(self, base_url: str) -> str:
        return f"{base_url}/chat/completions"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def encode(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        plan: WirePlan,
        *,
        temperature: float | None,
        max_tokens: int | None,
        response_format: Mapping[str, Any] | None,
        logprobs: int | None,
        extra_body: Mapping[str, Any] | None,
    ) -> bytes:
        payload = build_payload(
            model,
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            response_format=None,
            logprobs=logprobs if plan.logprobs else None,
            extra_body=extra_body,
            max_tokens_field=plan.max_tokens_field,
        )
        if response_format is not None and plan.dialect is not None:
            apply_dialect(payload, plan.dialect, response_format)
        return encode_payload(payload)

    def decode(self, body: bytes, requested_model: str, *, what: str, url: str) -> ChatCompletion:
        return parse_completion(body, requested_model, what=what, url=url)

    def failure(
        self,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        *,
        what: str,
        url: str,
        attempts: int,
    ) -> RetryableError | ModelHTTPError:
        return failure_for_status(status, headers, body, what=what, url=url, attempts=attempts)


def build_payload(
    model: str,
    messages: Sequence[ChatMessage],
    *,
    temperature: float | None,
    max_tokens: int | None,
    response_format: Mapping[str, Any] | None,
    logprobs: int | None,
    extra_body: Mapping[str, Any] | None,
    max_tokens_field: str = "max_tokens",
) -> dict[str, Any]:
    if isinstance(messages, (str, bytes)):
        raise InvalidTypeError(
            "messages must be a list of {'role': ..., 'content': ...} dicts, not a "
            f"{type(messages).__name__}; wrap a prompt as [{{'role': 'user', 'content': text}}]"
        )
    payload: dict[str, Any] = dict(extra_body) if extra_body else {}
    payload["model"] = model
    payload["messages"] = messages if isinstance(messages, list) else list(messages)
    if temperature is not None:
        payload["temperature"] = temperature
    if max_tokens is not None:
        payload[max_tokens_field] = max_tokens
    if response_format is not None:
        payload["response_format"] = response_format
    if logprobs is not None:
        payload["logprobs"] = True
        payload["top_logprobs"] = logprobs
    return payload


# One encoder for every body: json.dumps with options builds a new one on each call.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
# Read-only values (a response model's strict format) whose encoding is kept.
_MEMO_SIZE = 256
_SPLICED = "response_format"


def encode_payload(payload: Mapping[str, Any]) -> bytes:
    r"""The request body, canonical (sorted keys, no spaces) so that it can key caches.

    Any str can be sent: one holding lone surrogates (a completion cut inside an emoji),
    which UTF-8 cannot encode, is sent with JSON's ``\u`` escapes, as `EndpointGrader` does.
    A read-only ``response_format`` (`ReadOnlyDict`: the same format on every call of a
    judge) is encoded once and spliced in; the body is the same bytes either way.
    """
    shared = payload.get(_SPLICED)
    if isinstance(shared, ReadOnlyDict):
        try:
            return _spliced(payload, _encoded(shared.canonical)).encode()
        except (TypeError, ValueError, UnicodeEncodeError):
            pass  # keys that are not all str, or text UTF-8 cannot hold: the whole way
    try:
        text = _ENCODER.encode(payload)
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(
            f"the chat request cannot be sent as JSON ({exc}); messages, response_format and "
            "extra_body must hold only str, numbers, bools, None, lists and dicts"
        ) from exc
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


def _spliced(payload: Mapping[str, Any], fragment: str) -> str:
    """``payload`` encoded with ``fragment`` as its spliced field's value, keys sorted."""
    before = {key: value for key, value in payload.items() if key < _SPLICED}
    after = {key: value for key, value in payload.items() if key > _SPLICED}
    head = _ENCODER.encode(before)[:-1]
    tail = _ENCODER.encode(after)[1:]
    return "".join(
        (
            head,
            "," if len(head) > 1 else "",
            '"response_format":',
            fragment,
            "," if len(tail) > 1 else "",
            tail,
        )
    )


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _encoded(canonical: str) -> str:
    # The canonical JSON reads back as the same value: encoded here as bodies are.
    return str(_ENCODER.encode(json.loads(canonical)))


def parse_completion(body: bytes, requested_model: str, *, what: str, url: str) -> ChatCompletion:
    """Read a 200 answer; a body that is not a chat completion is worth a retry."""
    try:
        # Decoding first skips json's encoding sniffing, a measurable share of a fast call.
        data = json.loads(body.decode())
        choice = data["choices"][0]
        message = choice["message"]
        content = message.get("content")
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        logprobs = _logprobs(choice.get("logprobs"))
        model = data.get("model") or requested_model
        fingerprint = data.get("system_fingerprint")
        finish_reason = choice.get("finish_reason")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise RetryableError(
            f"HTTP 200 with a body that is not a chat completion ({type(exc).__name__}: "
            f"{exc}; body starts with {body_snippet(body)})",
            advice=(
                f"check that {url} is an OpenAI-compatible chat completions endpoint (base_url "
                "usually ends in /v1) and that nothing between rewrites the answers"
            ),
        ) from exc
    if content is None:
        refusal = message.get("refusal")
        if refusal:
            raise ModelHTTPError(
                f"{what} at {url} refused to answer: {refusal}. Rephrase the judge prompt "
                "or use another model",
                endpoint=url,
                status=200,
                server_message=str(refusal),
            )
        content = ""
    elif isinstance(content, list):  # content parts, as some servers send
        content = "".join(
            str(part.get("text", "")) for part in content if isinstance(part, Mapping)
        )
    return ChatCompletion(
        text=str(content),
        usage=Usage(prompt_tokens, completion_tokens),
        logprobs=logprobs,
        model=str(model),
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        fingerprint=fingerprint if isinstance(fingerprint, str) and fingerprint else None,
    )


def _logprobs(raw: Any) -> tuple[TokenLogprob, ...] | None:
    if not raw:
        return None
    content = raw.get("content")
    if content is None:
        return None
    return tuple(
        TokenLogprob(
            str(item["token"]),
            float(item["logprob"]),
            tuple(
                (str(alt["token"]), float(alt["logprob"])) for alt in item.get("top_logprobs") or ()
            ),
        )
        for item in content
    )


_RETRY_ADVICE = {
    408: "the server timed out the requests: raise attempt_timeout= or lower max_concurrency",
    409: "the server reported conflicts: check its logs",
    429: "the server is rate limiting: lower max_concurrency or check your quota",
}
_REFUSAL_ADVICE = {
    400: (
        "Check the request: the messages, max_tokens, response_format, logprobs and "
        "extra_body this server accepts"
    ),
    401: "Check the API key (api_key= or the OPENAI_API_KEY environment variable)",
    403: "The API key has no access to this model or endpoint: check its permissions",
    404: (
        "Check base_url (the client POSTs to {base_url}/chat/completions, so it usually ends "
        "in /v1) and the model name"
    ),
    413: "The request is too large for the server: shorten the prompt",
    422: "The server could not process the request: check the parameters it accepts",
}


def failure_for_status(
    status: int, headers: Mapping[str, str], body: bytes, *, what: str, url: str, attempts: int
) -> RetryableError | ModelHTTPError:
    """The error an HTTP error answer of a chat completions server stands for."""
    base_url = url.rsplit("/chat/completions", 1)[0]
    return http_failure(
        status,
        headers,
        body,
        what=what,
        url=url,
        attempts=attempts,
        retry_advice=_RETRY_ADVICE,
        refusal_advice={k: v.replace("{base_url}", base_url) for k, v in _REFUSAL_ADVICE.items()},
    )
