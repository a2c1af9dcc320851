"""Grader specs: graders declared as data, one pydantic model per type, told apart by ``type``.

Every model forbids unknown fields, so a typo in a grader file is an error that names the
field. `_factory.build_grader` turns a validated spec into a grader.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from gradewire.judges._judge_settings import JudgeSettings
from gradewire.models._model_settings import ModelSettings
from gradewire.openai._settings import OpenAIGraderSettings

__all__ = [
    "SPEC_TYPES",
    "BashSpec",
    "BinaryJudgeSpec",
    "CombinedSpec",
    "CustomSpec",
    "ExternalEndpointSpec",
    "GraderFileSpec",
    "GraderSpec",
    "JudgeDefaults",
    "JudgeModelSpec",
    "OpenAIDefaults",
    "PairwiseJudgeSpec",
    "PanelSpec",
    "PrebuiltJudgeSpec",
    "RangeJudgeSpec",
    "RubricItemSpec",
    "RubricJudgeSpec",
    "SpecBase",
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
    OpenAIDefaults = _Strict
else:
    _ModelSettingsFields = _settings_fields("_ModelSettingsFields", ModelSettings)
    _JudgeSettingsFields = _settings_fields("_JudgeSettingsFields", JudgeSettings)
    OpenAIDefaults = _settings_fields("OpenAIDefaults", OpenAIGraderSettings)
    OpenAIDefaults.__doc__ = (
        "The ``[openai]`` table of a grader file: the `OpenAIGraderSettings` of its OpenAI "
        "grader objects."
    )


class _ModelOptions(_ModelSettingsFields):
    """How to reach and call an OpenAI-compatible judge model (all optional).

    Besides the connection, the model's own `gradewire.models.ModelSettings`
    (``temperature``, ``max_tokens``), which a judge's own settings override.
    """

    base_url: str | None = None
    api_key_env: str | None = None
    max_concurrency: int | None = Field(default=None, ge=1)
    timeout: float | None = Field(default=None, gt=0)
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
    """An OpenAI-compatible judge model: what `OpenAIChatModel` is built from."""

    model: str = Field(min_length=1)


class JudgeDefaults(_ModelOptions):
    """The ``[judge]`` table of a grader file: defaults for every grader's judge model."""

    model: str | None = Field(default=None, min_length=1)


class SpecBase(_Strict):
    """What every grader spec has: its key, its tables, its timeout, and what code it runs."""

    key: str = Field(min_length=1)
    # Adaptive's feedback_key, "the feedback key to write scores to": the name the built
    # grader logs under (its grader_key: logs, summaries, trackers); None: the key.
    feedback_key: str | None = Field(default=None, min_length=1)
    # None: the grader class's default (judges keep tables, the others do not).
    sample_tables: bool | None = None
    # BaseGrader.timeout: seconds one grade may take (None: no bound of its own). The bash
    # type has its own default; external_endpoint's is each attempt's bound.
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)

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


class _Judge(_NoCode, _JudgeSettingsFields):
    """A judge: its model, and the `gradewire.judges.JudgeSettings` fields."""

    # A model name or a table; None takes the file's [judge] model.
    judge_model: JudgeModelSpec | None = None

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

    type: Literal["binary_judge"]
    criteria: str = Field(min_length=1)
    shots: list[dict[str, Any]] | None = None


_PREBUILT = ("FAITHFULNESS", "CONTEXT_RELEVANCY", "ANSWER_RELEVANCY")
PrebuiltName = Literal["FAITHFULNESS", "CONTEXT_RELEVANCY", "ANSWER_RELEVANCY"]


class PrebuiltJudgeSpec(_Judge):
    """``prebuilt_judge``: one of the RAG judges (faithfulness, context/answer relevancy)."""

    type: Literal["prebuilt_judge"]
    judge: PrebuiltName

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

    type: Literal["rubric_judge"]
    # "requirement", [requirement, weight] or {requirement, weight}; weight < 0 is a penalty.
    criteria: list[str | tuple[str, float] | RubricItemSpec] = Field(min_length=1)


class PairwiseJudgeSpec(_Judge):
    """``pairwise_judge``: which of two completions is better (`PairwiseJudgeGrader`)."""

    type: Literal["pairwise_judge"]
    criteria: str = Field(min_length=1)
    swap: bool = False
    seed: int = 0
    other_key: str = Field(default="other_completion", min_length=1)


class RangeJudgeSpec(_Judge):
    """``range_judge``: a score on an integer scale, from logprobs when the server has them."""

    type: Literal["range_judge"]
    criteria: str = Field(min_length=1)
    low: int = 1
    high: int = 5
    use_logprobs: bool = True


class ExternalEndpointSpec(_NoCode):
    """``external_endpoint``: POST each sample to a reward endpoint (`EndpointGrader`)."""

    type: Literal["external_endpoint"]
    url: str = Field(min_length=1)
    token_env: str | None = None
    # Each HTTP attempt's limit (EndpointGrader.attempt_timeout).
    timeout: float = Field(default=30.0, gt=0, allow_inf_nan=False)
    max_attempts: int | None = Field(default=None, ge=1)
    payload: Literal["gradewire", "openrlhf"] = "gradewire"
    remote_grader: str | None = None

    @field_validator("token_env")
    @classmethod
    def _check_env(cls, value: str | None) -> str | None:
        return _env_name(value, "token_env")


class BashSpec(SpecBase):
    """``bash``: run a command, 1.0 when it exits 0 (`CommandGrader`)."""

    type: Literal["bash"]
    command: str | list[str]
    cwd: str | None = None
    # The grade's bound (CommandGrader.timeout): the command's processes are ended and the
    # sample is a timeout outcome.
    timeout: float = Field(default=600.0, gt=0, allow_inf_nan=False)
    completion_via: Literal["env", "stdin", "file"] = "env"

    def runs_code(self) -> str | None:
        return f"the command {self.command!r}"


class CustomSpec(SpecBase):
    """``custom``: Python code, named ``"package.module:attr"``.

    The attribute is a scoring function of a sample (``factory = false``, the default), a
    `BaseGrader` subclass (built as ``cls(key, **options)``), a factory function returning a
    grader (``factory = true``, called as ``fn(key, **options)``), or a grader instance.
    """

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

    type: Literal["combined"]
    graders: list[GraderSpec] = Field(min_length=1)
    weights: list[float] | None = None
    aggregation: Literal["mean", "sum"] = "mean"
    # What a failing sub-grader means (see CombinedGrader): by default its error fails the
    # sample, as in Adaptive Harmony.
    on_error: Literal["raise", "skip", "zero", "fail"] = "raise"


class PanelSpec(_NoCode):
    """``panel``: several judges' verdicts folded into one grade (`JudgePanel`)."""

    type: Literal["panel"]
    judges: list[GraderSpec] = Field(min_length=2)
    aggregate: Literal["majority", "mean", "median", "min", "max"] = "majority"
    # None: a strict majority of the panel.
    quorum: int | None = Field(default=None, ge=1)
    tie_break: Literal["abstain", "low", "high", "mean"] = "abstain"


GraderSpec = Annotated[
    Union[  # noqa: UP007 - pydantic reads the union at runtime on Python 3.10 too
        BinaryJudgeSpec,
        PrebuiltJudgeSpec,
        RubricJudgeSpec,
        RangeJudgeSpec,
        PairwiseJudgeSpec,
        ExternalEndpointSpec,
        BashSpec,
        CustomSpec,
        CombinedSpec,
        PanelSpec,
    ],
    Field(discriminator="type"),
]
"""Any grader spec; ``type`` says which."""

SPEC_TYPES: dict[str, type[BaseModel]] = {
    "binary_judge": BinaryJudgeSpec,
    "prebuilt_judge": PrebuiltJudgeSpec,
    "rubric_judge": RubricJudgeSpec,
    "range_judge": RangeJudgeSpec,
    "pairwise_judge": PairwiseJudgeSpec,
    "external_endpoint": ExternalEndpointSpec,
    "bash": BashSpec,
    "custom": CustomSpec,
    "combined": CombinedSpec,
    "panel": PanelSpec,
}

CombinedSpec.model_rebuild()
PanelSpec.model_rebuild()


class GraderFileSpec(_Strict):
    """A grader file: optional ``[judge]`` and ``[openai]`` tables and the ``graders`` list.

    OpenAI grader objects in the list are read apart (`gradewire.openai`); ``graders``
    holds the others, and may then be empty.
    """

    judge: JudgeDefaults | None = None
    openai: OpenAIDefaults | None = None
    graders: list[GraderSpec] = Field(default_factory=list)
