"""Grader specs: graders declared as data, one pydantic model per type, told apart by ``type``.

Every model forbids unknown fields, so a typo in a grader file is an error that names the
field. `_factory.build_grader` turns a validated spec into a grader.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    ClassVar,
    Literal,
    Union,
    get_args,
    get_type_hints,
)

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from gradewire.core._combined_grader import CombinedGrader
from gradewire.core._grader import BaseGrader
from gradewire.core._settings import check_positive_seconds
from gradewire.judges._binary_judge import BinaryJudgeGrader
from gradewire.judges._judge_base import JudgeGrader
from gradewire.judges._judge_panel import JudgePanel
from gradewire.judges._judge_settings import JudgeSettings
from gradewire.judges._pairwise_judge import PairwiseJudgeGrader
from gradewire.judges._rag_judges import (
    AnswerRelevancyGrader,
    ContextRelevancyGrader,
    FaithfulnessGrader,
)
from gradewire.judges._range_judge import RangeJudgeGrader
from gradewire.judges._rubric_judge import RubricJudgeGrader
from gradewire.models._model_settings import ModelSettings
from gradewire.openai._settings import OpenAIGraderSettings
from gradewire.tools._command_grader import CommandGrader
from gradewire.tools._endpoint_grader import EndpointGrader

__all__ = [
    "SPEC_ALIASES",
    "SPEC_TYPES",
    "BinaryJudgeSpec",
    "CertificateSpec",
    "CombinedSpec",
    "CommandSpec",
    "CustomSpec",
    "ExternalEndpointSpec",
    "GraderFileSpec",
    "GraderSpec",
    "JudgeDefaults",
    "JudgeModelSpec",
    "OpenAIGraderDefaults",
    "PairwiseJudgeSpec",
    "PanelSpec",
    "PrebuiltJudgeSpec",
    "RangeJudgeSpec",
    "RubricItemSpec",
    "RubricJudgeSpec",
    "SpecBase",
    "default_of",
]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _env_name(value: str | None, field: str) -> str | None:
    if value is not None and not _ENV_NAME.match(value):
        raise ValueError(
            f"{field} is the NAME of an environment variable (e.g. 'OPENAI_API_KEY'), not "
            f"{_shown(value)}; export the secret in that variable, never write it in the file"
        )
    return value


def _shown(value: str) -> str:
    # Whatever was put where a variable name belongs may be the secret itself: never echo it.
    return f"a {len(value)}-character value" if len(value) > 8 else repr(value)


def _seconds(value: object, info: ValidationInfo) -> float:
    name = info.field_name or "timeout"
    if isinstance(value, str):
        # Text where a number belongs may be a misplaced secret: never echo it.
        raise ValueError(f"{name} must be a number of seconds, not text")
    # Raises InvalidInputError, a ValueError: pydantic reports it at the field's path.
    return check_positive_seconds(name, value)


Seconds = Annotated[float, BeforeValidator(_seconds)]
"""A spec's time bound, checked as every timeout in gradewire is (`check_positive_seconds`)."""


def _score_range(value: object) -> tuple[float, float]:
    if isinstance(value, str) or not isinstance(value, list | tuple) or len(value) != 2:
        raise ValueError("score_range is two numbers [low, high], e.g. [0, 1]")
    low, high = value
    for end in (low, high):
        if isinstance(end, bool) or not isinstance(end, int | float) or not math.isfinite(end):
            raise ValueError("score_range is two finite numbers [low, high], e.g. [0, 1]")
    if not low < high:
        raise ValueError(f"score_range needs low < high, not [{low}, {high}]")
    return (float(low), float(high))


ScoreRange = Annotated[tuple[float, float], BeforeValidator(_score_range)]
"""A grader's declared score range (`BaseGrader.score_range`), checked: finite, low < high."""


def default_of(builds: Callable[..., object], name: str) -> Any:
    """The default ``builds`` declares for its parameter ``name``: a spec field's default.

    A spec's fields take their defaults from the constructor they are passed to, so each
    default is declared once, in the constructor (tests/specs/test_spec_defaults.py holds
    every spec type to it).
    """
    default = inspect.signature(builds).parameters[name].default
    if default is inspect.Parameter.empty:
        raise TypeError(
            f"{builds.__qualname__}'s {name} has no default to take"
        )  # pragma: no cover
    return default


def _settings_fields(name: str, declared: type) -> type[_Strict]:
    """A spec model with one optional field per key of the `TypedDict` ``declared``.

    The fields keep the declaration's types and bounds, so a grader file is checked as
    the keyword arguments are; None (the default) means the key is not set.
    """
    hints = get_type_hints(declared, include_extras=True)
    fields: dict[str, Any] = {key: (hint, None) for key, hint in hints.items()}
    return create_model(name, __base__=_Strict, **fields)


if TYPE_CHECKING:
    _ModelSettingsFields = _Strict
    _JudgeSettingsFields = _Strict
    OpenAIGraderDefaults = _Strict
else:
    _ModelSettingsFields = _settings_fields("_ModelSettingsFields", ModelSettings)
    _JudgeSettingsFields = _settings_fields("_JudgeSettingsFields", JudgeSettings)
    OpenAIGraderDefaults = _settings_fields("OpenAIGraderDefaults", OpenAIGraderSettings)
    OpenAIGraderDefaults.__doc__ = (
        "The ``[openai]`` table of a grader file: the `OpenAIGraderSettings` of its OpenAI "
        "Evals grader objects (``string_check``, ``score_model``, ...; not the OpenAI chat "
        "wire format, which a judge model speaks)."
    )


class _ModelOptions(_ModelSettingsFields):
    """How to reach and call a judge model (all optional), given to `get_model`.

    Besides the connection, the model's own `gradewire.models.ModelSettings`
    (``temperature``, ``max_tokens``), which a judge's own settings override.
    """

    base_url: str | None = None
    api_key_env: str | None = None
    max_concurrency: int | None = Field(default=None, ge=1)
    timeout: Seconds | None = None
    max_attempts: int | None = Field(default=None, ge=1)
    cache: str | None = None
    json_schema: bool | None = None
    structured_output: (
        Literal["auto", "json_schema", "json_object_schema", "guided_json", "prompt"] | None
    ) = None

    @field_validator("api_key_env")
    @classmethod
    def _check_env(cls, value: str | None) -> str | None:
        return _env_name(value, "api_key_env")


class JudgeModelSpec(_ModelOptions):
    """A judge model: ``"provider/name"`` (a bare name is an OpenAI-compatible server's).

    What `gradewire.models.get_model` builds the judge's model client from.
    """

    model: str = Field(min_length=1)


class JudgeDefaults(_ModelOptions):
    """The ``[judge]`` table of a grader file: defaults for every grader's judge model."""

    model: str | None = Field(default=None, min_length=1)


class SpecBase(_Strict):
    """What every grader spec has: its key, its tables, its timeout, and what code it runs.

    ``builds`` is what the spec's fields are passed to, and ``passed_as`` the parameter a
    field goes to when its name differs: the spec's defaults are that constructor's own
    (`default_of`), so a default is declared once.
    """

    builds: ClassVar[Callable[..., object]] = BaseGrader
    passed_as: ClassVar[Mapping[str, str]] = {}

    key: str = Field(min_length=1)
    # Adaptive's feedback_key, "the feedback key to write scores to": the name the built
    # grader logs under (its grader_key: logs, summaries, trackers); None: the key.
    feedback_key: str | None = Field(default=None, min_length=1)
    # None: the grader class's default (judges keep tables, the others do not).
    sample_tables: bool | None = None
    # BaseGrader.timeout: seconds one grade may take (None: no bound of its own). The command
    # type has its own default; external_endpoint's is each attempt's bound.
    timeout: Seconds | None = None
    # BaseGrader.score_range: the closed range every score lies in, when the author knows it
    # (eval then keeps each mean's interval inside it). None: the grader's own, if any.
    score_range: ScoreRange | None = None

    @property
    def written_as(self) -> str:
        """The name the grader's scores are written under: ``feedback_key``, else ``key``."""
        return self.feedback_key or self.key

    def runs_code(self) -> str | None:
        """What building or grading this spec itself runs as code (None: no code).

        Only this spec's own code: the specs it holds are walked apart (`specs._trust`).
        Every spec type says; one that does not is taken as code, so a new type is
        refused without ``trust_code`` until it says it runs none.
        """
        return f"code of a {type(self).__name__}, which does not say it runs none"


class _NoCode(SpecBase):
    """A spec that runs no code of its own (the specs it holds are walked apart)."""

    def runs_code(self) -> str | None:
        return None


class CertificateSpec(_Strict):
    """A certificate a judge must hold (`gradewire.judges.require_certificate`).

    ``path`` is a certificate file (``gradewire judge certify --out``), relative to the
    grader file's folder; ``min_agreement`` the least lower end of its agreement interval;
    ``on_failure`` what eval, ``gradewire serve`` and the reward adapters do when the judge
    no longer matches it or the bound is not met: ``"warn"`` or ``"refuse"``.
    """

    path: str = Field(min_length=1)
    min_agreement: float | None = Field(default=None, ge=-1.0, le=1.0)
    on_failure: Literal["warn", "refuse"] = "warn"


# What every judge spec has that its constructor does not take as a keyword of its own.
_JUDGE_COMMON = frozenset(
    {
        "type",
        "key",
        "feedback_key",
        "sample_tables",
        "timeout",
        "score_range",
        "judge_model",
        "certificate",
    }
)


class _Judge(_NoCode, _JudgeSettingsFields):
    """A judge: its model, and the `gradewire.judges.JudgeSettings` fields.

    A judge kind is built as ``grader_class()(key, model, **arguments(), **settings)``: its
    own fields go to the constructor parameters of the same name, so a new judge spec needs
    no builder of its own.
    """

    type: str  # each judge spec's Literal
    # A model name or a table; None takes the file's [judge] model.
    judge_model: JudgeModelSpec | None = None
    # A path, or a table {path, min_agreement, on_failure}: the certificate it must hold.
    certificate: CertificateSpec | None = None

    @field_validator("certificate", mode="before")
    @classmethod
    def _certificate_path(cls, value: object) -> object:
        return {"path": value} if isinstance(value, str) else value

    def grader_class(self) -> Callable[..., object]:
        """The judge class this spec builds (``builds``, unless the spec chooses)."""
        return self.builds

    def arguments(self) -> dict[str, Any]:
        """The spec's own fields, as its judge class's constructor takes them."""
        settings = set(JudgeSettings.__annotations__)
        return {
            name: getattr(self, name)
            for name in type(self).model_fields
            if name not in _JUDGE_COMMON and name not in settings
        }

    @field_validator("judge_model", mode="before")
    @classmethod
    def _model_name(cls, value: object) -> object:
        return {"model": value} if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _model_shorthand(cls, data: object) -> object:
        # ``model = "..."`` and ``base_url = "..."`` beside the judge's other fields are
        # short for ``judge_model = {model = "...", base_url = "..."}``.
        if not isinstance(data, dict) or not {"model", "base_url"} & set(data):
            return data
        if data.get("judge_model") is not None:
            raise ValueError(
                "give the judge model once: either judge_model = {model, base_url, ...} or "
                "model = ... (and base_url = ...), not both"
            )
        fields = dict(data)
        model = {name: fields.pop(name) for name in ("model", "base_url") if name in fields}
        if "model" not in model:
            raise ValueError("base_url needs model = ... beside it (or a judge_model table)")
        return {**fields, "judge_model": model}


class BinaryJudgeSpec(_Judge):
    """``binary_judge``: PASS/FAIL against a natural-language criterion (Adaptive's AI judge)."""

    builds: ClassVar[Callable[..., object]] = BinaryJudgeGrader
    type: Literal["binary_judge"]
    criteria: str = Field(min_length=1)
    shots: list[dict[str, Any]] | None = None


_PREBUILT = ("FAITHFULNESS", "CONTEXT_RELEVANCY", "ANSWER_RELEVANCY")
_PREBUILT_CLASSES: dict[str, type[JudgeGrader]] = {
    "FAITHFULNESS": FaithfulnessGrader,
    "CONTEXT_RELEVANCY": ContextRelevancyGrader,
    "ANSWER_RELEVANCY": AnswerRelevancyGrader,
}
PrebuiltName = Literal["FAITHFULNESS", "CONTEXT_RELEVANCY", "ANSWER_RELEVANCY"]


class PrebuiltJudgeSpec(_Judge):
    """``prebuilt_judge``: one of the RAG judges (faithfulness, context/answer relevancy)."""

    builds: ClassVar[Callable[..., object]] = JudgeGrader
    type: Literal["prebuilt_judge"]
    judge: PrebuiltName

    def grader_class(self) -> Callable[..., object]:
        return _PREBUILT_CLASSES[self.judge]

    def arguments(self) -> dict[str, Any]:
        return {}  # ``judge`` chose the class

    @field_validator("judge", mode="before")
    @classmethod
    def _spelling(cls, value: object) -> object:
        # Adaptive writes FAITHFULNESS; "faithfulness", "Answer Relevancy", "context-relevancy"
        # mean the same.
        if isinstance(value, str):
            normal = re.sub(r"[\s\-]+", "_", value.strip()).upper()
            if normal in _PREBUILT:
                return normal
        return value


class RubricItemSpec(_Strict):
    """One rubric criterion as a table: a requirement and its weight (negative: penalty)."""

    requirement: str = Field(min_length=1)
    weight: float = 1.0


class RubricJudgeSpec(_Judge):
    """``rubric_judge``: weighted criteria judged MET/UNMET (`RubricJudgeGrader`)."""

    builds: ClassVar[Callable[..., object]] = RubricJudgeGrader
    type: Literal["rubric_judge"]
    # "requirement", [requirement, weight] or {requirement, weight}; weight < 0 is a penalty.
    criteria: list[str | tuple[str, float] | RubricItemSpec] = Field(min_length=1)

    def arguments(self) -> dict[str, Any]:
        criteria = [
            (item.requirement, item.weight) if isinstance(item, RubricItemSpec) else item
            for item in self.criteria
        ]
        return {"criteria": criteria}


class PairwiseJudgeSpec(_Judge):
    """``pairwise_judge``: which of two completions is better (`PairwiseJudgeGrader`)."""

    builds: ClassVar[Callable[..., object]] = PairwiseJudgeGrader
    type: Literal["pairwise_judge"]
    criteria: str = Field(min_length=1)
    swap: bool = default_of(PairwiseJudgeGrader, "swap")
    seed: int = default_of(PairwiseJudgeGrader, "seed")
    other_key: str = Field(default=default_of(PairwiseJudgeGrader, "other_key"), min_length=1)


class RangeJudgeSpec(_Judge):
    """``range_judge``: a score on an integer scale, from logprobs when the server has them."""

    builds: ClassVar[Callable[..., object]] = RangeJudgeGrader
    type: Literal["range_judge"]
    criteria: str = Field(min_length=1)
    low: int = default_of(RangeJudgeGrader, "low")
    high: int = default_of(RangeJudgeGrader, "high")
    use_logprobs: bool = default_of(RangeJudgeGrader, "use_logprobs")
    # On the judge's normalised value, 0 to 1 (the constructor says why and checks it).
    pass_threshold: float | None = Field(
        default=default_of(RangeJudgeGrader, "pass_threshold"), ge=0.0, le=1.0
    )


class ExternalEndpointSpec(_NoCode):
    """``external_endpoint``: POST each sample to a reward endpoint (`EndpointGrader`)."""

    builds: ClassVar[Callable[..., object]] = EndpointGrader
    passed_as: ClassVar[Mapping[str, str]] = {"timeout": "attempt_timeout"}
    type: Literal["external_endpoint"]
    url: str = Field(min_length=1)
    token_env: str | None = None
    # Each HTTP attempt's limit (EndpointGrader.attempt_timeout; None: its default).
    timeout: Seconds | None = default_of(EndpointGrader, "attempt_timeout")
    max_attempts: int | None = Field(default=default_of(EndpointGrader, "max_attempts"), ge=1)
    payload: Literal["gradewire", "openrlhf"] = default_of(EndpointGrader, "payload")
    remote_grader: str | None = default_of(EndpointGrader, "remote_grader")

    @field_validator("token_env")
    @classmethod
    def _check_env(cls, value: str | None) -> str | None:
        return _env_name(value, "token_env")


class CommandSpec(SpecBase):
    """``command``: run a command, 1.0 when it exits 0 (`CommandGrader`).

    ``type = "bash"``, its name before `CommandGrader` was renamed, is read as ``command``.
    """

    builds: ClassVar[Callable[..., object]] = CommandGrader
    type: Literal["command", "bash"]
    command: str | list[str]
    cwd: str | None = default_of(CommandGrader, "cwd")
    # The grade's bound (CommandGrader.timeout): the command's processes are ended and the
    # sample is a timeout outcome.
    timeout: Seconds = default_of(CommandGrader, "timeout")
    completion_via: Literal["env", "stdin", "file"] = default_of(CommandGrader, "completion_via")

    @field_validator("type")
    @classmethod
    def _canonical(cls, value: str) -> str:
        return SPEC_ALIASES.get(value, value)  # logged and rebuilt as "command"

    def runs_code(self) -> str | None:
        return f"the command {self.command!r}"


class CustomSpec(SpecBase):
    """``custom``: Python code, named ``"package.module:attr"``.

    The attribute is a scoring function of a sample (``factory = false``, the default), a
    `BaseGrader` subclass (built as ``cls(key, **options)``), a factory function returning a
    grader (``factory = true``, called as ``fn(key, **options)``), or a grader instance.
    """

    builds: ClassVar[Callable[..., object]] = BaseGrader.from_function
    type: Literal["custom"]
    function: str
    factory: bool = False
    options: dict[str, Any] = Field(default_factory=dict)
    # Where a sync scoring function runs (BaseGrader.from_function's threads): None
    # measured, true worker threads, false inline (a function that is not thread-safe).
    threads: bool | None = None

    def runs_code(self) -> str | None:
        return f"the Python code {self.function!r}"

    @field_validator("function")
    @classmethod
    def _target(cls, value: str) -> str:
        if not _TARGET.match(value):
            raise ValueError(
                f"{value!r} is not 'package.module:attr'; e.g. 'my_rewards.math:exact_answer'"
            )
        return value


class CombinedSpec(_NoCode):
    """``combined``: sub-graders folded into one reward (`CombinedGrader`)."""

    builds: ClassVar[Callable[..., object]] = CombinedGrader
    type: Literal["combined"]
    graders: list[GraderSpec] = Field(min_length=1)
    weights: list[float] | None = default_of(CombinedGrader, "weights")
    # None: CombinedGrader's default (the weighted mean).
    aggregation: Literal["mean", "sum"] | None = default_of(CombinedGrader, "aggregation")
    # What a failing sub-grader means (see CombinedGrader): by default its error fails the
    # sample, as in Adaptive Harmony.
    on_error: Literal["raise", "skip", "zero", "fail"] = default_of(CombinedGrader, "on_error")


class PanelSpec(_NoCode):
    """``panel``: several judges' verdicts folded into one grade (`JudgePanel`)."""

    builds: ClassVar[Callable[..., object]] = JudgePanel
    type: Literal["panel"]
    judges: list[GraderSpec] = Field(min_length=2)
    aggregate: Literal["majority", "mean", "median", "min", "max"] = default_of(
        JudgePanel, "aggregate"
    )
    # None: a strict majority of the panel.
    quorum: int | None = Field(default=default_of(JudgePanel, "quorum"), ge=1)
    tie_break: Literal["abstain", "low", "high", "mean"] = default_of(JudgePanel, "tie_break")


GraderSpec = Annotated[
    Union[  # noqa: UP007 - pydantic reads the union at runtime on Python 3.10 too
        BinaryJudgeSpec,
        PrebuiltJudgeSpec,
        RubricJudgeSpec,
        RangeJudgeSpec,
        PairwiseJudgeSpec,
        ExternalEndpointSpec,
        CommandSpec,
        CustomSpec,
        CombinedSpec,
        PanelSpec,
    ],
    Field(discriminator="type"),
]
"""Any grader spec; ``type`` says which."""

SPEC_TYPES: dict[str, type[BaseModel]] = {
    get_args(spec.model_fields["type"].annotation)[0]: spec
    for spec in get_args(get_args(GraderSpec)[0])
}
"""Each spec type by its name (the first of its ``type`` literal), read off `GraderSpec`."""

SPEC_ALIASES: dict[str, str] = {"bash": "command"}
"""Old spec type names still read in grader files, and the type each now names."""

CombinedSpec.model_rebuild()
PanelSpec.model_rebuild()


class GraderFileSpec(_Strict):
    """A grader file: optional ``[judge]`` and ``[openai]`` tables and the ``graders`` list.

    OpenAI grader objects in the list are read apart (`gradewire.openai`); ``graders``
    holds the others, and may then be empty.
    """

    judge: JudgeDefaults | None = None
    openai: OpenAIGraderDefaults | None = None
    graders: list[GraderSpec] = Field(default_factory=list)
