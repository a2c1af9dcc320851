"""The grader factory: graders declared as data (a dict, a JSON or TOML file) built into objects.

Every grader the factory builds keeps its resolved spec in ``grader.spec`` (the file's
``[judge]`` defaults merged in, secrets only as environment variable names), so
`grader_config` can log a grader set as run config and `build_grader` can rebuild it later.
A spec of type ``custom`` or ``command``, and an OpenAI ``python`` grader, is code wherever it
sits (alone, or in a ``combined``, ``panel`` or ``multi``): `build_grader` builds it only with
``trust_code=True``, while `load_graders` trusts the local file it is given. One walk over
the whole tree (`specs._trust`) decides it before anything is imported or built.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradewire.core._errors import InvalidInputError, InvalidTypeError, MissingDependencyError
from gradewire.core._grader import BaseGrader

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from gradewire.specs._grader_specs import JudgeDefaults

__all__ = ["build_grader", "grader_config", "load_graders"]

# The spec models, their validators and builders are imported on first use: building the
# pydantic models costs ~15 ms, which `import gradewire` should not pay for every user.


@functools.cache
def _spec_adapter() -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    from gradewire.specs._grader_specs import GraderSpec

    return TypeAdapter(GraderSpec)


def build_grader(
    spec: Mapping[str, Any],
    *,
    judge_defaults: Mapping[str, Any] | None = None,
    trust_code: bool = False,
) -> BaseGrader:
    """Build one grader from its spec.

    A spec can be code: ``custom`` imports and calls the Python it names (a module's
    import runs that module; ``"builtins:exec"`` with ``factory = true`` runs its key as
    Python), ``command`` (once ``bash``) runs a shell command and an OpenAI ``python``
    grader runs its source. Such a spec, alone or anywhere inside a ``combined``, ``panel``
    or ``multi``, is refused (before anything is imported or built) unless
    ``trust_code=True``, since a dict may come from anywhere: a tracker's logged config
    (`grader_config` is made to be logged, and read back), a run folder, a request. Pass
    ``trust_code=True`` for a spec you wrote or that comes from a file you control.
    Other specs may still send samples, and the secret their ``api_key_env`` /
    ``token_env`` names, to the URL they name: read those before building a spec you did
    not write.

    Args:
        spec: A dict with a ``type`` (``binary_judge``, ``prebuilt_judge``, ``rubric_judge``,
            ``range_judge``, ``pairwise_judge``, ``external_endpoint``, ``command``
            (``bash``, its old name, is read as it), ``custom``, ``combined``, ``panel``),
            a ``key`` and that type's fields (every type also
            takes ``feedback_key``, Adaptive's: the name the grader's scores are written
            under, its ``grader_key``; by default the ``key``); `grader.spec` of a built
            grader works too. An OpenAI grader object (``string_check``, ...,
            ``multi``) is built by `gradewire.openai_grader`, its model graders reaching
            ``judge_defaults``'s ``base_url``.
        judge_defaults: Defaults for judge models, as a grader file's ``[judge]`` table
            (``model``, ``base_url``, ``api_key_env``, ...).
        trust_code: Build ``custom`` and ``command`` specs and OpenAI ``python`` graders
            (anywhere in the tree).

    Returns:
        The grader, with its resolved spec in ``grader.spec``.

    Raises:
        InvalidInputError: The spec is not valid; the message names each bad field and says
            what it takes. Also when a named environment variable is unset or a custom
            function cannot be imported, and for code without ``trust_code=True``.

    Example:
        >>> grader = build_grader({
        ...     "type": "binary_judge", "key": "helpful",
        ...     "criteria": "The answer addresses the question",
        ...     "judge_model": {"model": "gpt-4o-mini", "api_key_env": "OPENAI_API_KEY"},
        ... })  # doctest: +SKIP
    """
    from gradewire.openai._config import is_openai_config
    from gradewire.specs._builders import Builder, openai_graders_connection, resolve
    from gradewire.specs._trust import refuse_code

    if not isinstance(trust_code, bool):
        raise InvalidTypeError(f"trust_code must be True or False, not {trust_code!r}")
    defaults = _defaults(judge_defaults, "judge_defaults")
    openai = is_openai_config(spec)
    parsed = spec if openai else _parse(spec, _where(spec))
    if not trust_code:
        # Before anything is built or imported, for every kind of spec.
        refuse_code([parsed], "build_grader")
    if openai:
        return _openai(
            spec, openai_graders_connection(defaults, None, "build_grader()"), "build_grader()"
        )
    return Builder().build(resolve(parsed, defaults))


def load_graders(path: str | os.PathLike[str], *, trust_code: bool = True) -> list[BaseGrader]:
    """Build every grader of a JSON or TOML grader file.

    The file holds a ``graders`` list of specs and optionally a ``judge`` table of judge
    model defaults; a JSON file may also be just the list. Graders whose judge models
    resolve to the same settings share one `OpenAIChatModel`.

    A grader file is code: a ``custom`` spec imports and calls the Python it names (with
    ``function = "builtins:exec"`` and ``factory = true`` it runs its key as Python) and a
    ``command`` spec runs its command, here and wherever the file is loaded (``gradewire
    eval``, ``gradewire serve``). The file you name is trusted as you would trust a
    script of yours; load one you did not write with ``trust_code=False``, which refuses
    those specs (see `build_grader`). A ``custom`` spec's module is looked for first in
    the grader file's folder (``function = "mygraders:correct"`` with ``mygraders.py``
    beside the file), then where Python looks (installed packages, ``PYTHONPATH``).

    OpenAI grader objects (Evals testing criteria, RFT graders) are taken unchanged: in the
    list, alone as the whole file, or as an OpenAI eval's ``testing_criteria``. Their model
    graders reach the ``[judge]`` table's ``base_url`` with its ``api_key_env`` and client
    settings; the ``[openai]`` table holds the `gradewire.openai.OpenAIGraderSettings`
    (``served_model``/``served_models`` to map configured model names to served ones, ...).

    Example (TOML)::

        [judge]
        base_url = "http://127.0.0.1:8001/v1"
        api_key_env = "JUDGE_API_KEY"

        [[graders]]
        type = "binary_judge"
        key = "helpful"
        criteria = "The response directly answers the user's question"
        judge_model = "Qwen/Qwen2.5-7B-Instruct"

    Args:
        path: The grader file.
        trust_code: Build ``custom`` and ``command`` specs and OpenAI ``python`` graders,
            anywhere in the tree (default: yes, the file is yours).

    Raises:
        InvalidInputError: The file is unreadable, not JSON/TOML, or a spec is invalid
            (the message names the file, the grader and the field); code specs with
            ``trust_code=False``.
        MissingDependencyError: A TOML file on Python 3.10 without ``tomli``.
    """
    from pydantic import ValidationError

    from gradewire.openai._config import is_openai_config
    from gradewire.specs._builders import Builder, openai_graders_connection, resolve
    from gradewire.specs._error_messages import spec_error
    from gradewire.specs._grader_specs import GraderFileSpec
    from gradewire.specs._trust import refuse_code

    if not isinstance(trust_code, bool):
        raise InvalidTypeError(f"trust_code must be True or False, not {trust_code!r}")
    file = Path(path)
    data = _file_shape(_read(file), file)
    items = data.get("graders")
    # OpenAI grader objects are read apart, by their own validation; the order is kept.
    openai_items = (
        {i: item for i, item in enumerate(items) if is_openai_config(item)}
        if isinstance(items, list)
        else {}
    )
    native = [item for i, item in enumerate(items) if i not in openai_items] if items else items
    try:
        parsed = GraderFileSpec.model_validate({**data, "graders": native})
    except ValidationError as exc:
        raise spec_error(exc, str(file)) from None
    if not items:
        raise InvalidInputError(
            f"{file}: the 'graders' list is empty; a grader file holds at least one grader "
            "(a gradewire spec, an OpenAI grader object, or an Evals 'testing_criteria' list)"
        )
    if not trust_code:
        refuse_code([*parsed.graders, *openai_items.values()], str(file))
    _check_unique_keys(parsed.graders, str(file))
    # A custom spec's module is looked for beside the file first (trusted code only: with
    # trust_code=False the code specs were refused above).
    builder = Builder(module_folder=file.resolve().parent)
    built = iter([builder.build(resolve(spec, parsed.judge)) for spec in parsed.graders])
    connection = (
        openai_graders_connection(parsed.judge, parsed.openai, str(file)) if openai_items else None
    )
    graders: list[BaseGrader] = []
    for index in range(len(items)):
        if index in openai_items:
            assert connection is not None
            graders.append(_openai(openai_items[index], connection, f"{file}: graders[{index}]"))
        else:
            graders.append(next(built))
    _check_unique(graders, str(file))
    return graders


def _file_shape(data: Any, file: Path) -> Mapping[str, Any]:
    """The file as ``{"graders": [...], "judge": ..., "openai": ...}``.

    A JSON file may be a list of graders, one OpenAI grader object, or an OpenAI eval (or
    just its ``testing_criteria``), whose other fields describe the eval, not its graders.
    """
    from gradewire.openai._config import is_openai_config

    if isinstance(data, list):
        return {"graders": data}
    if not isinstance(data, Mapping):
        raise InvalidInputError(
            f"{file}: a grader file holds a 'graders' list (and optionally 'judge' and "
            f"'openai' tables), not a {type(data).__name__}"
        )
    if is_openai_config(data):
        return {"graders": [data]}
    if "testing_criteria" in data:
        if "graders" in data:
            raise InvalidInputError(
                f"{file} has both 'graders' and 'testing_criteria'; keep one list of graders"
            )
        kept = {key: data[key] for key in ("judge", "openai") if key in data}
        return {**kept, "graders": data["testing_criteria"]}
    return data


def _openai(config: Any, connection: Any, where: str) -> BaseGrader:
    from gradewire.openai._config import build

    try:
        return build(config, connection)
    except InvalidInputError as exc:
        raise type(exc)(f"{where}: {exc}") from None


def grader_config(graders: BaseGrader | Iterable[BaseGrader]) -> dict[str, Any]:
    """The specs of factory-built graders, as JSON-ready run config.

    The result has the shape of a grader file (``{"graders": [spec, ...]}``), so writing it
    as JSON gives a file that `load_graders` rebuilds the same graders from. Secrets never
    appear: specs name the environment variables that hold them.

    Example:
        >>> sink.log_config(grader_config(graders))  # doctest: +SKIP

    Raises:
        InvalidInputError: A grader was not built by the factory, so it has no spec.
    """
    items = [graders] if isinstance(graders, BaseGrader) else list(graders)
    specs: list[Any] = []
    for grader in items:
        if not isinstance(grader, BaseGrader):
            raise InvalidTypeError(f"grader_config takes graders, not {type(grader).__name__}")
        spec = getattr(grader, "spec", None)
        if not isinstance(spec, Mapping):
            raise InvalidInputError(
                f"grader {grader.grader_key!r} ({type(grader).__name__}) was not built from a "
                "spec, so there is no config to log; build it with build_grader() or "
                "load_graders(), or log its settings yourself"
            )
        # A copy through JSON: the config is plain data, and later edits cannot leak in.
        specs.append(json.loads(json.dumps(spec)))
    return {"graders": specs}


def _parse(spec: Mapping[str, Any], where: str) -> Any:
    from pydantic import ValidationError

    from gradewire.specs._error_messages import spec_error

    if not isinstance(spec, Mapping):
        raise InvalidTypeError(
            f"a grader spec is a dict with 'type' and 'key', not {type(spec).__name__}"
        )
    try:
        return _spec_adapter().validate_python(dict(spec))
    except ValidationError as exc:
        raise spec_error(exc, where) from None


def _defaults(raw: Mapping[str, Any] | None, what: str) -> JudgeDefaults | None:
    from pydantic import ValidationError

    from gradewire.specs._error_messages import spec_error
    from gradewire.specs._grader_specs import JudgeDefaults

    if raw is None:
        return None
    try:
        return JudgeDefaults.model_validate(dict(raw))
    except ValidationError as exc:
        raise spec_error(exc, what) from None


def _where(spec: object) -> str:
    key = spec.get("key") if isinstance(spec, Mapping) else None
    kind = spec.get("type") if isinstance(spec, Mapping) else None
    label = f"grader {key!r}" if isinstance(key, str) else "a grader"
    return f"{label} ({kind})" if isinstance(kind, str) else label


def _read(file: Path) -> Any:
    suffix = file.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise InvalidInputError(
            f"{file}: a grader file must end in .json or .toml, not {suffix or '(none)'!r}"
        )
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read the grader file {file}: {exc}") from exc
    if suffix == ".json":
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidInputError(f"{file} is not valid JSON: {exc}") from exc
    toml = _toml_module()
    try:
        return toml.loads(raw.decode())
    except (UnicodeDecodeError, ValueError) as exc:  # TOMLDecodeError is a ValueError
        raise InvalidInputError(f"{file} is not valid TOML: {exc}") from exc


def _toml_module() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:
        import tomli  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise MissingDependencyError(
            "tomli", purpose="read TOML grader files on Python 3.10"
        ) from None
    return tomli


def _check_unique(graders: list[BaseGrader], where: str) -> None:
    """No two graders write under one name (their ``feedback_key``, else their key)."""
    seen: set[str] = set()
    for grader in graders:
        if grader.grader_key in seen:
            raise InvalidInputError(
                f"{where}: two graders write their scores under {grader.grader_key!r} (their "
                "feedback_key, or their key where they have none); give each a distinct one "
                "so their logs and rewards do not mix"
            )
        seen.add(grader.grader_key)


def _check_unique_keys(specs: Iterable[Any], where: str) -> None:
    """No two specs share a ``key`` (each spec's identifier, whatever it writes under)."""
    seen: set[str] = set()
    for spec in specs:
        if spec.key in seen:
            raise InvalidInputError(
                f"{where}: two graders share the key {spec.key!r}; give each a distinct key"
            )
        seen.add(spec.key)
