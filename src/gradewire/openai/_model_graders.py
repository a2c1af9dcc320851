"""score_model and label_model: a judge model given the templated messages of the config."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, create_model

from gradewire.core._errors import InvalidInputError
from gradewire.core._grade import Grade
from gradewire.judges._judge_base import JudgeGrader
from gradewire.judges._judge_context import JudgedSample
from gradewire.models._chat_model import ChatMessage, ChatModel
from gradewire.openai._base import OpenAIGrader
from gradewire.openai._errors import ErrorKind
from gradewire.openai._sample import OpenAISample
from gradewire.openai._template import Template

__all__ = ["LabelModel", "ScoreModel", "message_templates"]

_TEXT_PARTS = ("input_text", "output_text")


class _Step(BaseModel):
    description: str
    conclusion: str


def message_templates(config: Mapping[str, Any], where: str) -> list[tuple[str, Template]]:
    """The config's ``input`` messages as (role, template) pairs; text content only."""
    messages: list[tuple[str, Template]] = []
    for index, message in enumerate(config["input"]):
        at = f"{where}.input[{index}]"
        role = "system" if message["role"] == "developer" else message["role"]
        messages.append((role, Template(_text(message["content"], at), f"{at}.content")))
    return messages


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        if content.get("type") in _TEXT_PARTS:
            return str(content["text"])
        raise InvalidInputError(
            f"{where}.content is a {content.get('type')!r} part; gradewire sends judge models "
            "text only (input_text, output_text, or a string): describe the image or audio "
            "in text, or grade it elsewhere"
        )
    return "".join(_text(part, where) for part in content)


class _ModelGrader(OpenAIGrader, JudgeGrader):
    """What score_model and label_model share: templated messages, sampling params."""

    requires_answer: ClassVar[bool] = False
    error_kinds: ClassVar[tuple[ErrorKind, ...]] = (
        "invalid_variable_error",
        "sample_parse_error",
        "model_grader_parse_error",
        "model_grader_refusal_error",
        "model_grader_server_error",
        "truncated_observation_error",
        "other_error",
    )

    def __init__(
        self,
        grader_key: str,
        config: Mapping[str, Any],
        *,
        where: str,
        model: ChatModel,
        pass_threshold: float | None = None,
    ) -> None:
        params = config.get("sampling_params") or {}
        settings = {
            "temperature": params.get("temperature"),
            "max_tokens": params.get("max_completions_tokens"),
            "sample_tables": True,
        }
        super().__init__(
            grader_key,
            config,
            pass_threshold=pass_threshold,
            model=model,
            **{k: v for k, v in settings.items() if v is not None},
        )
        self.input = message_templates(config, where)

    def rendered(self, judged: JudgedSample) -> list[ChatMessage]:
        """The config's messages, filled in for one sample."""
        seen = OpenAISample(judged.thread)
        return [{"role": role, "content": template.render(seen)} for role, template in self.input]

    def log_fields(self, grade: Grade) -> dict[str, Any]:
        """The pass flag beside the score, when the grader has a pass rule."""
        passed = grade.info.get("passed")
        return {} if passed is None else {"passed": passed}


class ScoreModel(_ModelGrader):
    """OpenAI's ``score_model``: the model answers a number in ``range`` (default [0, 1]).

    The answer is asked for as JSON (``{"steps": [...], "result": <number>}``) in the
    endpoint's structured-output dialect; a number outside the range gets one repair
    request, then is a ``model_grader_parse_error``. The reward is the number as given;
    with ``pass_threshold`` a sample passes at or above it.
    """

    def __init__(
        self, grader_key: str, config: Mapping[str, Any], *, where: str, model: ChatModel
    ) -> None:
        low, high = config.get("range") or (0.0, 1.0)
        super().__init__(
            grader_key,
            config,
            where=where,
            model=model,
            pass_threshold=config.get("pass_threshold"),
        )
        self.range = (float(low), float(high))
        self._answer: type[BaseModel] = create_model(
            "ScoreAnswer",
            steps=(list[_Step], Field(default_factory=list)),
            result=(
                float,
                Field(ge=low, le=high, description=f"the score, from {low:g} to {high:g}"),
            ),
        )

    async def judge(self, sample: JudgedSample) -> Grade:
        """Ask the model for the score."""
        answer, _ = await self.ask_messages(self.rendered(sample), self._answer)
        value = float(answer.result)  # type: ignore[attr-defined]
        reasoning = "; ".join(f"{s.description}: {s.conclusion}" for s in answer.steps)  # type: ignore[attr-defined]
        info: dict[str, Any] = {"type": "score_model", "result": value}
        passed = self.passed(value)
        if passed is not None:
            info["passed"] = passed
        return Grade(value, self.grader_key, reasoning or None, info=info)


class LabelModel(_ModelGrader):
    """OpenAI's ``label_model``: the model picks one of ``labels``; 1.0 when it passes.

    The label is asked for as JSON (``{"steps": [...], "result": <label>}``) restricted to
    the labels; a sample passes (and scores 1.0) when the label is in ``passing_labels``.
    """

    def __init__(
        self, grader_key: str, config: Mapping[str, Any], *, where: str, model: ChatModel
    ) -> None:
        super().__init__(grader_key, config, where=where, model=model)
        self.labels: tuple[str, ...] = tuple(config["labels"])
        self.passing_labels = frozenset(config["passing_labels"])
        choice: Any = Literal.__getitem__(self.labels)
        self._answer: type[BaseModel] = create_model(
            "LabelAnswer",
            steps=(list[_Step], Field(default_factory=list)),
            result=(choice, Field(description="the label, one of " + ", ".join(self.labels))),
        )

    async def judge(self, sample: JudgedSample) -> Grade:
        """Ask the model for the label."""
        answer, _ = await self.ask_messages(self.rendered(sample), self._answer)
        label = str(answer.result)  # type: ignore[attr-defined]
        passed = label in self.passing_labels
        steps: Sequence[_Step] = answer.steps  # type: ignore[attr-defined]
        reasoning = "; ".join(f"{s.description}: {s.conclusion}" for s in steps)
        info = {"type": "label_model", "label": label, "passed": passed}
        return Grade(1.0 if passed else 0.0, self.grader_key, reasoning or label, info=info)
