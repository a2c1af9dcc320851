"""Turn a candidate text into a Python value: JSON, JSON repaired, or a Python literal.

Repairs are trailing-comma removal and completing a value cut off mid-way; the last resort is
`ast.literal_eval`, which evaluates literals only and never runs code.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections import deque

__all__ = ["FAILED", "loads", "python_literal", "repairs"]

# Repair attempts per truncated candidate beyond the first.
_MAX_BACKOFFS = 4
# Deeper than any real answer and than `json` parses with default recursion limits; it also
# keeps repairs of adversarial `[[[[...` cheap.
_MAX_REPAIR_DEPTH = 500
# `ast.literal_eval` builds a full syntax tree, so only modest candidates are worth it.
_MAX_LITERAL_CHARS = 100_000

_TRAILING_COMMA_HINT = re.compile(r",\s*[}\]]")
_STRING_OR_TRAILING_COMMA = re.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|,(?=\s*[}\]])', re.DOTALL
)
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<str>"[^"\\]*(?:\\.[^"\\]*)*(?:(?P<end>")|\\?\Z))
  | (?P<punct>[{}\[\]:,])
  | (?P<lit>[^\s"{}\[\]:,]+)
    """,
    re.DOTALL | re.VERBOSE,
)
_JSON_LITERAL = re.compile(
    r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|NaN|-?Infinity"
)
# Literals that cannot be the start of a longer one.
_FINAL_LITERALS = frozenset({"true", "false", "null"})
# A string can be cut anywhere inside an escaped surrogate pair (`\ud83c\udf89`), so at most
# this many characters are trimmed before closing an open string.
_MAX_ESCAPE_TRIM = 11


# Stands in for the value when a candidate cannot be read (None is a valid JSON value).
FAILED = object()


def loads(candidate: str) -> tuple[object, str | None]:
    """Parse JSON, then retry without trailing commas.

    Returns:
        The value (or `FAILED`) and, on failure, why the first attempt failed.
    """
    value, error = _loads_once(candidate)
    if value is not FAILED:
        return value, None
    if _TRAILING_COMMA_HINT.search(candidate):
        value, _ = _loads_once(_drop_trailing_commas(candidate))
        if value is not FAILED:
            return value, None
    return FAILED, error


def _loads_once(candidate: str) -> tuple[object, str | None]:
    try:
        # strict=False accepts raw newlines and tabs inside strings, which models often emit.
        value: object = json.loads(candidate, strict=False)
    except json.JSONDecodeError as exc:
        return FAILED, f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
    except RecursionError:
        return FAILED, "it is nested too deeply"
    except ValueError as exc:
        # For example an integer longer than Python's int conversion limit.
        return FAILED, str(exc)
    return value, None


def _drop_trailing_commas(candidate: str) -> str:
    def keep_strings(match: re.Match[str]) -> str:
        token = match.group()
        return "" if token == "," else token

    return _STRING_OR_TRAILING_COMMA.sub(keep_strings, candidate)


class _Closer:
    """One open bracket in a persistent stack, so a snapshot of the stack costs O(1)."""

    __slots__ = ("char", "parent")

    def __init__(self, char: str, parent: _Closer | None) -> None:
        self.char = char
        self.parent = parent


def _closing_suffix(node: _Closer | None) -> str:
    chars: list[str] = []
    while node is not None:
        chars.append(node.char)
        node = node.parent
    return "".join(chars)


def repairs(candidate: str) -> list[str]:
    """Return completions of a JSON value cut off mid-way, most complete first.

    The first completion keeps everything up to the last complete member (closing an open
    string value); the rest back off to earlier complete members. A candidate that is not a
    cut-off `{` or `[` value, or that has a syntax error before its end, gives none.
    """
    body = candidate.lstrip()
    if not body or body[0] not in "{[":
        return []
    # One [closer, state] per open bracket. States: object "key", "colon", "value", "next";
    # array "value", "next". "next" means a member just ended.
    stack: list[list[str]] = []
    node: _Closer | None = None
    # Cut points after a complete member or an opening bracket, with the brackets open there.
    cuts: deque[tuple[int, _Closer | None]] = deque(maxlen=_MAX_BACKOFFS + 1)
    open_string_start = -1
    for match in _TOKEN.finditer(body):
        kind = match.lastgroup
        if kind == "ws":
            continue
        token = match.group()
        state = stack[-1][1] if stack else ""
        if kind == "str":
            if not stack:
                return []
            if match.group("end") is None:
                # Only the last token can be an unterminated string.
                if state == "value":
                    open_string_start = match.start()
                elif state != "key":
                    return []
                break
            if state == "key":
                stack[-1][1] = "colon"
            elif state == "value":
                stack[-1][1] = "next"
                cuts.append((match.end(), node))
            else:
                return []
        elif kind == "lit":
            if state != "value":
                return []
            if match.end() == len(body) and token not in _FINAL_LITERALS:
                # Cut off mid-way (`tru`, `1.`) or maybe so: `12` may have been `125`, and a
                # missing field is a safer outcome than a wrong number.
                break
            if not _JSON_LITERAL.fullmatch(token):
                return []
            stack[-1][1] = "next"
            cuts.append((match.end(), node))
        elif token in "{[":
            if (stack and state != "value") or len(stack) >= _MAX_REPAIR_DEPTH:
                return []
            closer = "}" if token == "{" else "]"
            stack.append([closer, "key" if token == "{" else "value"])
            node = _Closer(closer, node)
            cuts.append((match.end(), node))
        elif token in "}]":
            allowed = ("key", "next") if token == "}" else ("value", "next")
            if not stack or stack[-1][0] != token or state not in allowed:
                return []
            stack.pop()
            node = node.parent if node is not None else None
            if not stack:
                return []  # the value is complete, so there is nothing to repair
            stack[-1][1] = "next"
            cuts.append((match.end(), node))
        elif token == ",":
            if state != "next":
                return []
            stack[-1][1] = "key" if stack[-1][0] == "}" else "value"
        elif token == ":":
            if state != "colon":
                return []
            stack[-1][1] = "value"
    if not stack:
        return []

    completions: list[str] = []
    if open_string_start >= 0:
        closed = _close_string(body[open_string_start:])
        if closed is not None:
            completions.append(body[:open_string_start] + closed + _closing_suffix(node))
    completions += [body[:end] + _closing_suffix(snapshot) for end, snapshot in reversed(cuts)]
    return completions


def _close_string(open_string: str) -> str | None:
    r"""Close a cut-off JSON string, trimming a cut-off escape such as `\u00` if needed."""
    for trim in range(_MAX_ESCAPE_TRIM + 1):
        if trim >= len(open_string):
            break
        attempt = open_string[: len(open_string) - trim] + '"'
        value = _loads_once(attempt)[0]
        if isinstance(value, str) and _is_encodable(value):
            return attempt
    return None


def _is_encodable(value: str) -> bool:
    # False for a lone surrogate left by cutting `\ud83c\udf89` in half; JSON-mode validation
    # would reject it.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def python_literal(candidate: str) -> object:
    """Read a `{` or `[` candidate written as a Python literal (`{'a': True, 'b': None}`).

    Returns:
        The value, or `FAILED` when the candidate is too long, is not a literal, or holds
        something JSON cannot express.
    """
    if len(candidate) > _MAX_LITERAL_CHARS or candidate[0] not in "{[":
        return FAILED
    try:
        with warnings.catch_warnings():
            # Invalid escapes like '\d' warn while parsing; model output is not our code.
            warnings.simplefilter("ignore")
            value: object = ast.literal_eval(candidate)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return FAILED
    if not _is_json_compatible(value):
        return FAILED
    return value


def _is_json_compatible(value: object) -> bool:
    """Whether a Python literal maps one-to-one onto JSON (no tuples, sets, bytes...)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                return False
            pending += item.values()
        elif isinstance(item, list):
            pending += item
        elif item is not None and not isinstance(item, (str, int, float)):
            return False
    return True
