"""A comparison as a notebook shows it: the verdict per grader in words, and a forest plot.

The details (slices, the samples that changed most, every statistic) stay on the
comparison's fields and in the compare page; this view is what a person reads first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import NamedTuple

from gradewire.core._svg import intervals

__all__ = ["GraderLine", "comparison_line", "render_comparison_view"]

_CELL = "padding: 3px 8px; border-bottom: 1px solid #ddd; vertical-align: top"
_TH = f'<th style="{_CELL}; text-align: left; background: #f2f2f2">'


class GraderLine(NamedTuple):
    """What the view shows of one grader's comparison."""

    grader: str
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    n_pairs: int
    verdict: str
    method: str
    warnings: tuple[str, ...]


def _signed(value: float) -> str:
    return f"{value:+.4g}" if math.isfinite(value) else "nan"


def comparison_line(run_a: str, run_b: str, graders: Sequence[GraderLine]) -> str:
    """The comparison in one line (its text repr): per grader, B − A and its interval."""
    shown = [
        # repr's escapes without its quotes: a key's control characters never reach a terminal
        f"{repr(g.grader)[1:-1]}: {_signed(g.diff)} [{_signed(g.ci_low)}, {_signed(g.ci_high)}]"
        for g in graders[:8]
    ]
    if len(graders) > 8:
        shown.append(f"... {len(graders) - 8} more")
    return f"Comparison({run_a!r} vs {run_b!r}; B - A {'; '.join(shown) or 'no graders'})"


def render_comparison_view(
    run_a: str, run_b: str, graders: Sequence[GraderLine], *, confidence: float, note: str
) -> str:
    """The comparison as HTML: every name and message escaped."""
    parts = [
        '<div style="font-family: sans-serif; font-size: 13px; max-width: 60em">',
        f"<p><b>Comparison</b>: A = {escape(run_a)}, B = {escape(run_b)}; "
        f"{len(graders)} grader{'s' if len(graders) != 1 else ''} compared on paired "
        "samples</p>",
        '<table style="border-collapse: collapse">',
        f"<thead><tr>{_TH}grader</th>{_TH}verdict</th>{_TH}method</th></tr></thead><tbody>",
    ]
    for g in graders:
        warnings = "".join(
            f'<br><span style="color: #b26a00">⚠ {escape(w)}</span>' for w in g.warnings
        )
        parts.append(
            f'<tr><td style="{_CELL}"><b>{escape(g.grader)}</b></td>'
            f'<td style="{_CELL}">{escape(g.verdict)}{warnings}</td>'
            f'<td style="{_CELL}; color: #555">{escape(g.method)}</td></tr>'
        )
    parts.append("</tbody></table>")
    if graders:
        forest = intervals([(g.grader, g.diff, g.ci_low, g.ci_high) for g in graders])
        parts.append(
            f'<figure style="margin: 8px 0">{forest}<figcaption style="color: #555">'
            f"B − A per grader with its {confidence:.0%} interval; green: B better, red: "
            "A better, grey: the interval includes 0</figcaption></figure>"
        )
    parts.append(f'<p style="color: #555; font-size: 12px">{escape(note)}</p></div>')
    return "".join(parts)
