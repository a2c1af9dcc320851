"""HUD's result models, `SubScore` and `EvaluationResult`, and their native `Grade` form."""

from __future__ import annotations

import importlib.util
import logging
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from gradewire.core import Grade, GradingError

__all__ = ["EvaluationResult", "SubScore"]

logger = logging.getLogger("gradewire")


def _hud_model(name: str) -> type[BaseModel]:
    """HUD's own model of that name when HUD is installed, else pydantic's BaseModel.

    HUD's task runner forwards a result's every field to the platform only when
    ``isinstance(result, hud.graders.EvaluationResult)``; anything else arrives as
    ``{"score": reward}`` alone. Pydantic models take no virtual subclasses, so where HUD
    is installed the models here derive from HUD's (and redefine every field as HUD
    does, so both places behave alike).
    """
    try:
        found = importlib.util.find_spec("hud.graders.results") is not None
    except ImportError:  # no package named hud
        found = False
    if not found:
        return BaseModel
    try:
        results = importlib.import_module("hud.graders.results")
    except Exception as exc:  # an incompatible HUD: keep the copy standalone
        logger.warning("gradewire.hud: HUD is installed but hud.graders failed to import: %r", exc)
        return BaseModel
    model = getattr(results, name, None)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else BaseModel


if TYPE_CHECKING:
    _SubScoreBase = BaseModel
    _EvaluationResultBase = BaseModel
else:
    _SubScoreBase = _hud_model("SubScore")
    _EvaluationResultBase = _hud_model("EvaluationResult")

_SUMMARY_CONTEXT = "hud_summary"  # HUD's serialisation context key: keep the same name
_REASONING = "reasoning"


class SubScore(_SubScoreBase):
    """One node of a grade breakdown tree, HUD's pydantic model field for field.

    A leaf is one measurement; a parent keeps the subscores it was derived from in
    ``children``. As in HUD: ``value`` must lie in [0, 1] (a pydantic ``ValidationError``
    otherwise), extra fields are refused, ``metadata`` is an alias of ``info`` (in the
    constructor, as a property and as a setter), ``score`` a read-only alias of ``value``,
    fields are assignable without validation, and `to_summary` drops every ``info``.

    `from_grade` and `to_grade` convert to and from the native `gradewire.Grade` tree; a
    grade's ``reasoning`` travels in ``info["reasoning"]``.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., description="Name of this subscore component")
    weight: float = Field(
        default=1.0,
        description="Weight of this subscore (for weighted average). "
        "Negative weights represent penalties.",
    )
    value: float = Field(..., ge=0.0, le=1.0, description="Value of this subscore, 0.0 to 1.0")
    children: list[SubScore] | None = Field(
        default=None,
        description="Input subscores this node was combined from",
    )
    info: dict[str, Any] | None = Field(
        default=None,
        validation_alias=AliasChoices("info", "metadata"),
        description="Grader-specific details recorded on the evaluation span",
    )

    @model_serializer(mode="wrap")
    def _serialize(
        self,
        handler: SerializerFunctionWrapHandler,
        serialization_info: SerializationInfo,
    ) -> dict[str, Any]:
        data = cast("dict[str, Any]", handler(self))
        if (serialization_info.context or {}).get(_SUMMARY_CONTEXT):
            data.pop("info", None)
        return data

    def to_summary(self) -> dict[str, Any]:
        """The score breakdown as JSON data, without the span-only ``info`` of any node."""
        return self.model_dump(mode="json", context={_SUMMARY_CONTEXT: True})

    @property
    def metadata(self) -> dict[str, Any] | None:
        """Alias of ``info``, as in HUD."""
        return self.info

    @metadata.setter
    def metadata(self, value: dict[str, Any] | None) -> None:
        self.info = value

    @property
    def score(self) -> float:
        """Alias of ``value`` (deprecated in HUD; use ``value``)."""
        return self.value

    @classmethod
    def from_grade(cls, grade: Grade) -> SubScore:
        """The subscore of a native grade tree: ``grader_key`` is the name.

        The grade's ``reasoning`` goes to ``info["reasoning"]`` (unless its ``info``
        already has that key); its children become subscores, recursively.

        Raises:
            pydantic.ValidationError: A value is outside [0, 1]: a SubScore is a
                measurement, so an unbounded reward has no SubScore form.
        """
        if not isinstance(grade, Grade):
            raise TypeError(f"from_grade takes a gradewire Grade, not {type(grade).__name__}")
        info: dict[str, Any] = dict(grade.info)
        if grade.reasoning is not None:
            info.setdefault(_REASONING, grade.reasoning)
        return cls(
            name=grade.grader_key,
            weight=grade.weight,
            value=grade.value,
            children=[cls.from_grade(child) for child in grade.children] or None,
            info=info or None,
        )

    def to_grade(self) -> Grade:
        """The native, immutable form of this tree (``info["reasoning"]`` as reasoning)."""
        info = dict(self.info or {})
        reasoning = info.get(_REASONING)
        if isinstance(reasoning, str):
            del info[_REASONING]
        else:
            reasoning = None
        return Grade(
            self.value,
            self.name,
            reasoning,
            weight=self.weight,
            children=[child.to_grade() for child in self.children or ()],
            info=info,
        )


class EvaluationResult(_EvaluationResultBase):
    """What a HUD task's evaluation yields, HUD's pydantic model field for field.

    As in HUD: extra fields are kept (``extra="allow"``), every field is assignable, and
    building one warns (`UserWarning`) when subscore names repeat, when positive weights
    do not sum to about 1, or when ``sum(value * weight)`` differs from ``reward``. HUD's
    task runner sends it to the platform with `model_dump`, so every field arrives.
    """

    reward: float = Field(default=0.0, description="Final score, usually 0.0 to 1.0")
    done: bool = Field(default=True, description="Whether the task/episode is complete")
    content: str | None = Field(default=None, description="Human-readable explanation")
    info: dict[str, Any] = Field(default_factory=dict, description="Additional metadata")
    isError: bool = Field(default=False, description="Whether the evaluation itself failed")
    subscores: list[SubScore] | None = Field(
        default=None,
        description="Optional breakdown of score components for debugging",
    )

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="after")
    def _check_subscores(self) -> EvaluationResult:
        if not self.subscores:
            return self
        names = [s.name for s in self.subscores]
        dupes = [n for n in names if names.count(n) > 1]
        if dupes:
            warnings.warn(f"Duplicate subscore names: {set(dupes)}", stacklevel=2)
        pos_weight_sum = sum(s.weight for s in self.subscores if s.weight > 0)
        if abs(pos_weight_sum - 1.0) > 0.01:
            warnings.warn(
                f"Positive subscore weights should sum to ~1.0 (got {pos_weight_sum:.4f}). "
                f"Weights represent proportional contributions to the reward.",
                stacklevel=2,
            )
        weighted_sum = sum(s.value * s.weight for s in self.subscores)
        if abs(weighted_sum - self.reward) > 0.01:
            warnings.warn(
                f"Subscores don't match reward: "
                f"sum(value*weight)={weighted_sum:.4f} but reward={self.reward:.4f}",
                stacklevel=2,
            )
        return self

    @classmethod
    def from_float(cls, value: float) -> EvaluationResult:
        """A result that is only a reward."""
        return cls(reward=value, done=True)

    @classmethod
    def from_grade(cls, grade: Grade) -> EvaluationResult:
        """The result of a native grade: its value as reward, its children as subscores.

        The reasoning becomes ``content`` and the grade's ``info`` the result's. HUD's
        checks apply: children whose positive weights do not sum to 1 (a weighted mean of
        a `CombinedGrader`, say) make it warn, as a HUD result built so would.
        """
        if not isinstance(grade, Grade):
            raise TypeError(f"from_grade takes a gradewire Grade, not {type(grade).__name__}")
        return cls(
            reward=grade.value,
            content=grade.reasoning,
            info=dict(grade.info),
            subscores=[SubScore.from_grade(child) for child in grade.children] or None,
        )

    def to_grade(self, grader_key: str = "reward") -> Grade:
        """The native grade of this result: reward as value, subscores as children.

        Raises:
            GradingError: The result is marked ``isError``: it has no reward to give, and a
                native grader counts it as an error instead of a 0.0.
        """
        if self.isError:
            raise GradingError(
                f"the evaluation failed (isError): {self.content or 'no content given'}"
            )
        info: Mapping[str, Any] = dict(self.info)
        return Grade(
            self.reward,
            grader_key,
            self.content,
            children=[s.to_grade() for s in self.subscores or ()],
            info=info,
        )
