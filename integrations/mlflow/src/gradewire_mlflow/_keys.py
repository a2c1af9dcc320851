"""Key names MLflow accepts, made from any str, without two keys ever becoming one."""

from __future__ import annotations

import hashlib
import logging
import posixpath
import re

__all__ = ["MAX_KEY_LENGTH", "KeyCleaner", "is_valid_key"]

logger = logging.getLogger("gradewire")

MAX_KEY_LENGTH = 250
"""MLflow's longest metric, param and tag key."""

# MLflow's own rule (mlflow.utils.validation) on POSIX: word characters (Unicode), "/", ".",
# "-", " " and ":". Checked with fullmatch, since MLflow's `$` would let a final "\n" through.
_METRIC_CHARS = re.compile(r"[/\w.\- :]")
# Artifact paths also avoid ":", which Windows file systems refuse.
_PATH_CHARS = re.compile(r"[/\w.\- ]")


def _digest(raw: str, length: int = 8) -> str:
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def is_valid_key(key: str, *, allow_colon: bool = True) -> bool:
    """Whether MLflow takes ``key`` as it is (the rules of its `_validate_metric_name`)."""
    chars = _METRIC_CHARS if allow_colon else _PATH_CHARS
    if not key or len(key) > MAX_KEY_LENGTH or not all(chars.fullmatch(c) for c in key):
        return False
    norm = posixpath.normpath(key)
    return norm == key and norm != "." and not norm.startswith(("..", "/"))


def _with_suffix(key: str, suffix: str) -> str:
    """``key`` cut so that ``key + suffix`` fits, never ending on a "/"."""
    head = key[: MAX_KEY_LENGTH - len(suffix)].rstrip("/")
    return (head or "_") + suffix


class KeyCleaner:
    """Maps each raw key to one valid MLflow key, the same every time, and no two to one.

    A valid key is kept as it is. Otherwise characters MLflow refuses become ``_``, empty
    segments (a leading, trailing or doubled ``/``) are dropped, ``.`` and ``..`` segments
    become underscores, a key starting with ``..`` gets ``_`` for its first dot, and a key
    over 250 characters is cut and ends with ``-`` and 8 hex digits of its hash. A WARNING
    (logger ``gradewire``) says so the first time each key changes.

    If the result is already taken by a different raw key (``"a b"`` and ``"a_b"``), the
    later one gets ``-`` and a hash of itself appended, with a WARNING, so two keys never
    collapse into one. The first key to claim a name keeps it, so names are stable for the
    life of the cleaner (one run).
    """

    def __init__(self, what: str, *, allow_colon: bool = True) -> None:
        """Create a cleaner.

        Args:
            what: What the keys name, for warnings ("metric", "param", "table").
            allow_colon: False for keys that become file paths (":" becomes "_").
        """
        self._what = what
        self._allow_colon = allow_colon
        self._chars = _METRIC_CHARS if allow_colon else _PATH_CHARS
        self._names: dict[str, str] = {}
        self._owners: dict[str, str] = {}

    def __call__(self, raw: str) -> str:
        """The MLflow key for ``raw``."""
        name = self._names.get(raw)
        if name is not None:
            return name
        name = self._repair(raw)
        if name != raw:
            logger.warning(
                "%s key %r is not a valid MLflow name; it is logged as %r (MLflow keys use "
                "letters, digits, '_', '-', '.', ' ', ':' and '/', up to %d characters, with no "
                "empty, '.' or '..' path segment): rename it to choose the name yourself",
                self._what,
                raw,
                name,
                MAX_KEY_LENGTH,
            )
        owner = self._owners.get(name)
        if owner is not None:
            taken = name
            length = 8
            while name in self._owners:
                name = _with_suffix(taken, f"-{_digest(raw, length)}")
                length += 4
            logger.warning(
                "%s keys %r and %r would both be logged as %r; %r is logged as %r instead",
                self._what,
                owner,
                raw,
                taken,
                raw,
                name,
            )
        self._names[raw] = name
        self._owners[name] = raw
        return name

    def _repair(self, raw: str) -> str:
        if is_valid_key(raw, allow_colon=self._allow_colon):
            return raw
        text = "".join(c if self._chars.fullmatch(c) else "_" for c in raw)
        segments = [s for s in text.split("/") if s]
        segments = ["_" * len(s) if s in (".", "..") else s for s in segments]
        key = "/".join(segments) or "_"
        if key.startswith(".."):
            key = "_" + key[1:]
        if len(key) > MAX_KEY_LENGTH:
            key = _with_suffix(key, f"-{_digest(raw)}")
        if not is_valid_key(key, allow_colon=self._allow_colon):  # pragma: no cover - a net
            key = f"key-{_digest(raw, 16)}"
        return key
