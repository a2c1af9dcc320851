"""Plots as inline SVG, drawn in Python: a histogram per grader, intervals per grader.

Every label is escaped. The plots need no script, so they show even where scripts are off.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gradewire.eval.reporting._page import escape

__all__ = ["histogram", "intervals"]

_BAR = "#4c78a8"


def histogram(label: str, values: Sequence[float], *, width: int = 320, height: int = 170) -> str:
    """A histogram of ``values``: one bar per value when there are few distinct ones."""
    x = np.asarray(values, dtype=np.float64)
    head = (
        f'<svg class="hist" role="img" aria-label="{escape(label)} distribution" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
    )
    if x.size == 0:
        return head + '<text x="10" y="24" font-size="12">no scores</text></svg>'
    distinct = np.unique(x)
    if distinct.size <= 12:
        counts = np.array([np.count_nonzero(x == v) for v in distinct])
        labels = [f"{v:.4g}" for v in distinct]
    else:
        low, high = float(x.min()), float(x.max())
        counts, edges = np.histogram(x, bins=20, range=(low, high))
        labels = [f"{edges[i]:.3g} to {edges[i + 1]:.3g}" for i in range(len(counts))]
    left, bottom, top_pad = 40, 26, 10
    plot_w, plot_h = width - left - 8, height - bottom - top_pad
    step = plot_w / len(counts)
    peak = int(counts.max())
    parts = [head]
    for i, count in enumerate(counts):
        h = plot_h * int(count) / peak if peak else 0.0
        x0 = left + i * step
        parts.append(
            f'<rect class="bar" x="{x0 + 1:.1f}" y="{top_pad + plot_h - h:.1f}" '
            f'width="{max(step - 2, 1):.1f}" height="{h:.1f}" fill="{_BAR}">'
            f"<title>{escape(labels[i])}: {int(count)}</title></rect>"
        )
    base = top_pad + plot_h
    parts.append(f'<line x1="{left}" y1="{base}" x2="{width - 8}" y2="{base}" stroke="#333"/>')
    parts.append(
        f'<text x="{left - 4}" y="{top_pad + 10}" font-size="11" text-anchor="end">{peak}</text>'
    )
    parts.append(f'<text x="{left - 4}" y="{base}" font-size="11" text-anchor="end">0</text>')
    if distinct.size <= 12:
        for i, text in enumerate(labels):
            parts.append(
                f'<text x="{left + (i + 0.5) * step:.1f}" y="{height - 8}" font-size="11" '
                f'text-anchor="middle">{escape(text)}</text>'
            )
    else:
        parts.append(f'<text x="{left}" y="{height - 8}" font-size="11">{x.min():.3g}</text>')
        parts.append(
            f'<text x="{width - 8}" y="{height - 8}" font-size="11" text-anchor="end">'
            f"{x.max():.3g}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def intervals(rows: Sequence[tuple[str, float, float, float]], *, width: int = 560) -> str:
    """A forest plot: per label, an estimate and its interval, beside a line at zero."""
    finite = [r for r in rows if all(math.isfinite(v) for v in r[1:])]
    row_h, left, right = 28, 170, 20
    height = row_h * max(len(rows), 1) + 30
    head = (
        f'<svg class="forest" role="img" aria-label="differences with intervals" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
    )
    if not finite:
        return head + '<text x="10" y="20" font-size="12">no intervals</text></svg>'
    low = min(0.0, *(r[2] for r in finite))
    high = max(0.0, *(r[3] for r in finite))
    span = (high - low) or 1.0
    low, high = low - span * 0.05, high + span * 0.05

    def at(value: float) -> float:
        return left + (value - low) / (high - low) * (width - left - right)

    parts = [head]
    zero = at(0.0)
    parts.append(
        f'<line x1="{zero:.1f}" y1="4" x2="{zero:.1f}" y2="{height - 24}" stroke="#999" '
        'stroke-dasharray="4 3"/>'
    )
    for i, (label, estimate, ci_low, ci_high) in enumerate(rows):
        y = 16 + i * row_h
        parts.append(
            f'<text x="{left - 8}" y="{y + 4}" font-size="12" text-anchor="end">'
            f"{escape(label)}</text>"
        )
        if not all(math.isfinite(v) for v in (estimate, ci_low, ci_high)):
            continue
        colour = "#2e7d32" if ci_low > 0 else "#c62828" if ci_high < 0 else "#555"
        parts.append(
            f'<line class="ci" x1="{at(ci_low):.1f}" y1="{y}" x2="{at(ci_high):.1f}" y2="{y}" '
            f'stroke="{colour}" stroke-width="2">'
            f"<title>{ci_low:.4g} to {ci_high:.4g}</title></line>"
        )
        parts.append(f'<circle cx="{at(estimate):.1f}" cy="{y}" r="4" fill="{colour}"/>')
    parts.append(f'<text x="{at(low):.1f}" y="{height - 6}" font-size="11">{low:.3g}</text>')
    parts.append(
        f'<text x="{zero:.1f}" y="{height - 6}" font-size="11" text-anchor="middle">0</text>'
    )
    parts.append(
        f'<text x="{at(high):.1f}" y="{height - 6}" font-size="11" text-anchor="end">'
        f"{high:.3g}</text>"
    )
    parts.append("</svg>")
    return "".join(parts)
