"""What W&B cannot take as a name or as text, found before a call, so that it is refused once.

W&B raises deep inside ``run.log`` for a table key whose file path has a ``..`` segment or
an absolute start, for a NUL in a file name, and for a lone surrogate (half of an emoji cut
by a tokenizer) anywhere it encodes text. Retrying cannot help, so the sink raises
`InvalidInputError` for those keys instead (which `gradewire.BackgroundSink` sets aside),
and cleans the text it renders itself, as the MLflow sink does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from gradewire import InvalidInputError, InvalidTypeError

__all__ = ["checked_name", "clean_text", "config_key_problem", "key_problem"]


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate as an HTML character reference (`&#55357;`)."""
    return text if _encodable(text) else text.encode("utf-8", "xmlcharrefreplace").decode()


def key_problem(name: str, *, file: bool) -> str | None:
    """Why W&B would refuse ``name`` as a key (``file``: also as a table's file name), or None."""
    if not _encodable(name):
        return (
            "holds a lone surrogate (half of a character, e.g. an emoji cut in two), "
            "which W&B cannot encode"
        )
    if not file:
        return None
    if "\x00" in name:
        return "holds a NUL character, which no file name can"
    # W&B's own rule for a table's path in the run (wandb.sdk.lib.paths.validate_relpath).
    path = f"{name}.table.json"
    for pure in (PurePosixPath(path), PureWindowsPath(path)):
        if pure.anchor or ".." in pure.parts:
            return (
                "would make W&B write the table outside its folder (a '..' segment, or a "
                "start such as '/', 'C:' or '\\\\'), which it refuses"
            )
    return None


def config_key_problem(config: Mapping[str, Any], path: str = "config") -> str | None:
    """Where a key of ``config`` (nested mappings too) holds text W&B cannot encode, or None."""
    for key, value in config.items():
        if not _encodable(key):
            return f"{path} has the key {key!r}, which holds a lone surrogate W&B cannot encode"
        if isinstance(value, Mapping):
            problem = config_key_problem(value, f"{path}[{key!r}]")
            if problem is not None:
                return problem
    return None


def checked_name(what: str, value: object) -> str:
    """``value`` as a W&B key prefix or step metric name (``/`` stripped), or a clear error."""
    if not isinstance(value, str):
        raise InvalidTypeError(f"{what} must be a str, not {type(value).__name__} {value!r}")
    name = value.strip("/")
    if not name or name != value.strip() or "*" in name:
        raise InvalidInputError(
            f"{what}={value!r} is not usable as a W&B key: pass a plain name such as "
            "'rewards' or 'grader_step' (no '*', no leading or trailing '/')"
        )
    return name
