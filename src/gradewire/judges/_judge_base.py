"""JudgeGrader: what every LLM judge shares (the model call, usage accounting, logging)."""

from __future__ import annotations

import contextlib
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel
from typing_extensions import Unpack

from gradewire.core._errors import InvalidTypeError
from gradewire.core._failure_records import attach_log_fields
from gradewire.core._grade import Grade
from gradewire.core._grader import BaseGrader
from gradewire.core._log_state import LogState
from gradewire.core._thread import StringThread
from gradewire.judges._identity import judge_identity, mark_changed
from gradewire.judges._judge_context import JudgedSample
from gradewire.judges._judge_settings import JudgeSettings, resolve_judge_settings
from gradewire.models._chat_model import ChatCompletion, ChatMessage, ChatModel
from gradewire.models._structured_call import structured_call

__all__ = ["JudgeGrader", "JudgeUsage", "upper_label"]

M = TypeVar("M", bound=BaseModel)


@dataclass
class JudgeUsage:
    """The judge calls one sample needed (repairs and fallbacks included)."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    served: dict[tuple[str | None, str | None], int] = field(default_factory=dict)
    """Who answered: (model, fingerprint) as each answer reported, with how many times."""

    def record(self, completion: ChatCompletion) -> None:
        """Count one answered call."""
        who = (completion.model, completion.fingerprint)
        self.served[who] = self.served.get(who, 0) + 1
        self.calls += 1
        self.cached_calls += completion.cached
        self.prompt_tokens += completion.usage.prompt_tokens
        self.completion_tokens += completion.usage.completion_tokens

    def as_log(self) -> dict[str, int]:
        """The counts under the keys judges log."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "judge_calls": self.calls,
            "cached_calls": self.cached_calls,
        }

    def served_list(self) -> list[dict[str, Any]]:
        """Who answered, as ``grade.info["judge"]["served"]`` records it."""
        return [
            {"model": model, "fingerprint": fingerprint, "answers": answers}
            for (model, fingerprint), answers in self.served.items()
        ]


def upper_label(value: object) -> object:
    """Read ``" pass"`` as ``"PASS"``: models vary the case of a label, not its meaning."""
    return value.strip().upper() if isinstance(value, str) else value


class _CountingModel:
    """A judge's model seen through one sample's `JudgeUsage`.

    `complete_structured` may call several times (a repair, a JSON-schema fallback) and
    returns only the sum; counting here also keeps the calls of a sample that then failed.
    """

    __slots__ = ("_model", "_usage")

    def __init__(self, model: ChatModel, usage: JudgeUsage) -> None:
        self._model = model
        self._usage = usage

    @property
    def json_schema(self) -> bool | None:
        value: bool | None = getattr(self._model, "json_schema", None)
        return value

    @json_schema.setter
    def json_schema(self, value: bool | None) -> None:
        # What complete_structured learns about the server belongs to the real model.
        with contextlib.suppress(AttributeError):
            setattr(self._model, "json_schema", value)  # noqa: B010 - not in the protocol

    def __getattr__(self, name: str) -> Any:
        # What the model says about itself (max_tokens, structured_output_dialect...).
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._model, name)

    async def complete(self, messages: Sequence[ChatMessage], **options: Any) -> ChatCompletion:
        completion = await self._model.complete(messages, **options)
        self._usage.record(completion)
        return completion


# The sample being judged in this context, and its usage, so that `ask` counts every call
# without judges passing the usage around. Tasks started inside `judge()` copy the context,
# so parallel calls land in the same `JudgeUsage`.
_CURRENT: ContextVar[tuple[JudgeGrader, JudgeUsage] | None] = ContextVar(
    "gradewire_judge_sample", default=None
)


class JudgeGrader(BaseGrader):
    r"""The base of the LLM judges: implement `judge`, call the model with `ask`.

    Every sample is logged with ``score``, ``prompt`` (the last user question),
    ``completion`` (the answer as the judge saw it, ``<think>`` blocks removed; not by the
    judges named after Adaptive Harmony's, see `logs_completion`), ``reasoning``
    and what the judge calls cost: ``prompt_tokens``, ``completion_tokens``, ``judge_calls``
    and ``cached_calls``, summed over every call the sample needed (repair requests
    included). A sample that abstained or failed after calling the judge logs its calls too,
    so ``prompt_tokens/mean`` is the mean over samples that called the judge. A cached call
    reports the usage of the call it repeats; ``cached_calls`` says how many were free.

    A judge answer that cannot be parsed even after the repair request
    (`OutputParserException`) and a failed call (`ModelCallError`) propagate from `grade`,
    and an abstention (`IgnoreGradeException`, such as a binary judge's NA) too; each is
    logged first, as Adaptive Harmony's judges do, so it is counted
    (``score/error_count``, ``score/abstained_count``, the unscored sample table) whether
    the sample was judged by `grade`, `grade_many` or a call of the grader, and never
    scored 0.

    Example:
        >>> class Polite(BaseModel):
        ...     reasoning: str
        ...     polite: bool
        >>> class PoliteJudge(JudgeGrader):
        ...     async def judge(self, sample: JudgedSample) -> Grade:
        ...         task = f"Is the answer polite?\n\n{sample.answer_section()}"
        ...         verdict, _ = await self.ask(task, Polite)
        ...         return Grade(float(verdict.polite), self.grader_key, verdict.reasoning)
    """

    requires_answer: ClassVar[bool] = True
    """Whether a sample must hold an assistant turn (the answer judged)."""

    logs_own_failures: ClassVar[bool] = True

    logs_completion: ClassVar[bool] = True
    """Whether the records keep the ``completion`` (a Completion column in the sample
    tables). False for the judges named after Adaptive Harmony's, whose tables are
    Prompt, Reasoning, Score and Prompt, Error, as there."""

    def __init__(
        self, grader_key: str, model: ChatModel, **settings: Unpack[JudgeSettings]
    ) -> None:
        """Set up the judge.

        Args:
            grader_key: The grader's logical name: the metric prefix in dashboards.
            model: Any `ChatModel` (`OpenAIChatModel` for OpenAI-compatible servers).
            **settings: The judge's `JudgeSettings` (temperature, max_tokens, truncation,
                system_prompt, sample_tables), each documented there once.
        """
        resolved = resolve_judge_settings(dict(settings), f"{type(self).__name__}()")
        super().__init__(grader_key, sample_tables=resolved.sample_tables)
        if not isinstance(model, ChatModel):
            raise InvalidTypeError(
                f"model must be a ChatModel (an object with an async complete() method, such "
                f"as OpenAIChatModel), not {type(model).__name__}"
            )
        self.model = model
        self.temperature = resolved.temperature
        self.max_tokens = resolved.max_tokens
        self.truncation = resolved.truncation
        self.system_prompt = resolved.system_prompt

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        mark_changed(self, name)

    @property
    def identity(self) -> str:
        """Everything that decides this judge's verdicts, as one stable string.

        The model (provider, name, its settings, structured-output setting), the prompt as
        sent, the criteria, examples, scale and labels, and the judge's settings; equal for
        equal configurations, different when any of them changes (see `identity_facts`).
        """
        return judge_identity(self)

    @abstractmethod
    async def judge(self, sample: JudgedSample) -> Grade:
        """Judge one sample with `ask` calls; raise `IgnoreGradeException` to abstain."""

    async def grade(self, sample: StringThread) -> Grade:
        """Judge one sample and log it (see the class docstring for what is logged)."""
        if not isinstance(sample, StringThread):
            error = InvalidTypeError(
                f"{type(self).__name__} grades a StringThread, not {type(sample).__name__}"
            )
            self.log_failure(error, sample)
            raise error
        usage = JudgeUsage()
        token = _CURRENT.set((self, usage))
        try:
            judged = JudgedSample.of(sample, require_answer=self.requires_answer)
            grade = await self.judge(judged)
        except Exception as exc:
            # The abstention or error record of this sample shows what it cost too.
            if usage.calls:
                attach_log_fields(exc, usage.as_log())
            # Logged here, as Adaptive Harmony's judges do, so a sample judged by a direct
            # grade() call is counted too (an NA verdict in unscored_samples_count).
            self.log_failure(exc, sample)
            raise
        finally:
            _CURRENT.reset(token)
        if not isinstance(grade, Grade):
            error = InvalidTypeError(
                f"{type(self).__name__}.judge() returned {type(grade).__name__}; return a Grade"
            )
            self.log_failure(error, sample)
            raise error
        # Which judge gave the verdict and which model answered: a results line says both.
        judge = {"identity": self.identity, "served": usage.served_list()}
        grade = grade.replace(
            grader_key=self.grader_key,
            info={**grade.info, "usage": usage.as_log(), "judge": judge},
        )
        self.add_log(
            {
                "score": grade.value,
                "prompt": judged.question or "",
                "completion": judged.completion,
                "reasoning": grade.reasoning or "",
                **self.log_fields(grade),
                **usage.as_log(),
            }
        )
        return grade

    def add_log(self, log: Any) -> None:
        """Record one sample (see `BaseGrader.add_log`).

        Without its ``completion`` when the judge does not log it (`logs_completion`).
        """
        if not self.logs_completion and isinstance(log, Mapping) and "completion" in log:
            log = {key: value for key, value in log.items() if key != "completion"}
        super().add_log(log)

    def _own_log_state(self) -> LogState:
        # Truncated replies are counted on every judge's dashboard, 0 included, so a
        # missing point never reads as "not measured".
        state = super()._own_log_state()
        if state.counts and "score/truncated_count" not in state.counts:
            state = LogState(state.stats, {**state.counts, "score/truncated_count": 0})
        return state

    def log_fields(self, grade: Grade) -> dict[str, Any]:
        """More per-sample fields to log with a scored sample (numbers are aggregated)."""
        return {}

    def messages(self, content: str, *, shots: Sequence[ChatMessage] = ()) -> list[ChatMessage]:
        """The judge conversation: the system message, ``shots``, then ``content``."""
        return [
            {"role": "system", "content": self.system_prompt},
            *shots,
            {"role": "user", "content": content},
        ]

    async def ask(
        self,
        content: str,
        schema: type[M],
        *,
        shots: Sequence[ChatMessage] = (),
        logprobs: int | None = None,
    ) -> tuple[M, ChatCompletion]:
        """Ask the judge model, parse its answer into ``schema`` (one repair on failure).

        Args:
            content: The user message (task, tagged material, answer format).
            schema: The pydantic model of the answer.
            shots: Example exchanges put between the system message and ``content``.
            logprobs: Top alternatives per token to ask for.

        Returns:
            The parsed answer and the last completion (usage summed over the calls).
        """
        return await self.ask_messages(
            self.messages(content, shots=shots), schema, logprobs=logprobs
        )

    async def ask_messages(
        self, messages: Sequence[ChatMessage], schema: type[M], *, logprobs: int | None = None
    ) -> tuple[M, ChatCompletion]:
        """`ask` with the whole conversation given: no system prompt is added.

        For judges whose prompts their users write (OpenAI's model graders).
        """
        current = _CURRENT.get()
        model: ChatModel = self.model
        if current is not None and current[0] is self:
            model = _CountingModel(self.model, current[1])
        return await structured_call(
            model,
            messages,
            schema,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            logprobs=logprobs,
            truncation=self.truncation,
        )
