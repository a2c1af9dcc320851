"""OpenAI grader configs: validated with the ``openai`` package's own types, built into graders.

A config is checked by the type the ``openai`` package generates for it
(``openai.types.graders``), so a config OpenAI accepted is accepted here and a wrong one
fails naming the field. Unknown fields are refused too (OpenAI's API refuses them; the
generated types let them pass), with Evals' ``pass_threshold`` known where Evals has it.
One documented difference: the guide's ``multi`` takes ``graders`` as a mapping of names to
graders, where the generated ``MultiGrader`` has a single grader; both are taken.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gradewire.core._errors import InvalidInputError, InvalidTypeError, MissingDependencyError
from gradewire.models._chat_model import ChatModel
from gradewire.openai._base import OpenAIGrader
from gradewire.openai._settings import (
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_PYTHON_TIMEOUT,
    OpenAIGraderSettings,
)

__all__ = [
    "OPENAI_CODE_TYPES",
    "OPENAI_GRADER_TYPES",
    "Connection",
    "build",
    "is_openai_config",
    "validate",
]

OPENAI_GRADER_TYPES = (
    "string_check",
    "text_similarity",
    "score_model",
    "label_model",
    "python",
    "multi",
)
"""The ``type`` of each OpenAI grader object."""

OPENAI_CODE_TYPES: dict[str, str | None] = {
    "string_check": None,
    "text_similarity": None,
    "score_model": None,
    "label_model": None,
    "python": "the Python source of its 'source' field",
    "multi": None,  # its graders are walked apart
}
"""What each OpenAI grader type runs as code itself (None: none); `specs` refuses code
untrusted, and takes a type missing here for code."""

# Evals' testing criteria add pass_threshold to these types (text_similarity requires it
# there; RFT graders have none).
_PASS_THRESHOLD = ("text_similarity", "score_model", "python")
_OPENAI_TYPES = {
    "string_check": "StringCheckGrader",
    "text_similarity": "TextSimilarityGrader",
    "score_model": "ScoreModelGrader",
    "label_model": "LabelModelGrader",
    "python": "PythonGrader",
}


def is_openai_config(obj: object) -> bool:
    """Whether ``obj`` is an OpenAI grader object (its ``type`` is one of OpenAI's)."""
    return isinstance(obj, Mapping) and obj.get("type") in OPENAI_GRADER_TYPES


@dataclass
class Connection:
    """How the graders of one config reach their models.

    Attributes:
        model: A `ChatModel` every model grader uses; None builds one per served model with
            `get_model` (an OpenAI-compatible server's, unless the served name names its
            provider: ``"anthropic/claude-haiku-4-5"``).
        base_url: The API root of the chat and embeddings endpoints (None: the client's
            default, ``OPENAI_BASE_URL`` or OpenAI's).
        api_key: The API key, or None.
        model_options: More `get_model` keywords (attempt_timeout, cache, ...).
        settings: The `OpenAIGraderSettings`.
    """

    model: ChatModel | None = None
    base_url: str | None = None
    api_key: str | None = None
    model_options: dict[str, Any] = field(default_factory=dict)
    settings: OpenAIGraderSettings = field(default_factory=lambda: OpenAIGraderSettings())
    _models: dict[tuple[str, str], ChatModel] = field(default_factory=dict)
    _embeddings: Any = None

    def chat_model(self, name: str, extra: Mapping[str, Any], where: str) -> ChatModel:
        """The model a model grader of config model ``name`` calls."""
        if self.model is not None:
            if extra:
                raise InvalidInputError(
                    f"{where}.sampling_params sets {', '.join(sorted(extra))}, which only the "
                    "grader's own client can send: pass base_url= (and api_key=) instead of "
                    "model=, or set them in your model's extra_body"
                )
            return self.model
        from gradewire.models._get_model import get_model, qualified_model_name

        mapped = self.settings.get("served_models") or {}
        served = self.settings.get("served_model") or mapped.get(name, name)
        key = (served, repr(sorted(extra.items())))
        model = self._models.get(key)
        if model is None:
            model = self._models[key] = get_model(
                qualified_model_name(served),
                base_url=self.base_url,
                api_key=self.api_key,
                extra_body=dict(extra) or None,
                **self.model_options,
            )
        return model

    def embeddings(self) -> Any:
        """The embeddings client of ``cosine`` (one per connection)."""
        if self._embeddings is None:
            from gradewire.openai._embeddings import EmbeddingsClient

            options = {
                k: v for k, v in self.model_options.items() if k in ("attempt_timeout", "timeout")
            }
            self._embeddings = EmbeddingsClient(
                self.settings.get("embedding_model") or DEFAULT_EMBEDDING_MODEL,
                base_url=self.base_url,
                api_key=self.api_key,
                **options,
            )
        return self._embeddings


def build(config: object, connection: Connection, *, key: str | None = None) -> OpenAIGrader:
    """The grader of one OpenAI grader object (validated first).

    Args:
        config: The grader object.
        connection: How model graders reach their models.
        key: The grader's key (a multi grader's name for it); None takes its ``name``.
    """
    checked = validate(config, "grader")
    return _build(checked, connection, key or checked["name"], f"grader {checked['name']!r}")


def validate(config: object, where: str) -> dict[str, Any]:
    """``config`` checked against the ``openai`` package's type; returns it as plain data."""
    if not isinstance(config, Mapping):
        raise InvalidTypeError(
            f"{where}: an OpenAI grader config is a dict with a 'type', not {type(config).__name__}"
        )
    kind = config.get("type")
    if kind not in OPENAI_GRADER_TYPES:
        raise InvalidInputError(
            f"{where}: unknown OpenAI grader type {kind!r}; use one of "
            f"{', '.join(OPENAI_GRADER_TYPES)}"
        )
    name = config.get("name")
    label = f"{where} ({kind})" if not isinstance(name, str) else f"grader {name!r} ({kind})"
    if kind == "multi":
        return _validate_multi(config, label)
    model = _openai_type(str(kind))
    allowed = set(model.model_fields) | ({"pass_threshold"} if kind in _PASS_THRESHOLD else set())
    _refuse_unknown(config, allowed, label)
    from pydantic import ValidationError

    try:
        model.model_validate(dict(config))
    except ValidationError as exc:
        raise _field_error(exc, label) from None
    checked = dict(config)
    _check_values(checked, label)
    return checked


def _openai_type(kind: str) -> Any:
    try:
        import openai.types.graders as graders
    except ImportError:
        raise MissingDependencyError(
            "openai", extra="openai", purpose="validate OpenAI grader configs"
        ) from None
    return getattr(graders, _OPENAI_TYPES[kind])


def _refuse_unknown(config: Mapping[str, Any], allowed: set[str], label: str) -> None:
    for name in config:
        if name not in allowed:
            close = difflib.get_close_matches(str(name), sorted(allowed), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InvalidInputError(
                f"{label}: unknown field {name!r}{hint}; it takes: {', '.join(sorted(allowed))}"
            )


def _field_error(exc: Any, label: str) -> InvalidInputError:
    problems: dict[str, str] = {}
    for error in exc.errors():
        path = ""
        for part in error["loc"]:
            if isinstance(part, int):
                path += f"[{part}]"
            elif part[:1].isupper() or part in ("str", "list", "float", "int"):
                break  # the union member pydantic tried, not a field
            else:
                path = f"{path}.{part}" if path else str(part)
        if error["type"] == "missing":
            problems.setdefault(path, "is required")
        else:
            problems.setdefault(path, str(error["msg"]))
    listed = "; ".join(
        f"field {path!r} {msg}" if msg == "is required" else f"field {path!r}: {msg}"
        for path, msg in problems.items()
    )
    return InvalidInputError(f"{label} is not a valid OpenAI grader: {listed}")


def _check_values(config: dict[str, Any], label: str) -> None:
    name = config["name"]
    if not name.strip():
        raise InvalidInputError(f"{label}: field 'name' must not be empty; it keys the logs")
    threshold = config.get("pass_threshold")
    if threshold is not None and not math.isfinite(float(threshold)):
        raise InvalidInputError(f"{label}: field 'pass_threshold' must be a finite number")
    if config["type"] == "score_model" and config.get("range") is not None:
        bounds = config["range"]
        if len(bounds) != 2 or not all(math.isfinite(b) for b in bounds) or bounds[0] >= bounds[1]:
            raise InvalidInputError(
                f"{label}: field 'range' must be two finite numbers [low, high] with low < "
                f"high, not {bounds!r}"
            )
    if config["type"] in ("score_model", "label_model"):
        from gradewire.openai._model_graders import message_templates

        message_templates(config, label)  # text content and templates, before any client
    if config["type"] == "label_model":
        labels, passing = config["labels"], config["passing_labels"]
        if not labels or len(set(labels)) != len(labels):
            raise InvalidInputError(f"{label}: field 'labels' must list distinct labels")
        strays = [p for p in passing if p not in labels]
        if strays or not passing:
            raise InvalidInputError(
                f"{label}: field 'passing_labels' must be a non-empty subset of labels; "
                f"{strays!r} are not labels"
                if strays
                else f"{label}: field 'passing_labels' must name at least one label"
            )


def _validate_multi(config: Mapping[str, Any], label: str) -> dict[str, Any]:
    allowed = {"type", "name", "graders", "calculate_output"}
    _refuse_unknown(config, allowed, label)
    for required in ("name", "graders", "calculate_output"):
        if required not in config:
            raise InvalidInputError(
                f"{label} is not a valid OpenAI grader: field {required!r} is required"
            )
    if not isinstance(config["name"], str) or not config["name"].strip():
        raise InvalidInputError(f"{label}: field 'name' must be a non-empty string")
    if not isinstance(config["calculate_output"], str):
        raise InvalidInputError(f"{label}: field 'calculate_output' must be a formula string")
    graders = config["graders"]
    if isinstance(graders, Mapping) and "type" in graders and isinstance(graders["type"], str):
        # The generated MultiGrader's shape: one grader, named by its own name.
        sub = validate(graders, f"{label}.graders")
        named = {sub["name"]: sub}
    elif isinstance(graders, Mapping) and graders:
        named = {}
        for name, sub in graders.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise InvalidInputError(
                    f"{label}: the grader names of 'graders' are the formula's variables, so "
                    f"each must be an identifier (letters, digits, _), not {name!r}"
                )
            named[name] = validate(sub, f"{label}.graders.{name}")
    else:
        raise InvalidInputError(
            f"{label}: field 'graders' must map names to grader objects, e.g. "
            '{"exact": {"type": "string_check", ...}}'
        )
    return {**dict(config), "graders": named}


def _build(config: dict[str, Any], connection: Connection, key: str, where: str) -> OpenAIGrader:
    grader = _make(config, connection, key, where)
    grader.missing_variables = connection.settings.get("missing_variables") or "error"
    return grader


def _make(config: dict[str, Any], connection: Connection, key: str, where: str) -> OpenAIGrader:
    kind = config["type"]
    if kind == "string_check":
        from gradewire.openai._string_check import StringCheck

        return StringCheck(key, config, where=where)
    if kind == "text_similarity":
        from gradewire.openai._text_similarity import TextSimilarity

        cosine = config["evaluation_metric"] == "cosine"
        embeddings = connection.embeddings() if cosine else None
        return TextSimilarity(key, config, where=where, embeddings=embeddings)
    if kind == "python":
        from gradewire.openai._python_grader import PythonGrader

        timeout = connection.settings.get("python_timeout") or DEFAULT_PYTHON_TIMEOUT
        return PythonGrader(key, config, where=where, timeout=timeout)
    if kind in ("score_model", "label_model"):
        from gradewire.openai._model_graders import LabelModel, ScoreModel

        params = config.get("sampling_params") or {}
        extra = {
            name: params[name]
            for name in ("top_p", "seed", "reasoning_effort")
            if params.get(name) is not None
        }
        model = connection.chat_model(config["model"], extra, where)
        cls = ScoreModel if kind == "score_model" else LabelModel
        return cls(key, config, where=where, model=model)
    from gradewire.openai._multi import Multi

    subs = {
        name: _build(sub, connection, name, f"{where}.graders.{name}")
        for name, sub in config["graders"].items()
    }
    return Multi(key, config, subs, where=where)
