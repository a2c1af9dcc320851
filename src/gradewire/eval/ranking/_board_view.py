"""A leaderboard as a notebook shows it: per grader, the page's table of standings.

The standings table (tier, rank interval, run, mean, interval, method, pass rate) is made
here once, for the notebook view (`Leaderboard._repr_html_`) and for the leaderboard page
(`gradewire.eval.reporting._leaderboard_page`), so the two always show the same figures.
The view adds each board's sentence and its warnings; the plots and the pairwise matrix
stay on the page. Every name and message is escaped: run names and grader keys are
untrusted text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Protocol

__all__ = ["figure", "rank_text", "render_leaderboard_view", "standings_table"]


# What the view reads of `RunStanding`, `GraderBoard` and `Leaderboard`, as protocols: the
# leaderboard imports this view for its `_repr_html_`, so the view cannot import it back.
class _Standing(Protocol):
    @property
    def run(self) -> str: ...
    @property
    def mean(self) -> float: ...
    @property
    def low(self) -> float: ...
    @property
    def high(self) -> float: ...
    @property
    def method(self) -> str: ...
    @property
    def rank_low(self) -> int: ...
    @property
    def rank_high(self) -> int: ...
    @property
    def tier(self) -> int: ...
    @property
    def caveat(self) -> str | None: ...
    @property
    def pass_rate(self) -> float | None: ...


class ShownBoard(Protocol):
    """A grader's board as the view reads it (`gradewire.eval.GraderBoard`)."""

    @property
    def grader(self) -> str: ...
    @property
    def n_samples(self) -> int: ...
    @property
    def runs(self) -> Sequence[_Standing]: ...
    @property
    def confidence(self) -> float: ...
    @property
    def missing_runs(self) -> Sequence[str]: ...
    @property
    def not_scored(self) -> Sequence[str]: ...
    @property
    def slice(self) -> str | None: ...
    @property
    def notes(self) -> Sequence[str]: ...
    @property
    def judge_drift(self) -> Sequence[str]: ...
    @property
    def slices(self) -> Sequence[ShownBoard]: ...
    def summary(self) -> str: ...


class ShownLeaderboard(Protocol):
    """A leaderboard as the view reads it (`gradewire.eval.Leaderboard`)."""

    @property
    def runs(self) -> Sequence[str]: ...
    @property
    def graders(self) -> Sequence[ShownBoard]: ...
    @property
    def n_shared(self) -> int: ...
    @property
    def unshared(self) -> Mapping[str, Sequence[str]]: ...
    @property
    def adjustment(self) -> str: ...
    @property
    def cluster_key(self) -> str | None: ...
    @property
    def by(self) -> str | None: ...


def figure(value: float | None, digits: int = 4) -> str:
    """A figure as the tables show it: four significant digits, a dash for none."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.{digits}g}"


def rank_text(low: int, high: int) -> str:
    """A rank interval: ``3``, or ``1–4``."""
    return f"{low}" if low == high else f"{low}–{high}"


def standings_table(board: ShownBoard) -> str:
    """The board's runs as an HTML table, best mean first (every name escaped)."""
    level = f"{board.confidence:.0%}"
    rows = "".join(
        f'<tr class="run" data-tier="{r.tier}"><td class="num">{r.tier}</td>'
        f'<td class="num">{rank_text(r.rank_low, r.rank_high)}</td>'
        f"<td>{escape(r.run)}</td><td class=num>{figure(r.mean)}</td>"
        f"<td class=num>{figure(r.low)} to {figure(r.high)}</td><td>{escape(r.method)}"
        f"{'; ' + escape(r.caveat) if r.caveat else ''}</td>"
        f"<td class=num>{figure(r.pass_rate) if r.pass_rate is not None else ''}</td></tr>"
        for r in board.runs
    )
    return (
        "<table><thead><tr><th class=num>tier</th><th class=num>rank</th><th>run</th>"
        f"<th class=num>mean</th><th class=num>{level} interval</th><th>method</th>"
        f"<th class=num>pass rate</th></tr></thead><tbody>{rows}</tbody></table>"
    )


_WARN = '<p style="color: #b26a00; margin: 2px 0">⚠ '
_NOTE = '<p style="color: #555; margin: 2px 0">'


def _board_html(board: ShownBoard, label: str) -> str:
    parts = [
        f'<h4 style="margin: 10px 0 2px">{escape(label)}</h4>',
        f"{_NOTE}{board.n_samples} samples scored by every run. {escape(board.summary())}</p>",
    ]
    parts += [f"{_WARN}{escape(line)}</p>" for line in board.judge_drift]
    if board.runs:
        parts.append(standings_table(board))
    if board.missing_runs:
        parts.append(
            f"{_NOTE}runs without this grader: {escape(', '.join(board.missing_runs))}</p>"
        )
    if board.not_scored:
        parts.append(
            f"{_NOTE}{len(board.not_scored)} shared sample(s) some run did not score, left out</p>"
        )
    parts += [f"{_NOTE}note: {escape(note)}</p>" for note in board.notes]
    return "".join(parts)


def render_leaderboard_view(board: ShownLeaderboard) -> str:
    """The leaderboard as HTML for a notebook: a table per grader (and slice), escaped."""
    parts = [
        '<div class="gradewire-leaderboard" style="font-family: sans-serif; font-size: 13px">',
        f"<p><b>Leaderboard</b> of {len(board.runs)} runs on {board.n_shared} shared samples; "
        f"the pairs' p-values adjusted by {escape(board.adjustment)}"
        + (f"; clustered by {escape(board.cluster_key)}" if board.cluster_key else "")
        + "</p>",
    ]
    parts += [
        f"{_NOTE}{escape(run)}: {len(ids)} sample(s) the other runs lack, left out</p>"
        for run, ids in board.unshared.items()
    ]
    for grader in board.graders:
        parts.append(_board_html(grader, grader.grader))
        parts += [
            _board_html(part, f"{grader.grader} — {board.by} = {part.slice}")
            for part in grader.slices
        ]
    parts.append(
        f"{_NOTE}Runs of one tier cannot be told apart; a rank interval is the ranks a run "
        "could hold. The page (render_leaderboard) draws them with the pairwise matrix.</p></div>"
    )
    return "".join(parts)
