"""PairwiseJudgeGrader: which of two completions of the same prompt is better, order swapped."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator
from typing_extensions import Unpack

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._grade import Grade
from gradewire.core._thread import StringThread
from gradewire.judges._judge_base import JudgeGrader, upper_label
from gradewire.judges._judge_context import JudgedSample, strip_thinking
from gradewire.judges._judge_prompts import pairwise_prompt
from gradewire.judges._judge_settings import JudgeSettings
from gradewire.models._chat_model import ChatModel

__all__ = ["OTHER_COMPLETION", "PairwiseJudgeGrader", "PairwiseVerdict", "Winner", "pair"]

OTHER_COMPLETION = "other_completion"
"""The metadata field that carries the completion a sample's own is compared with."""

Winner = Literal["candidate", "other", "tie"]
_VALUES: dict[str, float] = {"candidate": 1.0, "tie": 0.5, "other": 0.0}


class PairwiseVerdict(BaseModel):
    """The pairwise judge's answer: which of the answers shown as A and B is better."""

    reasoning: str
    verdict: Annotated[Literal["A", "B", "TIE"], BeforeValidator(upper_label)]


def pair(thread: StringThread, other: str, *, key: str = OTHER_COMPLETION) -> StringThread:
    """``thread`` (ending with the candidate completion) carrying ``other`` to compare with.

    Example:
        >>> sample = pair(StringThread([("user", "2+2?"), ("assistant", "4")]), "5")
        >>> sample.metadata["other_completion"]
        '5'
    """
    if not isinstance(other, str):
        raise InvalidTypeError(f"the other completion must be a str, not {type(other).__name__}")
    return thread.with_metadata(**{key: other})


class PairwiseJudgeGrader(JudgeGrader):
    """An LLM judge that says which of two completions of the same prompt is better.

    The pair reaches the grader as one sample: the thread ends with the *candidate*
    completion, and ``metadata["other_completion"]`` (``other_key``) holds the completion
    it is compared with (`pair` builds such a sample; a data row with an
    ``other_completion`` field is one). The value is 1.0 when the candidate is better,
    0.0 when the other one is, 0.5 for a tie, so the mean is the candidate's win rate
    with ties counted half.

    Judges favour a position (often the first). The two completions are shown as A and B
    in an order drawn per sample from ``seed`` and the sample's content, so the same
    sample gets the same order on every run, whatever the concurrency, while over many
    samples the candidate is first about half the time. With ``swap=True`` each sample is
    asked in both orders (two calls, in parallel): a verdict that changes with the order
    is a tie and is logged as position-inconsistent.

    Logs per sample, besides what every judge logs: ``win``, ``tie`` and ``loss`` (1 or
    0, so their means are the rates), ``first_shown_won`` (the share of the sample's calls
    whose verdict was the answer shown first; its mean well above the share of decisive
    verdicts over two shows a preference for the first position) and, with ``swap=True``,
    ``position_consistent`` (1 when both orders agreed). ``grade.info`` holds
    ``winner`` (``"candidate"``, ``"other"``, ``"tie"``), ``position_consistent`` (None
    without swap) and ``calls``: each order asked, with the verdict and reasoning.

    Example:
        >>> judge = PairwiseJudgeGrader(
        ...     "preferred", OpenAIChatModel("gpt-4o-mini"), "The more helpful answer", swap=True
        ... )
        >>> grade = await judge.grade(pair(thread, other_answer))  # doctest: +SKIP
    """

    def __init__(
        self,
        grader_key: str,
        model: ChatModel,
        criteria: str,
        *,
        swap: bool = False,
        seed: int = 0,
        other_key: str = OTHER_COMPLETION,
        **settings: Unpack[JudgeSettings],
    ) -> None:
        """Set up the judge.

        Args:
            grader_key: The grader's logical name.
            model: The judge `ChatModel`.
            criteria: What makes one answer better than the other, in natural language.
            swap: Ask every sample in both orders; a verdict that flips is a tie.
            seed: Seed of the per-sample order (the same seed gives the same orders).
            other_key: The metadata field holding the other completion.
            **settings: The judge's `JudgeSettings`.
        """
        super().__init__(grader_key, model, **settings)
        if not isinstance(criteria, str) or not criteria.strip():
            raise InvalidInputError(
                "criteria must be a non-empty str saying what makes one answer better"
            )
        if not isinstance(swap, bool):
            raise InvalidTypeError(f"swap must be True or False, not {swap!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InvalidTypeError(f"seed must be an int, not {seed!r}")
        if not isinstance(other_key, str) or not other_key:
            raise InvalidInputError("other_key must be a non-empty metadata field name")
        self.criteria = criteria
        self.swap = swap
        self.seed = seed
        self.other_key = other_key

    def other(self, sample: JudgedSample) -> str:
        """The completion the sample's own is compared with, ``<think>`` blocks removed."""
        other = sample.thread.metadata.get(self.other_key)
        if not isinstance(other, str):
            found = "nothing" if other is None else f"a {type(other).__name__}"
            raise InvalidInputError(
                f"a pairwise judge compares the sample's completion with the one in "
                f"metadata[{self.other_key!r}] (a str), and found {found}; build the sample "
                "with gradewire.judges.pair(thread, other_completion)"
            )
        return strip_thinking(other)

    def candidate_first(self, sample: JudgedSample, other: str) -> bool:
        """Whether the candidate is shown first: drawn from the seed and the sample."""
        digest = hashlib.sha256()
        for part in (str(self.seed), sample.question or "", sample.completion, other):
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\0")
        return digest.digest()[0] & 1 == 0

    async def judge(self, sample: JudgedSample) -> Grade:
        """One call (two with ``swap``), each order's verdict mapped back to the completions."""
        other = self.other(sample)
        first = self.candidate_first(sample, other)
        orders = (first, not first) if self.swap else (first,)
        answers = await asyncio.gather(*(self.ask_order(sample, other, o) for o in orders))
        winners = [_winner(answer.verdict, o) for answer, o in zip(answers, orders, strict=True)]
        consistent = len(set(winners)) == 1
        winner: Winner = winners[0] if consistent else "tie"
        calls = [
            {
                "candidate_shown": "A" if o else "B",
                "verdict": answer.verdict,
                "winner": w,
                "reasoning": answer.reasoning,
            }
            for answer, o, w in zip(answers, orders, winners, strict=True)
        ]
        reasoning = "\n".join(
            f"candidate as {c['candidate_shown']}: {c['reasoning']}" for c in calls
        )
        if not consistent:
            reasoning += "\nThe verdict changed with the order: a tie (position-inconsistent)."
        return Grade(
            _VALUES[winner],
            self.grader_key,
            reasoning,
            info={
                "winner": winner,
                "position_consistent": consistent if self.swap else None,
                "calls": calls,
            },
        )

    async def ask_order(
        self, sample: JudgedSample, other: str, candidate_first: bool
    ) -> PairwiseVerdict:
        """Ask once, the candidate shown as A (``candidate_first``) or as B."""
        shown = (sample.completion, other) if candidate_first else (other, sample.completion)
        answer, _ = await self.ask(pairwise_prompt(sample, self.criteria, *shown), PairwiseVerdict)
        return answer

    def log_fields(self, grade: Grade) -> dict[str, Any]:
        """``win``/``tie``/``loss``, ``first_shown_won`` and ``position_consistent``."""
        winner = grade.info["winner"]
        calls: Sequence[dict[str, Any]] = grade.info["calls"]
        fields: dict[str, Any] = {
            "win": int(winner == "candidate"),
            "tie": int(winner == "tie"),
            "loss": int(winner == "other"),
            "first_shown_won": sum(c["verdict"] == "A" for c in calls) / len(calls),
        }
        if grade.info["position_consistent"] is not None:
            fields["position_consistent"] = int(grade.info["position_consistent"])
        return fields


def _winner(verdict: str, candidate_first: bool) -> Winner:
    if verdict == "TIE":
        return "tie"
    return "candidate" if (verdict == "A") == candidate_first else "other"
