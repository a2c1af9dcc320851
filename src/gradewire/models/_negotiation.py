"""Which request fields an endpoint takes: chosen per call, learnt from refusals.

A `WirePlan` says how the next request spells structured output (the dialect), whether it
asks for logprobs, and which field bounds the reply (``max_tokens``, or
``max_completion_tokens`` for servers that refuse the first). A `Negotiator` makes the plans
of one client: with ``structured_output="auto"`` it starts from the strongest dialect and,
when the server refuses a field by name (`ParameterRefusedError`), learns the next one for
the whole endpoint, for every client in the process (and, through the judge cache, in later
processes). Logprobs a server refuses are dropped the same way. An explicit setting is never
changed: its refusal is an error that says what to set.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gradewire.http._endpoint_facts import endpoint_facts, learn_endpoint_facts
from gradewire.http._refusal import ParameterRefusedError
from gradewire.models._dialects import OPENAI_DIALECTS, Dialects

__all__ = [
    "NegotiatedSettings",
    "Negotiator",
    "StructuredOutputRefusedError",
    "WirePlan",
    "stored_facts",
]

logger = logging.getLogger("gradewire")

_LOGPROB_FIELDS = ("top_logprobs", "logprobs")


class StructuredOutputRefusedError(ParameterRefusedError):
    """The endpoint refused a dialect, and the next one needs the prompt to change.

    Raised when "auto" moves to a dialect whose prompt shows an example answer
    (``"guided_json"`` or ``"prompt"``): `complete_structured` catches it and asks again
    with that prompt. The new dialect is remembered for the endpoint, so later calls go
    there directly.
    """


@dataclass(frozen=True)
class WirePlan:
    """How one request is spelt: its dialect (None without a schema), logprobs, token field."""

    dialect: str | None
    logprobs: bool
    max_tokens_field: str = "max_tokens"
    dialects: Dialects = OPENAI_DIALECTS

    def parameters(self) -> tuple[str, ...]:
        """The fields of this request a server may refuse by name, most specific first."""
        names = self.dialects.parameters[self.dialect] if self.dialect else ()
        if self.logprobs:
            names += _LOGPROB_FIELDS
        return (*names, self.max_tokens_field)


class Negotiator:
    """The plans of one client of endpoint ``key`` (see the module docstring)."""

    __slots__ = ("dialects", "key", "setting", "url", "what")

    def __init__(
        self,
        key: str,
        setting: str,
        *,
        what: str,
        url: str,
        dialects: Dialects = OPENAI_DIALECTS,
    ) -> None:
        self.key = key
        self.setting = setting
        self.what = what
        self.url = url
        self.dialects = dialects

    def dialect(self) -> str | None:
        """The dialect the next structured call uses; None while "auto" knows nothing yet."""
        if self.setting != "auto":
            return self.setting
        found = endpoint_facts(self.key).get("structured_output")
        return found if isinstance(found, str) and found in self.dialects.order else None

    def accepted(self, dialect: str) -> bool:
        """Note that the endpoint answered in ``dialect``; True the first time "auto" sees it."""
        if self.setting != "auto" or self.dialect() is not None:
            return False
        learn_endpoint_facts(self.key, {"structured_output": dialect})
        return True

    def plan(self, *, structured: bool, logprobs: bool) -> WirePlan:
        """The plan of the next request."""
        facts = endpoint_facts(self.key)
        dialect = None
        if structured:
            dialect = self.dialect() or self.dialects.order[0]
        field = facts.get("max_tokens_field")
        return WirePlan(
            dialect,
            logprobs and facts.get("logprobs") is not False,
            field if field == "max_completion_tokens" else "max_tokens",
            self.dialects,
        )

    def logprobs_refused(self) -> bool:
        """Whether the endpoint refused logprobs (they are no longer asked for)."""
        return endpoint_facts(self.key).get("logprobs") is False

    def learn(self, plan: WirePlan, refusal: ParameterRefusedError) -> dict[str, Any]:
        """What ``refusal`` teaches; raises it (with advice) when nothing can be changed.

        Returns the facts learnt (to store in the cache). Raises
        `StructuredOutputRefusedError` when every dialect was refused.
        """
        parameter = refusal.parameter
        said = (refusal.server_message or "").lower()
        if plan.dialect is not None and parameter in self.dialects.parameters[plan.dialect]:
            if self.setting != "auto":
                raise self._explicit_refused(refusal)
            following = self.dialects.following(plan.dialect)
            facts = learn_endpoint_facts(self.key, {"structured_output": following})
            logger.warning(
                "gradewire: %s at %s refused %r (structured_output=%r): %s; trying %r, and "
                "remembering it for this endpoint",
                self.what,
                self.url,
                parameter,
                plan.dialect,
                refusal.server_message,
                following,
            )
            if following in self.dialects.prompted:
                raise StructuredOutputRefusedError(
                    str(refusal),
                    endpoint=refusal.endpoint,
                    parameter=parameter,
                    status=refusal.status,
                    server_message=refusal.server_message,
                ) from refusal
            return facts
        if plan.logprobs and parameter in _LOGPROB_FIELDS:
            logger.info(
                "gradewire: %s at %s refused logprobs (%s); asking without them from now on",
                self.what,
                self.url,
                refusal.server_message,
            )
            return learn_endpoint_facts(self.key, {"logprobs": False})
        if parameter == "max_tokens" and "max_completion_tokens" in said:
            return learn_endpoint_facts(self.key, {"max_tokens_field": "max_completion_tokens"})
        raise refusal

    def _explicit_refused(self, refusal: ParameterRefusedError) -> ParameterRefusedError:
        if self.dialects is OPENAI_DIALECTS:
            named = (
                "('json_object_schema' for llama-cpp-python's server, 'guided_json' for vLLM "
                "before 0.12, 'prompt' for a server without structured output)"
            )
        else:
            named = f"({', '.join(repr(d) for d in self.dialects.order)})"
        return ParameterRefusedError(
            f"{refusal}. This server does not take structured_output={self.setting!r}: set "
            f"structured_output='auto' to find the dialect it takes, or name one {named}",
            endpoint=refusal.endpoint,
            parameter=refusal.parameter,
            status=refusal.status,
            server_message=refusal.server_message,
        )


def stored_facts(
    raw: Mapping[str, Any] | None, dialects: Dialects = OPENAI_DIALECTS
) -> dict[str, Any]:
    """The facts a cache file holds, keeping only well-formed ones."""
    if not raw:
        return {}
    facts: dict[str, Any] = {}
    if raw.get("structured_output") in dialects.order:
        facts["structured_output"] = raw["structured_output"]
    if raw.get("logprobs") is False:
        facts["logprobs"] = False
    if raw.get("max_tokens_field") == "max_completion_tokens":
        facts["max_tokens_field"] = "max_completion_tokens"
    return facts


class NegotiatedSettings:
    """The ``structured_output`` settings of a client that has a `Negotiator`."""

    _negotiator: Negotiator

    @property
    def structured_output(self) -> str:
        """The ``structured_output`` setting (``"auto"`` unless one was chosen)."""
        return self._negotiator.setting

    @structured_output.setter
    def structured_output(self, value: str) -> None:
        self._negotiator.setting = self._negotiator.dialects.setting(value)

    @property
    def structured_output_dialect(self) -> str | None:
        """The dialect the next structured call uses: the setting, or what "auto" learnt.

        None while "auto" has not called the endpoint yet (it starts with ``"json_schema"``).
        """
        return self._negotiator.dialect()
