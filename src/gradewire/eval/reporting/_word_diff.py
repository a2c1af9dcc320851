"""Two completions side by side, word by word: what B removed and what B added.

`difflib.SequenceMatcher` (the standard library's) aligns the words, with no junk
heuristic so that common words still align. Each side is the whole text, escaped, with
the removed words of A in ``<del>`` and the added words of B in ``<ins>``: both
completions are shown in full, and the diff costs no second copy of them.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from gradewire.eval.reporting._page import escape

__all__ = ["SIMILAR", "SideBySide", "side_by_side"]

SIMILAR = 0.5
"""Completions whose words match at least this much (difflib's ratio) are diffed."""
_MOST_TOKENS = 20_000
_TOKEN = re.compile(r"\w+|[^\w\s]+|\s+")


@dataclass(frozen=True)
class SideBySide:
    """Both completions as escaped HTML, and whether the words were diffed.

    Attributes:
        a: Run A's completion (removed words in ``<del>`` when diffed).
        b: Run B's completion (added words in ``<ins>`` when diffed).
        similarity: The share of words the two have in common, 0 to 1 (None: too long
            to align).
        diffed: The completions were similar enough for a word diff to help.
    """

    a: str
    b: str
    similarity: float | None
    diffed: bool


def side_by_side(a: str, b: str, *, similar: float = SIMILAR) -> SideBySide:
    """Both completions, with a word diff when their words match at least ``similar``."""
    words_a, words_b = _TOKEN.findall(a), _TOKEN.findall(b)
    if len(words_a) + len(words_b) > _MOST_TOKENS:
        return SideBySide(escape(a), escape(b), None, False)
    matcher = difflib.SequenceMatcher(None, words_a, words_b, autojunk=False)
    ratio = matcher.ratio() if words_a or words_b else 1.0
    if ratio < similar or a == b:
        return SideBySide(escape(a), escape(b), ratio, False)
    out_a: list[str] = []
    out_b: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        left, right = escape("".join(words_a[i1:i2])), escape("".join(words_b[j1:j2]))
        if tag == "equal":
            out_a.append(left)
            out_b.append(right)
            continue
        if left:
            out_a.append(f"<del>{left}</del>")
        if right:
            out_b.append(f"<ins>{right}</ins>")
    return SideBySide("".join(out_a), "".join(out_b), ratio, True)
