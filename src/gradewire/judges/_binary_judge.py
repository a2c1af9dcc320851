"""BinaryJudgeGrader: PASS, FAIL or NA on a natural-language criterion, with few-shot examples."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

from pydantic import BaseModel, BeforeValidator
from typing_extensions import Unpack

from gradewire.core._errors import IgnoreGradeException, InvalidInputError, InvalidTypeError
from gradewire.core._grade import Grade
from gradewire.core._thread import StringThread
from gradewire.judges._judge_base import JudgeGrader, upper_label
from gradewire.judges._judge_context import JudgedSample
from gradewire.judges._judge_prompts import binary_prompt
from gradewire.judges._judge_settings import JudgeSettings
from gradewire.models._chat_model import ChatMessage, ChatModel

__all__ = ["BinaryJudgeGrader", "BinaryJudgeShot", "BinaryVerdict", "JudgeShot"]

_VERDICTS = ("PASS", "FAIL", "NA")


class BinaryVerdict(BaseModel):
    """The binary judge's answer."""

    reasoning: str
    verdict: Annotated[Literal["PASS", "FAIL", "NA"], BeforeValidator(upper_label)]


@dataclass(frozen=True)
class JudgeShot:
    """A worked example shown to a `BinaryJudgeGrader` before the sample it judges.

    Attributes:
        thread_or_question: The user question (a str), or the conversation up to the answer
            (a `StringThread`, which may carry documents and earlier turns).
        completion: The example answer.
        verdict: ``"PASS"``, ``"FAIL"`` or ``"NA"`` (any case).
        reasoning: Why, in the judge's words; shown as the example's reasoning.
        criteria: The criterion the example is judged on, when not the grader's own.

    Example:
        >>> shot = JudgeShot("What is 2+2?", "5", "fail", "2+2 is 4, so the answer is wrong.")
        >>> shot.verdict
        'FAIL'
    """

    thread_or_question: StringThread | str
    completion: str
    verdict: str
    reasoning: str = ""
    criteria: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.thread_or_question, (StringThread, str)):
            raise InvalidTypeError(
                "JudgeShot.thread_or_question must be a str (the question) or a StringThread, "
                f"not {type(self.thread_or_question).__name__}"
            )
        if not isinstance(self.completion, str) or not isinstance(self.reasoning, str):
            raise InvalidTypeError("JudgeShot.completion and .reasoning must be str")
        if self.criteria is not None and not isinstance(self.criteria, str):
            raise InvalidTypeError("JudgeShot.criteria must be a str or None")
        verdict = upper_label(self.verdict)
        if verdict not in _VERDICTS:
            raise InvalidInputError(
                f"JudgeShot.verdict is {self.verdict!r}; use 'PASS', 'FAIL' or 'NA'"
            )
        object.__setattr__(self, "verdict", verdict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeShot:
        """A shot from data (a TOML table, a JSON object).

        Keys: ``thread_or_question`` (or ``question``, or ``thread`` as
        `StringThread.to_dict` writes it), ``completion``, ``verdict``, ``reasoning``.
        """
        if not isinstance(data, Mapping):
            raise InvalidTypeError(f"a shot must be a JudgeShot or a dict, not {data!r}")
        fields = dict(data)
        given = [key for key in ("thread_or_question", "question", "thread") if key in fields]
        if len(given) != 1:
            raise InvalidInputError(
                "a shot dict needs exactly one of 'thread_or_question', 'question' or "
                f"'thread', got {sorted(fields)}"
            )
        source = fields.pop(given[0])
        if isinstance(source, Mapping):
            source = StringThread.from_dict(source)
        unknown = set(fields) - {"completion", "verdict", "reasoning", "criteria"}
        if unknown or not {"completion", "verdict"} <= set(fields):
            raise InvalidInputError(
                "a shot dict takes 'completion', 'verdict' and optionally 'reasoning' next to "
                f"the question; got {sorted(data)}"
            )
        return cls(source, **fields)

    def thread(self) -> StringThread:
        """The example as one thread, ending with its completion."""
        source = self.thread_or_question
        base = StringThread([("user", source)]) if isinstance(source, str) else source
        return base.assistant(self.completion)


_PLACEHOLDER_REASONING = {
    "PASS": "The completion complies with the criteria",
    "FAIL": "The completion does not comply with the criteria",
    "NA": "The criteria is not applicable to the completion",
}


class BinaryJudgeShot(NamedTuple):
    """Adaptive Harmony's shot: a thread ending with the example answer, and its verdict.

    `BinaryJudgeGrader` takes it beside `JudgeShot`. With no ``reasoning`` the example shows
    a stock sentence for its verdict; with no ``criteria`` it is judged on the grader's.

    Example:
        >>> thread = StringThread([("user", "How many masts has a ketch?"), ("assistant", "Two")])
        >>> BinaryJudgeShot(thread, None, "FAIL", "The completion must be in French")
        ... # doctest: +ELLIPSIS
        BinaryJudgeShot(thread=StringThread(...), reasoning=None, score='FAIL', criteria=...)
    """

    thread: StringThread
    reasoning: str | None
    score: Literal["PASS", "FAIL", "NA"]
    criteria: str | None = None

    def to_judge_shot(self) -> JudgeShot:
        """The same example as a `JudgeShot`."""
        if not isinstance(self.thread, StringThread) or not self.thread.turns:
            raise InvalidTypeError("BinaryJudgeShot.thread must be a StringThread with turns")
        last = self.thread.turns[-1]
        if last.role != "assistant":
            raise InvalidInputError(
                "BinaryJudgeShot.thread must end with the assistant's example answer, not a "
                f"{last.role!r} turn"
            )
        verdict = str(upper_label(self.score))
        reasoning = self.reasoning or _PLACEHOLDER_REASONING.get(str(verdict), "")
        question = StringThread(self.thread.turns[:-1], self.thread.metadata)
        return JudgeShot(question, last.content, verdict, reasoning, self.criteria)


class BinaryJudgeGrader(JudgeGrader):
    """An LLM judge that answers PASS, FAIL or NA on a natural-language criterion.

    PASS scores 1.0 and FAIL 0.0; NA (the criterion does not apply to the sample) abstains
    with the judge's reason, counted in ``score/abstained_count``. The judge sees the earlier
    turns (system prompt included), the context documents, the last user question and the
    completion with ``<think>`` blocks removed, each in its own tagged section. Shots are
    shown as earlier exchanges of the judge conversation: the example in the same format as
    the sample, and its verdict as the judge's answer. One judge call per sample (two if the
    first answer needs a repair request).

    Example:
        >>> judge = BinaryJudgeGrader(
        ...     "helpful", OpenAIChatModel("gpt-4o-mini"),
        ...     "The response directly answers the user's question without going off-topic",
        ... )
        >>> grade = await judge.grade(thread)  # doctest: +SKIP
    """

    # Adaptive Harmony's tables: Prompt, Reasoning, Score (and Prompt, Error).
    logs_completion: ClassVar[bool] = False

    def __init__(
        self,
        grader_key: str,
        model: ChatModel,
        criteria: str,
        shots: Iterable[JudgeShot | BinaryJudgeShot | Mapping[str, Any]] | None = None,
        **settings: Unpack[JudgeSettings],
    ) -> None:
        """Set up the judge.

        Args:
            grader_key: The grader's logical name.
            model: The judge `ChatModel`.
            criteria: What a passing completion does, in natural language.
            shots: Worked examples (`JudgeShot` or `BinaryJudgeShot`, or dicts as
                `JudgeShot.from_dict` reads).
            **settings: The judge's `JudgeSettings`.
        """
        super().__init__(
            grader_key,
            model,
            **settings,
        )
        if not isinstance(criteria, str) or not criteria.strip():
            raise InvalidInputError(
                "criteria must be a non-empty str saying what a passing completion does"
            )
        if shots is not None and (
            isinstance(shots, (str, Mapping)) or not isinstance(shots, Iterable)
        ):
            raise InvalidTypeError("shots must be a list of JudgeShot (or shot dicts), or None")
        self.criteria = criteria
        self.shots: tuple[JudgeShot, ...] = tuple(
            shot
            if isinstance(shot, JudgeShot)
            else shot.to_judge_shot()
            if isinstance(shot, BinaryJudgeShot)
            else JudgeShot.from_dict(shot)
            for shot in shots or ()
        )
        self._shot_messages = _shot_messages(self.shots, criteria)

    async def judge(self, sample: JudgedSample) -> Grade:
        """One judge call; PASS is 1.0, FAIL 0.0, NA abstains."""
        answer, _ = await self.ask(
            binary_prompt(sample, self.criteria), BinaryVerdict, shots=self._shot_messages
        )
        if answer.verdict == "NA":
            raise IgnoreGradeException(
                f"the judge found the criterion does not apply (NA): {answer.reasoning}"
            )
        return Grade(
            1.0 if answer.verdict == "PASS" else 0.0,
            self.grader_key,
            answer.reasoning,
            info={"verdict": answer.verdict},
        )


def _shot_messages(shots: Sequence[JudgeShot], criteria: str) -> list[ChatMessage]:
    messages: list[ChatMessage] = []
    for shot in shots:
        example = JudgedSample.of(shot.thread())
        answer = json.dumps({"reasoning": shot.reasoning, "verdict": shot.verdict})
        shown = binary_prompt(example, shot.criteria or criteria)
        messages.append({"role": "user", "content": shown})
        messages.append({"role": "assistant", "content": answer})
    return messages
