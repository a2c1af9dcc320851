"""RangeJudgeGrader: an integer score on a criterion, as the judge's expected score when it can."""

from __future__ import annotations

import functools
import logging
import math
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, WithJsonSchema, create_model
from typing_extensions import Unpack

from gradewire.core._errors import InvalidInputError, InvalidTypeError, ModelCallError
from gradewire.core._grade import Grade
from gradewire.judges._judge_base import JudgeGrader
from gradewire.judges._judge_context import JudgedSample
from gradewire.judges._judge_prompts import range_prompt
from gradewire.judges._judge_settings import JudgeSettings
from gradewire.models._chat_model import ChatModel
from gradewire.models._score_logprobs import score_distribution

__all__ = ["RangeJudgeGrader"]

logger = logging.getLogger("gradewire")

# Top alternatives asked for per token: OpenAI and vLLM (by default) accept up to 20.
_MAX_TOP_LOGPROBS = 20


# Ranges up to this many scores are an enum in the schema (OpenAI's strict mode accepts
# enums, not bounds); wider ones get minimum/maximum, which grammar engines honour.
_MAX_ENUM = 101


@functools.lru_cache(maxsize=32)
def _score_schema(low: int, high: int) -> type[BaseModel]:
    def in_range(value: int) -> int:
        if not low <= value <= high:
            raise ValueError(f"the score must be a whole number from {low} to {high}")
        return value

    # The schema names the valid scores, so a server that constrains decoding to it cannot
    # write 9 on a 1-5 scale; the validator still checks servers that do not.
    if high - low + 1 <= _MAX_ENUM:
        shown: dict[str, Any] = {"type": "integer", "enum": list(range(low, high + 1))}
    else:
        shown = {"type": "integer", "minimum": low, "maximum": high}
    schema: type[BaseModel] = create_model(
        "RangeScore",
        reasoning=(str, ...),
        score=(Annotated[int, AfterValidator(in_range), WithJsonSchema(shown)], ...),
    )
    return schema


class RangeJudgeGrader(JudgeGrader):
    """An LLM judge that rates a completion from ``low`` to ``high`` on a criterion.

    The judge answers ``{"reasoning": ..., "score": n}``, reasoning first, so the score is
    decided after the reasoning. The value is the score normalised to [0, 1]:
    ``(s - low) / (high - low)``.

    With ``use_logprobs`` the call asks for token logprobs; when the server returns them,
    ``s`` is the judge's **expected** score: the probabilities of the integers ``low`` to
    ``high`` among the top alternatives of the token that holds the score (found after
    ``"score":`` in the token stream), renormalised over the valid integers found. A judge
    torn between 3 and 4 then scores about 3.5 instead of a coin flip between them, which
    gives a smoother reward. ``info`` keeps ``score`` (the integer written), and, when
    logprobs were used, ``expected_score``, ``distribution`` ({score: probability}) and
    ``probability_mass`` (how much probability the valid integers had before
    renormalising); ``info["source"]`` says ``"logprobs"`` or ``"parsed"``. With a
    ``pass_threshold`` the judge also has a pass rule: a value at or above it passes, and
    ``info["passed"]`` (logged as ``passed``, whose mean is the pass rate) says whether it
    did; eval reports its pass rate, and `gradewire judge align` calibrates it. Without usable
    logprobs (none returned, or the score split over several tokens) the written integer is
    used; a server that refuses the logprobs parameter (an error naming it, a 4xx or a 5xx)
    is asked again without it, and not asked for logprobs again (`OpenAIChatModel`
    remembers that for the endpoint). The schema lists the valid scores as an enum, so a
    server that constrains decoding cannot write one out of range. The written integer is
    also logged as ``judge_score``.

    Example:
        >>> judge = RangeJudgeGrader(
        ...     "clarity", OpenAIChatModel("gpt-4o-mini"),
        ...     "The answer is clear and easy to follow", low=1, high=5,
        ... )
    """

    def __init__(
        self,
        grader_key: str,
        model: ChatModel,
        criteria: str,
        *,
        low: int = 1,
        high: int = 5,
        use_logprobs: bool = True,
        pass_threshold: float | None = None,
        **settings: Unpack[JudgeSettings],
    ) -> None:
        """Set up the judge.

        Args:
            grader_key: The grader's logical name.
            model: The judge `ChatModel`.
            criteria: What is rated, in natural language (a high score meets it fully).
            low: The lowest score (the value 0.0).
            high: The highest score (the value 1.0); greater than ``low``.
            use_logprobs: Ask for logprobs and use the expected score when they come back.
            pass_threshold: The value (on the normalised [0, 1] scale, not the judge's
                ``low``-``high`` one) at or above which a sample passes; None: no pass
                rule. A written score ``s`` is the value ``(s - low) / (high - low)``.
            **settings: The judge's `JudgeSettings`.
        """
        super().__init__(
            grader_key,
            model,
            **settings,
        )
        if not isinstance(criteria, str) or not criteria.strip():
            raise InvalidInputError("criteria must be a non-empty str saying what is rated")
        for name, bound in (("low", low), ("high", high)):
            if isinstance(bound, bool) or not isinstance(bound, int):
                raise InvalidTypeError(f"{name} must be an int, not {bound!r}")
        if low >= high:
            raise InvalidInputError(f"low ({low}) must be smaller than high ({high})")
        if not isinstance(use_logprobs, bool):
            raise InvalidTypeError(f"use_logprobs must be a bool, not {use_logprobs!r}")
        if pass_threshold is not None:
            if isinstance(pass_threshold, bool) or not isinstance(pass_threshold, (int, float)):
                raise InvalidTypeError(
                    f"pass_threshold must be a number or None, not {pass_threshold!r}"
                )
            if not (math.isfinite(pass_threshold) and 0.0 <= pass_threshold <= 1.0):
                raise InvalidInputError(
                    f"pass_threshold is on the judge's value, from 0 to 1, not {pass_threshold!r}: "
                    f"a score s of {low}-{high} is the value (s - {low}) / {high - low}"
                )
            pass_threshold = float(pass_threshold)
        self.criteria = criteria
        self.low = low
        self.high = high
        self.score_range = (0.0, 1.0)  # (s - low) / (high - low)
        self.use_logprobs = use_logprobs
        self.pass_threshold = pass_threshold
        # Learnt from the server: it refused logprobs, so they are no longer asked for.
        self.logprobs_refused = False

    async def judge(self, sample: JudgedSample) -> Grade:
        """One judge call; the expected score from logprobs when there are any."""
        prompt = range_prompt(sample, self.criteria, self.low, self.high)
        # Looked up per call (cached): a class made by create_model cannot be pickled, and
        # graders travel to Ray workers and process pools.
        schema = _score_schema(self.low, self.high)
        top = None
        if self.use_logprobs and not self.logprobs_refused:
            top = min(_MAX_TOP_LOGPROBS, max(5, 2 * (self.high - self.low + 1)))
        try:
            answer, completion = await self.ask(prompt, schema, logprobs=top)
        except ModelCallError as exc:
            if top is None or not _refuses_logprobs(exc):
                raise
            self.logprobs_refused = True
            logger.info(
                "gradewire: %r refused logprobs (%s); %r uses the written score from now on",
                self.model,
                exc,
                self.grader_key,
            )
            answer, completion = await self.ask(prompt, schema)
        written: int = answer.score  # type: ignore[attr-defined]
        reasoning: str = answer.reasoning  # type: ignore[attr-defined]
        info: dict[str, Any] = {"score": written, "source": "parsed"}
        score = float(written)
        if self.use_logprobs and completion.logprobs:
            found = score_distribution(completion.logprobs, written, self.low, self.high)
            if found is not None:
                score = found.expected
                info.update(
                    source="logprobs",
                    expected_score=score,
                    distribution=found.probabilities,
                    probability_mass=found.mass,
                )
        value = min(1.0, max(0.0, (score - self.low) / (self.high - self.low)))
        if self.pass_threshold is not None:
            info["passed"] = value >= self.pass_threshold
        return Grade(value, self.grader_key, reasoning, info=info)

    def log_fields(self, grade: Grade) -> dict[str, Any]:
        """The integer the judge wrote, as ``judge_score``; ``passed`` with a pass rule."""
        fields: dict[str, Any] = {"judge_score": grade.info["score"]}
        if "passed" in grade.info:
            fields["passed"] = grade.info["passed"]
        return fields


def _refuses_logprobs(exc: ModelCallError) -> bool:
    parameter = getattr(exc, "parameter", None)
    if parameter is not None:
        return parameter in ("logprobs", "top_logprobs")
    status = getattr(exc, "status", None)
    if status is None or not (status in (400, 422) or status >= 500):
        return False
    # The server's own words: gradewire's advice on any 400 mentions logprobs too.
    said = getattr(exc, "server_message", None) or ""
    return "logprob" in said.lower()
