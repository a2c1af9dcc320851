"""Find the texts in model output that may hold the JSON answer.

Reasoning blocks are dropped first; the candidates, in priority order, are fenced blocks, the
whole text and bracket spans found by one linear scan. The `_structured` docstring has details.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["candidates", "collect", "holds_tags_or_fences", "strip_reasoning"]

# Caps per candidate source; they sum to the ~32 candidates tried at most, which bounds the
# work on inputs full of brackets or fences.
_MAX_FENCES = 6
_MAX_OBJECT_SPANS = 12
_MAX_ARRAY_SPANS = 4
_MAX_TRUNCATED = 3
_MAX_ORPHANS = 6

_THINK_TAG = re.compile(r"<(/?)think(?:ing)?\s*>", re.IGNORECASE)
_FENCE_RUN = re.compile(r"`{3,}|~{3,}")
# An info string (`json`, `JSON`, `python`, nothing) ending the line, or a tag directly
# followed by the JSON on the same line (```json {"a": 1}```).
_FENCE_INFO = re.compile(r"[ \t]*[\w+.#-]*[ \t]*(?:\r?\n|(?=[{\[])|\Z)")
# How far to look for the end of an unusual info string before taking the block as inline.
_FENCE_INFO_LIMIT = 200

_OPENERS = re.compile(r"[\[{]")
_STRUCTURAL = re.compile(r'[\[\]{}"]')
# The rest of a string after its opening quote. It always matches (at worst up to the end of
# the text, `end` then unset), so scanning never backtracks into quadratic time.
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*(?:(?P<end>")|\\?\Z)', re.DOTALL)


def holds_tags_or_fences(text: str) -> bool:
    """Whether ``text`` has a reasoning tag or a fence run: else its first candidate is it all."""
    return _THINK_TAG.search(text) is not None or _FENCE_RUN.search(text) is not None


def strip_reasoning(text: str) -> tuple[str, bool]:
    """Return the text outside reasoning blocks, and whether only reasoning was there."""
    kept: list[str] = []
    position = 0
    inside = False
    saw_tag = False
    for match in _THINK_TAG.finditer(text):
        saw_tag = True
        if match.group(1):
            if inside:
                inside = False
            else:
                # A closing tag with no opening one: the model began reasoning without the tag.
                kept.clear()
            position = match.end()
        elif not inside:
            # Nested opening tags are ignored so the first closing tag ends the block.
            kept.append(text[position : match.start()])
            inside = True
    if not inside:
        kept.append(text[position:])
    answer = "".join(kept)
    return answer, saw_tag and not answer.strip()


class _Candidate(NamedTuple):
    text: str
    # Where the text was found; the same text can be found several ways.
    kinds: set[str]


def candidates(text: str) -> list[str]:
    """Return the JSON candidates of `text` in the order they are tried (for inspection)."""
    return [candidate.text for candidate in collect(strip_reasoning(text)[0])]


def collect(answer: str) -> list[_Candidate]:
    """Return the candidates of `answer` (reasoning stripped) in priority order, deduplicated."""
    closed_fences, open_fence = _fenced_blocks(answer)
    spans = _scan_spans(answer)
    found = [(block, "fence") for block in closed_fences]
    if open_fence:
        found.append((open_fence, "open_fence"))
    found.append((answer.strip(), "whole"))
    found += [(answer[a:b], "object") for a, b in spans.objects]
    found += [(answer[a:b], "array") for a, b in spans.arrays]
    # Not stripped: whitespace after a final number shows the number is complete.
    found += [(answer[a:], "truncated") for a in spans.unclosed]
    found += [(answer[a:b], "orphan") for a, b in spans.orphans]
    by_text: dict[str, _Candidate] = {}
    for candidate_text, kind in found:
        if not candidate_text:
            continue
        # Dicts keep insertion order: a text keeps the priority of its first finding.
        by_text.setdefault(candidate_text, _Candidate(candidate_text, set())).kinds.add(kind)
    return list(by_text.values())


def _fenced_blocks(text: str) -> tuple[list[str], str]:
    """Return the stripped contents of closed fenced blocks, and of an unterminated last one.

    The unterminated block keeps trailing whitespace, which tells a repair whether the final
    number is complete.
    """
    blocks: list[str] = []
    opener = ""
    content_start = 0
    for match in _FENCE_RUN.finditer(text):
        run = match.group()
        if not opener:
            opener = run
            content_start = _fence_content_start(text, match.end())
        elif (
            run[0] == opener[0]
            and len(run) >= len(opener)
            and _alone_on_line_side(text, match.start(), match.end())
        ):
            blocks.append(text[content_start : match.start()].strip())
            opener = ""
            if len(blocks) >= _MAX_FENCES:
                return blocks, ""
    return blocks, text[content_start:].lstrip() if opener else ""


def _fence_content_start(text: str, after_run: int) -> int:
    info = _FENCE_INFO.match(text, after_run)
    if info is not None:
        return info.end()
    newline = text.find("\n", after_run, after_run + _FENCE_INFO_LIMIT)
    return after_run if newline == -1 else newline + 1


def _alone_on_line_side(text: str, start: int, end: int) -> bool:
    r"""Whether a fence run starts its line or ends it (ignoring spaces and tabs).

    This keeps a run inside a JSON string (`"```python\nx\n```"`) from closing the block.
    Each scan stops at the first non-blank character, so the total work stays linear.
    """
    before = start
    while before > 0 and text[before - 1] in " \t":
        before -= 1
    if before == 0 or text[before - 1] in "\r\n":
        return True
    after = end
    while after < len(text) and text[after] in " \t":
        after += 1
    return after == len(text) or text[after] in "\r\n"


class _Spans(NamedTuple):
    objects: list[tuple[int, int]]
    arrays: list[tuple[int, int]]
    unclosed: list[int]
    orphans: list[tuple[int, int]]


def _scan_spans(text: str) -> _Spans:
    """Find balanced bracket spans in one left-to-right pass.

    Outside brackets only `{` and `[` matter; inside, double-quoted strings are skipped whole
    and depth is tracked with a stack. A closing bracket with no open bracket of its kind is
    ignored; one of the wrong kind closes the nearest open bracket of its kind (the brackets
    in between were never closed). Every stack entry is popped once, so this is linear.
    """
    objects: list[tuple[int, int]] = []
    arrays: list[tuple[int, int]] = []
    closers: list[str] = []
    starts: list[int] = []
    # Spans completed directly inside each open bracket: they are the best guesses left if
    # that bracket never closes. Lists are created lazily so deep nesting stays cheap.
    children: list[list[tuple[int, int]] | None] = []
    open_count = {"}": 0, "]": 0}
    position = 0
    length = len(text)
    while position < length:
        pattern = _STRUCTURAL if closers else _OPENERS
        match = pattern.search(text, position)
        if match is None:
            break
        index = match.start()
        char = text[index]
        position = index + 1
        if char == '"':
            rest = _STRING_REST.match(text, position)
            # The pattern always matches; the guard keeps the type checker informed.
            if rest is None or rest.group("end") is None:
                break
            position = rest.end()
        elif char in "{[":
            closer = "}" if char == "{" else "]"
            closers.append(closer)
            starts.append(index)
            children.append(None)
            open_count[closer] += 1
        elif open_count[char]:
            while True:
                closer = closers.pop()
                start = starts.pop()
                children.pop()
                open_count[closer] -= 1
                if closer == char:
                    break
            span = (start, index + 1)
            if closers:
                siblings = children[-1]
                if siblings is None:
                    siblings = children[-1] = []
                if len(siblings) < _MAX_ORPHANS:
                    siblings.append(span)
            elif char == "}":
                if len(objects) < _MAX_OBJECT_SPANS:
                    objects.append(span)
            elif len(arrays) < _MAX_ARRAY_SPANS:
                arrays.append(span)
    orphans: list[tuple[int, int]] = []
    # Brackets deeper in the stack opened later, so their children come later in the text.
    for siblings in children:
        if siblings:
            orphans += siblings[: _MAX_ORPHANS - len(orphans)]
            if len(orphans) >= _MAX_ORPHANS:
                break
    return _Spans(objects, arrays, starts[:_MAX_TRUNCATED], orphans)
