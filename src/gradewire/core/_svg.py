"""Small plots as inline SVG, drawn in Python: bars, a histogram, a forest plot, lines.

They are what the HTML views show (the eval report, the compare page, the notebook reprs
of runs, comparisons, histograms and step histories), so they need no plotting library
and no script: they show even where scripts are off. Every label is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

import numpy as np
import numpy.typing as npt

__all__ = ["bars", "histogram", "intervals", "lines", "ticks"]

_BAR = "#4c78a8"
# Tableau's ten, the colours people know from matplotlib's default cycle.
_LINE_COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


def bars(
    label: str,
    counts: npt.ArrayLike,
    titles: Sequence[str],
    *,
    ticks: Sequence[str] | None = None,
    ends: tuple[str, str] | None = None,
    width: int = 320,
    height: int = 170,
) -> str:
    """A bar per count; ``titles[i]`` is the hover text of bar i.

    Args:
        label: What the bars count, for the accessible name.
        counts: One count per bar.
        titles: One hover text per bar.
        ticks: A label under each bar (few bars), or None.
        ends: Labels under the two ends of the axis (many bars), or None.
        width: Width in pixels.
        height: Height in pixels.
    """
    values = np.asarray(counts, dtype=np.int64)
    head = (
        f'<svg class="hist" role="img" aria-label="{escape(label)} distribution" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
    )
    if values.size == 0 or not values.any():
        return head + '<text x="10" y="24" font-size="12">no scores</text></svg>'
    left, bottom, top_pad = 40, 26, 10
    plot_w, plot_h = width - left - 8, height - bottom - top_pad
    step = plot_w / len(values)
    peak = int(values.max())
    parts = [head]
    for i, count in enumerate(values):
        h = plot_h * int(count) / peak
        x0 = left + i * step
        parts.append(
            f'<rect class="bar" x="{x0 + 1:.1f}" y="{top_pad + plot_h - h:.1f}" '
            f'width="{max(step - 2, 1):.1f}" height="{h:.1f}" fill="{_BAR}">'
            f"<title>{escape(titles[i])}: {int(count)}</title></rect>"
        )
    base = top_pad + plot_h
    parts.append(f'<line x1="{left}" y1="{base}" x2="{width - 8}" y2="{base}" stroke="#333"/>')
    parts.append(
        f'<text x="{left - 4}" y="{top_pad + 10}" font-size="11" text-anchor="end">{peak}</text>'
    )
    parts.append(f'<text x="{left - 4}" y="{base}" font-size="11" text-anchor="end">0</text>')
    if ticks is not None:
        for i, text in enumerate(ticks):
            parts.append(
                f'<text x="{left + (i + 0.5) * step:.1f}" y="{height - 8}" font-size="11" '
                f'text-anchor="middle">{escape(text)}</text>'
            )
    elif ends is not None:
        parts.append(
            f'<text x="{left}" y="{height - 8}" font-size="11">{escape(ends[0])}</text>'
            f'<text x="{width - 8}" y="{height - 8}" font-size="11" text-anchor="end">'
            f"{escape(ends[1])}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def histogram(label: str, values: Sequence[float], *, width: int = 320, height: int = 170) -> str:
    """A histogram of ``values``: one bar per value when there are few distinct ones."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return bars(label, [], [], width=width, height=height)
    distinct = np.unique(x)
    if distinct.size <= 12:
        counts = np.array([np.count_nonzero(x == v) for v in distinct])
        labels = [f"{v:.4g}" for v in distinct]
        return bars(label, counts, labels, ticks=labels, width=width, height=height)
    counts, edges = np.histogram(x, bins=20, range=(float(x.min()), float(x.max())))
    labels = [f"{edges[i]:.3g} to {edges[i + 1]:.3g}" for i in range(len(counts))]
    ends = (f"{x.min():.3g}", f"{x.max():.3g}")
    return bars(label, counts, labels, ends=ends, width=width, height=height)


def ticks(low: float, high: float, most: int = 7) -> list[float]:
    """Round values (steps of 1, 2 or 5 times a power of ten) spanning ``[low, high]``."""
    span = high - low
    if not (math.isfinite(span) and span > 0):
        return [low]
    raw = span / max(most - 1, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1.0, 2.0, 5.0, 10.0) if m * power >= raw)
    first = math.ceil(low / step - 1e-9)
    out = []
    k = first
    while k * step <= high + step * 1e-9:
        out.append(0.0 if abs(k) < 1e-12 else k * step)
        k += 1
    return out


_GREEN, _RED, _GREY = "#2e7d32", "#c62828", "#555"


def intervals(
    rows: Sequence[tuple[str, float, float, float]],
    *,
    points: bool = False,
    level: str = "95%",
    width: int = 640,
    label_width: int = 170,
) -> str:
    """A forest plot: per label, an estimate and its interval, beside a line at zero.

    Args:
        rows: ``(label, estimate, low, high)`` per row (non-finite ones drawn empty).
        points: The values are differences of scores within [0, 1]: the axis reads in
            points (100 to the range).
        level: The intervals' level, for the legend.
        width: Width of the plot.
        label_width: Width kept for the labels on the left.
    """
    finite = [r for r in rows if all(math.isfinite(v) for v in r[1:])]
    row_h, left, right = 26, label_width, 24
    plot_bottom = 10 + row_h * max(len(rows), 1)
    height = plot_bottom + 76
    unit = "points" if points else "score"
    head = (
        f'<svg class="forest" role="img" aria-label="B − A with {level} intervals, in {unit}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
    )
    if not finite:
        return head + '<text x="10" y="20" font-size="12">no intervals</text></svg>'
    scale = 100.0 if points else 1.0
    low = min(0.0, *(r[2] for r in finite))
    high = max(0.0, *(r[3] for r in finite))
    span = (high - low) or 1.0
    low, high = low - span * 0.05, high + span * 0.05
    marks = ticks(low * scale, high * scale)
    low, high = min(low, marks[0] / scale), max(high, marks[-1] / scale)

    def at(value: float) -> float:
        return left + (value - low) / (high - low) * (width - left - right)

    def shown(value: float) -> str:
        text = f"{value * scale:+.4g}" if value else "0"
        return text.replace("-", "−")

    parts = [head]
    for mark in marks:
        x = at(mark / scale)
        parts.append(
            f'<line class="tick" x1="{x:.1f}" y1="6" x2="{x:.1f}" y2="{plot_bottom}" '
            'stroke="#e4e4e4"/>'
            f'<line x1="{x:.1f}" y1="{plot_bottom}" x2="{x:.1f}" y2="{plot_bottom + 4}" '
            'stroke="#333"/>'
            f'<text class="tick-label" x="{x:.1f}" y="{plot_bottom + 16}" font-size="11" '
            f'text-anchor="middle">{shown(mark / scale)}</text>'
        )
    zero = at(0.0)
    parts.append(
        f'<line class="zero" x1="{zero:.1f}" y1="4" x2="{zero:.1f}" y2="{plot_bottom}" '
        'stroke="#777" stroke-dasharray="4 3"/>'
        f'<line x1="{left}" y1="{plot_bottom}" x2="{width - right}" y2="{plot_bottom}" '
        'stroke="#333"/>'
        f'<text x="{(left + width - right) / 2:.1f}" y="{plot_bottom + 32}" font-size="11" '
        f'text-anchor="middle">B − A ({"points" if points else "score units"}): '
        "left of the dashed line A scored higher, right of it B did</text>"
    )
    for i, (label, estimate, ci_low, ci_high) in enumerate(rows):
        y = 10 + row_h * i + row_h / 2
        parts.append(
            f'<text x="{left - 8}" y="{y + 4:.1f}" font-size="12" text-anchor="end">'
            f"{escape(label)}</text>"
        )
        if not all(math.isfinite(v) for v in (estimate, ci_low, ci_high)):
            continue
        colour = _GREEN if ci_low > 0 else _RED if ci_high < 0 else _GREY
        tip = escape(f"{label}: B − A {shown(estimate)}, {level} interval {shown(ci_low)} to ")
        parts.append(
            f'<g class="row"><title>{tip}{shown(ci_high)}</title>'
            f'<line class="ci" x1="{at(ci_low):.1f}" y1="{y:.1f}" x2="{at(ci_high):.1f}" '
            f'y2="{y:.1f}" stroke="{colour}" stroke-width="2"/>'
            f'<circle cx="{at(estimate):.1f}" cy="{y:.1f}" r="4" fill="{colour}"/></g>'
        )
    parts.append(_legend(plot_bottom + 50, level))
    parts.append("</svg>")
    return "".join(parts)


def _legend(y: float, level: str) -> str:
    """What the marks and colours of the forest plot mean, in one line under it."""
    items = [
        (f'<circle cx="6" cy="0" r="4" fill="{_GREY}"/>', "B − A"),
        (
            f'<line x1="0" y1="0" x2="18" y2="0" stroke="{_GREY}" stroke-width="2"/>',
            f"{level} interval",
        ),
        (f'<rect x="0" y="-5" width="12" height="10" fill="{_GREEN}"/>', "B better"),
        (f'<rect x="0" y="-5" width="12" height="10" fill="{_RED}"/>', "A better"),
        (f'<rect x="0" y="-5" width="12" height="10" fill="{_GREY}"/>', "no detectable difference"),
        (
            '<line x1="0" y1="-6" x2="0" y2="6" stroke="#777" stroke-dasharray="4 3"/>',
            "no difference",
        ),
    ]
    parts = [f'<g class="legend" transform="translate(10 {y:.0f})" font-size="11">']
    x = 0
    for mark, text in items:
        parts.append(
            f'<g transform="translate({x} 0)">{mark}<text x="22" y="4">{escape(text)}</text></g>'
        )
        x += 30 + 6 * len(text)
    parts.append("</g>")
    return "".join(parts)


def lines(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    width: int = 480,
    height: int = 200,
    max_points: int = 500,
) -> str:
    """One line per name over ``(x, y)`` points (a metric over steps), with a legend.

    A series longer than ``max_points`` is drawn from evenly spaced points of it (its first
    and last kept), so a long history stays a small picture.
    """
    head = (
        f'<svg class="lines" role="img" aria-label="values over steps" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
    )
    drawn = {
        name: [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y)]
        for name, points in series.items()
    }
    drawn = {name: points for name, points in drawn.items() if points}
    if not drawn:
        return head + '<text x="10" y="24" font-size="12">nothing logged</text></svg>'
    xs = [x for points in drawn.values() for x, _ in points]
    ys = [y for points in drawn.values() for _, y in points]
    x_low, x_high = min(xs), max(xs)
    y_low, y_high = min(ys), max(ys)
    if y_high == y_low:
        y_low, y_high = y_low - 0.5, y_high + 0.5
    if x_high == x_low:
        x_low, x_high = x_low - 0.5, x_high + 0.5
    left, right, top, bottom = 48, 10, 10, 24 + 16 * len(drawn)
    plot_w, plot_h = width - left - right, height - top - bottom

    def at(x: float, y: float) -> tuple[float, float]:
        return (
            left + (x - x_low) / (x_high - x_low) * plot_w,
            top + (y_high - y) / (y_high - y_low) * plot_h,
        )

    base = top + plot_h
    parts = [
        head,
        f'<line x1="{left}" y1="{base}" x2="{width - right}" y2="{base}" stroke="#333"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="#333"/>',
        f'<text x="{left - 4}" y="{top + 8}" font-size="11" text-anchor="end">{y_high:.3g}</text>',
        f'<text x="{left - 4}" y="{base}" font-size="11" text-anchor="end">{y_low:.3g}</text>',
        f'<text x="{left}" y="{base + 14}" font-size="11">{x_low:g}</text>',
        f'<text x="{width - right}" y="{base + 14}" font-size="11" text-anchor="end">'
        f"{x_high:g}</text>",
    ]
    for i, (name, points) in enumerate(drawn.items()):
        colour = _LINE_COLOURS[i % len(_LINE_COLOURS)]
        if len(points) > max_points:
            keep = np.unique(np.linspace(0, len(points) - 1, max_points).round().astype(int))
            points = [points[k] for k in keep]
        pixels = [at(x, y) for x, y in points]
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in pixels)
        parts.append(
            f'<polyline class="series" points="{path}" fill="none" stroke="{colour}" '
            f'stroke-width="1.5"><title>{escape(name)}</title></polyline>'
        )
        if len(pixels) == 1:  # a line of one point draws nothing
            px, py = pixels[0]
            parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"/>')
        y = base + 30 + 16 * i
        parts.append(
            f'<rect x="{left}" y="{y - 9}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{left + 14}" y="{y}" font-size="11">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
