"""RubricJudgeGrader: a weighted rubric, each criterion judged MET/UNMET in parallel."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator
from typing_extensions import Unpack

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._gather import gather_all
from gradewire.core._grade import Grade
from gradewire.judges._judge_base import JudgeGrader, upper_label
from gradewire.judges._judge_context import JudgedSample
from gradewire.judges._judge_prompts import rubric_prompt
from gradewire.judges._judge_settings import JudgeSettings
from gradewire.models._chat_model import ChatModel

__all__ = ["Criterion", "RubricCriterion", "RubricJudgeGrader", "RubricVerdict", "rubric_value"]

Criterion = Union[str, Sequence[Any], Mapping[str, Any]]  # noqa: UP007 - a runtime alias
"""A rubric item: ``"requirement"``, ``("requirement", weight)`` or
``{"requirement": ..., "weight": ...}``."""


class RubricVerdict(BaseModel):
    """The judge's answer on one criterion."""

    reasoning: str
    verdict: Annotated[Literal["MET", "UNMET"], BeforeValidator(upper_label)]


@dataclass(frozen=True)
class RubricCriterion:
    """One checked criterion: a requirement and its weight (negative: a mistake to avoid)."""

    requirement: str
    weight: float = 1.0


def rubric_value(criteria: Sequence[RubricCriterion], values: Sequence[float]) -> float:
    """The rubric's score: the weighted pass-fraction, penalties subtracted, in [0, 1].

    ``(sum(value * weight for positive weights) - sum(|weight| * value for negative
    weights)) / sum(positive weights)``, clamped to [0, 1]. On a negative-weight criterion
    value 1.0 means the mistake is present, so it takes off ``|weight|`` / the positive total.
    """
    positive = sum(c.weight for c in criteria if c.weight > 0)
    earned = sum(v * c.weight for c, v in zip(criteria, values, strict=True) if c.weight > 0)
    penalty = sum(v * -c.weight for c, v in zip(criteria, values, strict=True) if c.weight < 0)
    return min(1.0, max(0.0, (earned - penalty) / positive))


class RubricJudgeGrader(JudgeGrader):
    """An LLM judge that checks a rubric: weighted criteria, each MET or UNMET.

    HUD's ``LLMJudgeGrader`` as a native judge (HUD's class-method form is
    `gradewire.hud.LLMJudgeGrader`).

    Each criterion gets its own judge call; the calls of one sample run concurrently. A
    criterion with a negative weight is a mistake to avoid: the judge is asked whether "the
    answer makes this mistake: ...", and MET means the mistake is present.

    The score is the weighted pass-fraction with penalties subtracted, clamped to [0, 1]:
    ``(sum(value * weight) over positive weights - sum(value * |weight|) over negative
    weights) / sum(positive weights)``. (HUD's page says "the weighted pass-fraction:
    sum(value * weight) over the positive weights, clamped to 0-1", and that a negative
    weight "scores as a penalty"; this is that, with the penalty normalised by the same
    positive total.) E.g. criteria ``["Correct", ("Cites a source", 2.0), ("Rude", -1.0)]``
    with the first two met and no rudeness score (1 + 2) / 3 = 1.0; if it was also rude,
    (3 - 1) / 3 = 0.667.

    The Grade has one child `Grade` per criterion, in order: ``name`` is the
    requirement, ``value`` 1.0 for MET and 0.0 for UNMET (1.0 on a penalty means the
    mistake is made), ``weight`` the criterion's weight, ``info["reason"]`` the judge's
    justification and ``info["verdict"]`` its verdict. If any criterion's call fails, the
    sample fails (the other calls are cancelled): a rubric is never scored on a subset.

    Example:
        >>> judge = RubricJudgeGrader(
        ...     "rubric", OpenAIChatModel("gpt-4o-mini"),
        ...     ["Correct", ("Well-reasoned", 2.0), ("Invents a citation", -1.0)],
        ... )
    """

    def __init__(
        self,
        grader_key: str,
        model: ChatModel,
        criteria: str | Iterable[Criterion],
        **settings: Unpack[JudgeSettings],
    ) -> None:
        """Set up the judge.

        Args:
            grader_key: The grader's logical name.
            model: The judge `ChatModel`.
            criteria: Requirements as strings (weight 1.0), ``(requirement, weight)`` pairs
                (lists from JSON or TOML too) or ``{"requirement", "weight"}`` dicts; weights
                finite and non-zero, at least one positive. A single str is one criterion.
            **settings: The judge's `JudgeSettings`.
        """
        super().__init__(
            grader_key,
            model,
            **settings,
        )
        self.criteria = parse_criteria(criteria)

    async def judge(self, sample: JudgedSample) -> Grade:
        """One call per criterion, concurrently; the weighted score with its children."""
        verdicts = await gather_all(
            self.ask(rubric_prompt(sample, c.requirement, mistake=c.weight < 0), RubricVerdict)
            for c in self.criteria
        )
        values = [1.0 if answer.verdict == "MET" else 0.0 for answer, _ in verdicts]
        children = [
            Grade(
                value,
                c.requirement,
                answer.reasoning,
                weight=c.weight,
                info={"reason": answer.reasoning, "verdict": answer.verdict},
            )
            for c, value, (answer, _) in zip(self.criteria, values, verdicts, strict=True)
        ]
        lines = [
            f"[{answer.verdict}{' (penalty)' if c.weight < 0 else ''}] {c.requirement}: "
            f"{answer.reasoning}"
            for c, (answer, _) in zip(self.criteria, verdicts, strict=True)
        ]
        return Grade(
            rubric_value(self.criteria, values),
            self.grader_key,
            "\n".join(lines),
            children=children,
        )


def parse_criteria(criteria: str | Iterable[Criterion]) -> tuple[RubricCriterion, ...]:
    """Check and normalise rubric criteria (see `RubricJudgeGrader`)."""
    if isinstance(criteria, str):
        criteria = [criteria]
    if isinstance(criteria, Mapping) or not isinstance(criteria, Iterable):
        raise InvalidTypeError(
            'criteria must be a list such as ["Correct", ("Well-reasoned", 2.0)], not '
            f"{type(criteria).__name__}"
        )
    parsed = tuple(_criterion(index, item) for index, item in enumerate(criteria))
    if not parsed:
        raise InvalidInputError("criteria is empty; give at least one requirement to check")
    if not any(c.weight > 0 for c in parsed):
        raise InvalidInputError(
            "every criterion has a negative weight (a penalty); give at least one positive "
            "weight, since the score is the pass-fraction of the positive weights"
        )
    return parsed


def _criterion(index: int, item: object) -> RubricCriterion:
    weight: object = 1.0
    if isinstance(item, RubricCriterion):
        requirement, weight = item.requirement, item.weight
    elif isinstance(item, str):
        requirement = item
    elif isinstance(item, Mapping):
        if "requirement" not in item or set(item) - {"requirement", "weight"}:
            raise InvalidInputError(
                f"criterion {index} is {dict(item)!r}; a dict criterion has 'requirement' and "
                "optionally 'weight'"
            )
        requirement, weight = item["requirement"], item.get("weight", 1.0)
    elif isinstance(item, Sequence) and len(item) == 2:
        requirement, weight = item
    else:
        raise InvalidTypeError(
            f"criterion {index} is {item!r}; use a str or a (requirement, weight) pair"
        )
    if not isinstance(requirement, str) or not requirement.strip():
        raise InvalidInputError(f"criterion {index} needs a non-empty requirement str")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise InvalidTypeError(f"criterion {index} ({requirement!r}) has weight {weight!r}")
    if not math.isfinite(weight) or weight == 0:
        raise InvalidInputError(
            f"criterion {index} ({requirement!r}) has weight {weight}; weights must be finite "
            "and non-zero (negative for a mistake to avoid); drop a criterion to ignore it"
        )
    return RubricCriterion(requirement.strip(), float(weight))
