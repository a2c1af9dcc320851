"""From a validated grader spec to a grader object: one builder per spec type."""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import os
import sys
import threading
from pathlib import Path
from typing import Any

from gradewire.core._combined_grader import CombinedGrader
from gradewire.core._errors import GradewireError, InvalidInputError
from gradewire.core._grader import BaseGrader
from gradewire.judges._certificate import require_certificate
from gradewire.judges._judge_panel import JudgePanel
from gradewire.judges._judge_settings import JudgeSettings
from gradewire.models._client import ModelClient
from gradewire.models._get_model import get_model, qualified_model_name
from gradewire.openai._config import Connection
from gradewire.openai._settings import OpenAIGraderSettings
from gradewire.specs._grader_specs import (
    CombinedSpec,
    CommandSpec,
    CustomSpec,
    ExternalEndpointSpec,
    JudgeDefaults,
    JudgeModelSpec,
    OpenAIGraderDefaults,
    PanelSpec,
    _Judge,
)
from gradewire.tools._command_grader import CommandGrader
from gradewire.tools._endpoint_grader import EndpointGrader

__all__ = ["Builder", "openai_graders_connection", "resolve"]

# What a [judge] table passes on to every judge model, and what becomes a `get_model`
# keyword (base_url and api_key_env are read apart: the key comes from the environment).
_MODEL_FIELDS = tuple(name for name in JudgeDefaults.model_fields if name != "model")
_MODEL_KEYWORDS = tuple(name for name in _MODEL_FIELDS if name not in ("base_url", "api_key_env"))
_JUDGE_KEYWORDS = tuple(JudgeSettings.__annotations__)


def resolve(spec: Any, defaults: JudgeDefaults | None) -> Any:
    """The spec with the ``[judge]`` defaults merged into every judge model, recursively."""
    if isinstance(spec, CombinedSpec):
        return spec.model_copy(update={"graders": [resolve(g, defaults) for g in spec.graders]})
    if isinstance(spec, PanelSpec):
        return spec.model_copy(update={"judges": [resolve(g, defaults) for g in spec.judges]})
    if not isinstance(spec, _Judge):
        return spec
    model = spec.judge_model
    if model is None:
        if defaults is None or defaults.model is None:
            raise InvalidInputError(
                f"{spec.type} {spec.key!r} needs judge_model: a model name, or a table "
                "{model, base_url, api_key_env, ...}; or give the grader file a [judge] "
                "table with model = ..."
            )
        model = JudgeModelSpec(model=defaults.model)
    if defaults is not None:
        filled = {
            name: getattr(defaults, name)
            for name in _MODEL_FIELDS
            if getattr(model, name) is None and getattr(defaults, name) is not None
        }
        if filled:
            model = model.model_copy(update=filled)
    return spec.model_copy(update={"judge_model": model})


def openai_graders_connection(
    judge: JudgeDefaults | None, openai: OpenAIGraderDefaults | None, where: str
) -> Connection:
    """How a file's OpenAI graders reach models: its ``[judge]`` and ``[openai]`` tables."""
    settings = OpenAIGraderSettings(
        **{k: v for k, v in (openai.model_dump() if openai else {}).items() if v is not None}  # type: ignore[typeddict-item]
    )
    if judge is None:
        return Connection(settings=settings)
    options = _model_options(judge)
    return Connection(
        base_url=judge.base_url,
        api_key=_env(judge.api_key_env, "api_key_env", where),
        model_options=options,
        settings=settings,
    )


class Builder:
    """Builds graders from resolved specs; judge models with equal settings are shared.

    ``module_folder`` (a grader file's folder) is where a custom spec's module is looked
    for first, as a script's own folder is for the script.
    """

    def __init__(self, module_folder: Path | None = None) -> None:
        self._models: dict[JudgeModelSpec, ModelClient] = {}
        self._module_folder = module_folder

    def build(self, spec: Any) -> BaseGrader:
        """The grader for one resolved spec, remembering the spec in ``grader.spec``.

        The grader is keyed by the spec's ``feedback_key`` when it has one (the name its
        scores are written under), else by its ``key``.
        """
        keyed = spec.model_copy(update={"key": spec.written_as}) if spec.feedback_key else spec
        grader = self._make(keyed)
        if spec.timeout is not None and not isinstance(spec, CommandSpec | ExternalEndpointSpec):
            # The other types pass it to their constructor, with their own meaning.
            grader.timeout = spec.timeout
        if spec.score_range is not None:
            grader.score_range = spec.score_range
        # Set on the object (not a class attribute): the spec belongs to this grader.
        object.__setattr__(grader, "spec", spec.model_dump(mode="json", exclude_none=True))
        return grader

    def _make(self, spec: Any) -> BaseGrader:
        if isinstance(spec, _Judge):
            return self._judge(spec)
        if isinstance(spec, ExternalEndpointSpec):
            return EndpointGrader(
                spec.key,
                spec.url,
                token=_env(spec.token_env, "token_env", spec.key),
                attempt_timeout=spec.timeout,  # the spec's timeout is each attempt's
                max_attempts=spec.max_attempts,
                payload=spec.payload,
                remote_grader=spec.remote_grader,
                **_tables(spec),
            )
        if isinstance(spec, CommandSpec):
            return CommandGrader(
                spec.key,
                spec.command,
                cwd=spec.cwd,
                timeout=spec.timeout,
                completion_via=spec.completion_via,
                **_tables(spec),
            )
        if isinstance(spec, CustomSpec):
            return _custom(spec, self._module_folder)
        if isinstance(spec, CombinedSpec):
            return CombinedGrader(
                spec.key,
                [self.build(sub) for sub in spec.graders],
                spec.weights,
                spec.aggregation,
                on_error=spec.on_error,
                **_tables(spec),
            )
        if isinstance(spec, PanelSpec):
            return JudgePanel(
                spec.key,
                [self.build(sub) for sub in spec.judges],
                aggregate=spec.aggregate,
                quorum=spec.quorum,
                tie_break=spec.tie_break,
                **_tables(spec),
            )
        raise InvalidInputError(f"no builder for a grader spec of type {type(spec).__name__}")

    def _judge(self, spec: _Judge) -> BaseGrader:
        assert spec.judge_model is not None  # resolve() fills it
        model = self.model(spec.judge_model, spec.key)
        common: dict[str, Any] = {
            name: getattr(spec, name) for name in _JUDGE_KEYWORDS if getattr(spec, name) is not None
        }
        grader = spec.grader_class()(spec.key, model, **spec.arguments(), **common)
        assert isinstance(grader, BaseGrader)
        if spec.certificate is not None:
            path = Path(spec.certificate.path).expanduser()
            if not path.is_absolute() and self._module_folder is not None:
                path = self._module_folder / path
            require_certificate(
                grader,
                path,
                min_agreement=spec.certificate.min_agreement,
                on_failure=spec.certificate.on_failure,
            )
        return grader

    def model(self, spec: JudgeModelSpec, key: str) -> ModelClient:
        """One model per distinct judge model spec: ``"provider/name"``, by `get_model`.

        A name without a provider (``"gpt-4o-mini"``, ``"Qwen/Qwen2.5-7B-Instruct"``) is an
        OpenAI-compatible server's, as grader files have always meant it.
        """
        shared = self._models.get(spec)
        if shared is not None:
            return shared
        model = get_model(
            qualified_model_name(spec.model),
            base_url=spec.base_url,
            api_key=_env(spec.api_key_env, "api_key_env", key),
            **_model_options(spec),
        )
        self._models[spec] = model
        return model


def _model_options(spec: JudgeModelSpec | JudgeDefaults) -> dict[str, Any]:
    options = {
        name: getattr(spec, name) for name in _MODEL_KEYWORDS if getattr(spec, name) is not None
    }
    if "timeout" in options:
        # A judge model's timeout has always bounded each HTTP attempt: its name now.
        options["attempt_timeout"] = options.pop("timeout")
    return options


def _tables(spec: Any) -> dict[str, Any]:
    """``sample_tables`` when the spec sets it; else the grader class's own default."""
    return {} if spec.sample_tables is None else {"sample_tables": spec.sample_tables}


def _env(name: str | None, field: str, key: str) -> str | None:
    if name is None:
        return None
    value = os.environ.get(name)
    if value is None:
        raise InvalidInputError(
            f"grader {key!r}: the environment variable {name} (named by {field}) is not set; "
            f"export it ({name}=...) before building the grader"
        )
    return value


def _custom(spec: CustomSpec, folder: Path | None) -> BaseGrader:
    target = _import_target(spec.function, spec.key, folder)
    where = f"custom grader {spec.key!r} ({spec.function})"
    extra = _tables(spec)
    is_function = callable(target) and not spec.factory and not isinstance(target, type)
    if spec.threads is not None and not (is_function and not isinstance(target, BaseGrader)):
        raise InvalidInputError(
            f"{where}: threads applies to a scoring function (where its sync calls run); "
            "this names a grader class, instance or factory, which decides for itself"
        )
    grader: BaseGrader
    if isinstance(target, type) and issubclass(target, BaseGrader):
        grader = _call(target, spec, extra, where)
    elif isinstance(target, BaseGrader):
        if spec.options or spec.factory:
            raise InvalidInputError(
                f"{where} names a grader instance, which takes no options or factory flag; "
                "name its class or a factory function instead"
            )
        grader = target
    elif not callable(target):
        raise InvalidInputError(
            f"{where} is a {type(target).__name__}; name a function of a sample, a BaseGrader "
            "subclass, or a factory function (with factory = true)"
        )
    elif spec.factory:
        grader = _call(target, spec, extra, where)
        if not isinstance(grader, BaseGrader):
            raise InvalidInputError(
                f"{where} is a factory (factory = true) but returned "
                f"{type(grader).__name__}, not a BaseGrader"
            )
    else:
        if spec.options:
            raise InvalidInputError(
                f"{where}: options go to a grader class or a factory function; a scoring "
                "function takes none (set factory = true if it builds a grader)"
            )
        grader = BaseGrader.from_function(spec.key, target, threads=spec.threads, **extra)
    if grader.grader_key != spec.key:
        raise InvalidInputError(
            f"{where} gave a grader keyed {grader.grader_key!r}; make its key {spec.key!r}, "
            "the spec's key, so logs and config agree"
        )
    return grader


def _call(target: Any, spec: CustomSpec, extra: dict[str, Any], where: str) -> Any:
    try:
        return target(spec.key, **spec.options, **extra)
    except GradewireError:
        raise
    except Exception as exc:
        shown = ", ".join([repr(spec.key), *(f"{k}=..." for k in {**spec.options, **extra})])
        raise InvalidInputError(
            f"{where}: building it as {spec.function.partition(':')[2]}({shown}) failed: "
            f"{type(exc).__name__}: {exc}; check its signature against the spec's options"
        ) from exc


def _import_target(target: str, key: str, folder: Path | None = None) -> Any:
    module_name, _, attr = target.partition(":")
    where = f"custom grader {key!r}"
    try:
        obj: Any = _import_module(module_name, folder, where)
    except GradewireError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            beside = f" (looked for beside the grader file first, in {folder})" if folder else ""
            raise InvalidInputError(
                f"{where}: no module named {module_name!r}{beside}; check the name in "
                f"'{target}' and that the module is beside the grader file, installed, or "
                "on PYTHONPATH"
            ) from exc
        raise InvalidInputError(
            f"{where}: importing {module_name!r} failed because it imports {exc.name!r}, "
            "which is not installed"
        ) from exc
    except Exception as exc:
        raise InvalidInputError(
            f"{where}: importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise InvalidInputError(
                f"{where}: {module_name!r} has no attribute {attr!r} (from '{target}'); "
                "check the name after the colon"
            ) from None
    return obj


# sys.path is process-wide: one load at a time puts a grader file's folder on it.
_PATH_LOCK = threading.Lock()


def _import_module(name: str, folder: Path | None, where: str) -> Any:
    """Import ``name``, looking in ``folder`` first (a grader file's own folder).

    A module or package beside the grader file is the one its spec means, as a script's
    folder comes first for the script. The folder stays on ``sys.path`` only while the
    module is imported, so the module's own imports of its neighbours work and nothing
    else in the process is shadowed by the folder afterwards.
    """
    if folder is None:
        return importlib.import_module(name)
    top = name.partition(".")[0]
    found = importlib.machinery.PathFinder.find_spec(top, [str(folder)])
    if found is None or _origin_of(found) is None:
        # Nothing beside the file, or only a folder without __init__.py (a namespace
        # package, which any data folder of that name would be): the usual import.
        return importlib.import_module(name)
    loaded = sys.modules.get(top)
    if loaded is not None and _origin(loaded) != _origin_of(found):
        raise InvalidInputError(
            f"{where}: the module {top!r} beside the grader file ({_origin_of(found)}) "
            f"cannot be imported: a module of that name was already imported from "
            f"{_origin(loaded) or 'elsewhere'}; rename the module beside the grader file"
        )
    with _PATH_LOCK:
        sys.path.insert(0, str(folder))
        try:
            return importlib.import_module(name)
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(str(folder))


def _origin(module: Any) -> str | None:
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None) or getattr(module, "__file__", None)
    return str(Path(origin).resolve()) if isinstance(origin, str) else None


def _origin_of(spec: Any) -> str | None:
    origin = getattr(spec, "origin", None)
    return str(Path(origin).resolve()) if isinstance(origin, str) else None
