"""The leaderboard page: one self-contained HTML page per leaderboard, no network.

Per board (a grader, or one slice of it): a forest plot of the runs' means with their
intervals, coloured by tier; the rank interval each run could hold, drawn on the ranks;
and the pairwise matrix (each cell the adjusted p-value of the two runs, dark where they
are separable). Everything is drawn in Python as escaped HTML and SVG under the compare
page's CSP; the bundled ``leaderboard.js`` only shows one board at a time (by grader and
slice).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gradewire.core._svg import ticks
from gradewire.eval.ranking._board_view import standings_table
from gradewire.eval.ranking._standings import GraderBoard, Leaderboard
from gradewire.eval.reporting._page import escape, page

__all__ = ["TIER_COLOURS", "leaderboard_metrics", "mean_bars", "render_leaderboard"]

TIER_COLOURS = ("#1b7837", "#2166ac", "#b2182b", "#762a83", "#e08214", "#4d4d4d")
"""Tier 1, 2, ... in the forest plot (cycled past the sixth)."""


def _n(value: float | None, digits: int = 4) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.{digits}g}"


def _p(value: float) -> str:
    if not math.isfinite(value):
        return "–"
    return "<1e-4" if value < 1e-4 else f"{value:.3g}"


def _colour(tier: int) -> str:
    return TIER_COLOURS[(tier - 1) % len(TIER_COLOURS)]


def _forest(board: GraderBoard) -> str:
    """Means with intervals, one row per run, coloured by tier, on a shared axis."""
    runs = board.runs
    values = [v for r in runs for v in (r.low, r.high, r.mean) if math.isfinite(v)]
    if not values:
        return '<p class="note">no finite mean to draw</p>'
    lo, hi = min(values), max(values)
    if hi == lo:
        lo, hi = lo - 0.5, hi + 0.5
    label_w, plot_w, row_h, top = 220, 420, 22, 24
    height = top + row_h * len(runs) + 24

    def x(value: float) -> float:
        return label_w + (value - lo) / (hi - lo) * plot_w

    parts = [
        f'<svg class="forest" role="img" width="{label_w + plot_w + 90}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(board.grader)}: means with '
        f"{board.confidence:.0%} intervals, coloured by tier</title>"
    ]
    for tick in (lo, (lo + hi) / 2, hi):
        parts.append(
            f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top - 6}" y2="{height - 20}" '
            f'stroke="#ddd"/><text x="{x(tick):.1f}" y="{height - 6}" font-size="11" '
            f'text-anchor="middle">{_n(tick, 3)}</text>'
        )
    for i, r in enumerate(runs):
        y = top + row_h * i + row_h / 2
        colour = _colour(r.tier)
        name = r.run if len(r.run) <= 32 else r.run[:31] + "…"
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 4:.1f}" font-size="12" text-anchor="end" '
            f'fill="{colour}">{escape(name)}</text>'
        )
        if math.isfinite(r.low) and math.isfinite(r.high):
            parts.append(
                f'<line x1="{x(r.low):.1f}" x2="{x(r.high):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{colour}" stroke-width="2"/>'
            )
        if math.isfinite(r.mean):
            parts.append(
                f'<circle cx="{x(r.mean):.1f}" cy="{y:.1f}" r="4" fill="{colour}">'
                f"<title>{escape(r.run)}: {_n(r.mean)} ({_n(r.low)} to {_n(r.high)}), "
                f"tier {r.tier}</title></circle>"
            )
        parts.append(
            f'<text x="{label_w + plot_w + 8}" y="{y + 4:.1f}" font-size="11" '
            f'fill="{colour}">tier {r.tier}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def mean_bars(board: GraderBoard) -> str:
    """A bar per run (its mean, in its tier's colour) with its interval as an error bar.

    For trackers whose own charts draw no error bars (W&B's built-in bar chart); the axis
    starts at zero when every value is on one side of it, so the bars' lengths compare.
    """
    runs = board.runs
    values = [v for r in runs for v in (r.low, r.high, r.mean) if math.isfinite(v)]
    if not values:
        return '<p class="note">no finite mean to draw</p>'
    lo, hi = min(0.0, *values), max(0.0, *values)
    if hi == lo:
        hi = lo + 1.0
    marks = ticks(lo, hi, 6)
    lo, hi = min(lo, marks[0]), max(hi, marks[-1])
    left, bottom, top, bar_w, height = 56, 110, 28, 36, 320
    width = max(left + bar_w * len(runs) + 16, 380)
    plot_h = height - top - bottom

    def y(value: float) -> float:
        return top + (hi - value) / (hi - lo) * plot_h

    parts = [
        f'<svg class="mean-bars" role="img" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(board.grader)}: mean per run with '
        f"its {board.confidence:.0%} interval, coloured by tier</title>"
        f'<text x="{left}" y="16" font-size="12">{escape(board.grader)}: mean and '
        f"{board.confidence:.0%} interval per run</text>"
    ]
    for tick in marks:
        parts.append(
            f'<line x1="{left - 4}" x2="{width - 8}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
            f'stroke="#e4e4e4"/><text x="{left - 6}" y="{y(tick) + 4:.1f}" font-size="11" '
            f'text-anchor="end">{_n(tick, 3)}</text>'
        )
    zero = y(0.0)
    parts.append(
        f'<line x1="{left - 4}" x2="{width - 8}" y1="{zero:.1f}" y2="{zero:.1f}" stroke="#333"/>'
    )
    for i, r in enumerate(runs):
        x = left + bar_w * i
        centre = x + bar_w / 2
        colour = _colour(r.tier)
        name = r.run if len(r.run) <= 16 else r.run[:15] + "…"
        tip = (
            f"{r.run}: mean {_n(r.mean)}, {board.confidence:.0%} interval {_n(r.low)} to "
            f"{_n(r.high)}, rank {r.rank_low}–{r.rank_high}, tier {r.tier}"
        )
        if math.isfinite(r.mean):
            top_y, base_y = sorted((y(r.mean), zero))
            parts.append(
                f'<rect class="bar" x="{x + 6}" y="{top_y:.1f}" width="{bar_w - 12}" '
                f'height="{base_y - top_y:.1f}" fill="{colour}" fill-opacity="0.75">'
                f"<title>{escape(tip)}</title></rect>"
            )
        if math.isfinite(r.low) and math.isfinite(r.high):
            parts.append(
                f'<g class="error-bar" stroke="#111" stroke-width="1.5">'
                f'<line x1="{centre:.1f}" x2="{centre:.1f}" y1="{y(r.high):.1f}" '
                f'y2="{y(r.low):.1f}"/>'
                f'<line x1="{centre - 6:.1f}" x2="{centre + 6:.1f}" y1="{y(r.high):.1f}" '
                f'y2="{y(r.high):.1f}"/>'
                f'<line x1="{centre - 6:.1f}" x2="{centre + 6:.1f}" y1="{y(r.low):.1f}" '
                f'y2="{y(r.low):.1f}"/></g>'
            )
        parts.append(
            f'<text x="{centre:.1f}" y="{height - bottom + 14}" font-size="11" '
            f'text-anchor="end" transform="rotate(-45 {centre:.1f} {height - bottom + 14})" '
            f'fill="{colour}">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _ranks(board: GraderBoard) -> str:
    """Each run's rank interval drawn over the ranks 1..k."""
    k = len(board.runs)
    label_w, cell, row_h, top = 220, 24, 20, 22
    width = label_w + cell * k + 10
    height = top + row_h * k + 6
    parts = [
        f'<svg class="ranks" role="img" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(board.grader)}: the ranks each run '
        "could hold</title>"
    ]
    for rank in range(1, k + 1):
        parts.append(
            f'<text x="{label_w + cell * (rank - 0.5):.1f}" y="14" font-size="11" '
            f'text-anchor="middle">{rank}</text>'
        )
    for i, r in enumerate(board.runs):
        y = top + row_h * i
        name = r.run if len(r.run) <= 32 else r.run[:31] + "…"
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 14}" font-size="12" text-anchor="end">'
            f"{escape(name)}</text>"
            f'<rect x="{label_w + cell * (r.rank_low - 1) + 2}" y="{y + 3}" '
            f'width="{cell * (r.rank_high - r.rank_low + 1) - 4}" height="{row_h - 6}" rx="4" '
            f'fill="{_colour(r.tier)}"><title>{escape(r.run)}: rank {r.rank_low} to '
            f"{r.rank_high}</title></rect>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _matrix(board: GraderBoard) -> str:
    """The pairwise matrix: adjusted p-values, dark where the two runs are separable."""
    names = [r.run for r in board.runs]
    index = {name: i for i, name in enumerate(names)}
    k = len(names)
    cells: dict[tuple[int, int], tuple[str, bool, str]] = {}
    for p in board.pairs:
        i, j = index[p.a], index[p.b]
        tip = (
            f"{p.a} − {p.b}: {_n(p.difference)} ({_n(p.low)} to {_n(p.high)}), p = "
            f"{_p(p.p_value)}, adjusted {_p(p.p_value_adjusted)}"
            + (" — separable" if p.separable else " — cannot be told apart")
        )
        cells[(i, j)] = cells[(j, i)] = (_p(p.p_value_adjusted), p.separable, tip)
    label_w, cell, top = 220, 56, 24
    width, height = label_w + cell * k + 10, top + cell * k // 2 + 10
    row_h = cell // 2
    parts = [
        f'<svg class="matrix" role="img" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(board.grader)}: adjusted p-value of '
        "every pair (dark: separable)</title>"
    ]
    for j in range(k):
        parts.append(
            f'<text x="{label_w + cell * (j + 0.5):.1f}" y="16" font-size="11" '
            f'text-anchor="middle">{j + 1}</text>'
        )
    for i, name in enumerate(names):
        y = top + row_h * i
        short = name if len(name) <= 28 else name[:27] + "…"
        parts.append(
            f'<text x="{label_w - 8}" y="{y + row_h - 9}" font-size="12" text-anchor="end">'
            f"{i + 1}. {escape(short)}</text>"
        )
        for j in range(k):
            x = label_w + cell * j
            if i == j:
                parts.append(
                    f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{row_h - 2}" fill="#eee"/>'
                )
                continue
            text, separable, tip = cells[(i, j)]
            fill, ink = ("#2d004b", "#fff") if separable else ("#f2f0f7", "#333")
            parts.append(
                f'<g class="{"sep" if separable else "tie"}"><title>{escape(tip)}</title>'
                f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{row_h - 2}" fill="{fill}"/>'
                f'<text x="{x + cell / 2 - 1:.1f}" y="{y + row_h - 9}" font-size="10" '
                f'text-anchor="middle" fill="{ink}">{text}</text></g>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _section(board: GraderBoard, key: str) -> str:
    label = board.grader + (f" — {board.slice}" if board.slice is not None else "")
    notes = "".join(f'<p class="note">{escape(n)}</p>' for n in board.notes)
    drift = "".join(
        f'<p class="note drift"><b>warning</b>: {escape(line)}</p>' for line in board.judge_drift
    )
    missing = (
        f'<p class="note">runs without this grader: {escape(", ".join(board.missing_runs))}</p>'
        if board.missing_runs
        else ""
    )
    unscored = (
        f'<p class="note">{len(board.not_scored)} shared sample(s) some run did not score '
        f"(left out): {escape(', '.join(board.not_scored[:50]))}</p>"
        if board.not_scored
        else ""
    )
    body = (
        standings_table(board)
        + '<div class="plots"><figure class="plot">'
        + _forest(board)
        + f"<figcaption>means with {board.confidence:.0%} intervals, coloured by tier</figcaption>"
        + '</figure><figure class="plot">'
        + _ranks(board)
        + "<figcaption>rank intervals ("
        + escape(board.rank_method)
        + ")</figcaption></figure></div>"
        + "<h3>pairwise matrix</h3>"
        + _matrix(board)
        + f'<p class="note">adjusted by {escape(board.adjustment)}; a dark cell: the two runs '
        f"are separable (adjusted p &lt; {1 - board.confidence:.2g})</p>"
        if board.runs
        else ""
    )
    return (
        f'<section class="board" data-board="{escape(key)}"><h2>{escape(label)}</h2>'
        f'<p class="meta">{board.n_samples} samples scored by every run. '
        f"{escape(board.summary())}</p>{drift}{body}{missing}{unscored}{notes}</section>"
    )


def _boards(board: Leaderboard) -> Sequence[tuple[str, str, GraderBoard]]:
    out = []
    for g, grader in enumerate(board.graders):
        out.append((f"{g}", grader.grader, grader))
        for s, part in enumerate(grader.slices):
            out.append((f"{g}.{s}", f"{grader.grader} — {board.by} = {part.slice}", part))
    return out


def render_leaderboard(board: Leaderboard) -> str:
    """The leaderboard as a self-contained HTML page (every name escaped)."""
    boards = _boards(board)
    options = "".join(
        f'<option value="{escape(key)}">{escape(label)}</option>' for key, label, _ in boards
    )
    unshared = "".join(
        f"<li>{escape(run)}: {len(ids)} sample(s) the other runs lack, left out: "
        f"{escape(', '.join(ids[:50]))}{' …' if len(ids) > 50 else ''}</li>"
        for run, ids in board.unshared.items()
    )
    head = (
        f"<h1>Leaderboard of {len(board.runs)} runs</h1>"
        f'<p class="meta">{board.n_shared} samples every run holds; runs: '
        f"{escape(', '.join(board.runs))}. Pairs' p-values adjusted by "
        f"{escape(board.adjustment)}"
        + (f"; clustered by {escape(board.cluster_key)}" if board.cluster_key else "")
        + "</p>"
        + (f"<ul class=ids>{unshared}</ul>" if unshared else "")
        + '<div class="controls"><label>board <select id="gw-board">'
        + f'<option value="">every grader and slice</option>{options}</select></label></div>'
    )
    sections = "".join(_section(b, key) for key, _, b in boards)
    return page("gradewire leaderboard", head + sections, script="leaderboard.js")


def leaderboard_metrics(board: Leaderboard) -> dict[str, float]:
    """The leaderboard as tracker metrics: ``<grader>/<run>/<figure>`` (whole boards only).

    The figures are each run's ``mean``, ``ci_low``, ``ci_high``, ``rank_low``,
    ``rank_high`` and ``tier``, and per grader ``separable_from_leader``; an interval that
    does not exist is left out rather than logged as a number.
    """
    out: dict[str, float] = {}
    for g in board.graders:
        for r in g.runs:
            head = f"{g.grader}/{r.run}"
            figures = {
                "mean": r.mean,
                "ci_low": r.low,
                "ci_high": r.high,
                "rank_low": float(r.rank_low),
                "rank_high": float(r.rank_high),
                "tier": float(r.tier),
            }
            if r.pass_rate is not None:
                figures["pass_rate"] = r.pass_rate
            out.update({f"{head}/{k}": v for k, v in figures.items() if math.isfinite(v)})
        out[f"{g.grader}/separable_from_leader"] = float(len(g.separable_from_leader()))
    return out
