"""An eval run as a notebook shows it: per grader, n, the mean with its interval, a histogram.

A summary, not the samples: a run of 100,000 samples shows in a few kilobytes. The
samples are one call away (`EvalRun.tables`, `EvalRun.to_pandas`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

from gradewire.core._svg import histogram
from gradewire.eval.runs._statistics import GraderSummary

__all__ = ["render_run", "run_line"]

_CELL = "padding: 3px 8px; border-bottom: 1px solid #ddd; vertical-align: middle"
_TH = f'<th style="{_CELL}; text-align: left; background: #f2f2f2">'
_TD = f'<td style="{_CELL}; text-align: right">'


def _number(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else "–"


def run_line(name: str, n_samples: int, graders: Sequence[str], complete: bool) -> str:
    """The run in one line (its text repr): name, samples, graders, whether it is complete."""
    shown = graders if len(graders) <= 8 else [*graders[:8], f"... {len(graders) - 8} more"]
    return (
        f"EvalRun(name={name!r}, samples={n_samples}, graders={list(shown)!r}, complete={complete})"
    )


def render_run(
    name: str,
    n_samples: int,
    complete: bool,
    summaries: Sequence[GraderSummary],
    scores: Mapping[str, Sequence[float]],
) -> str:
    """The run's summary as HTML: every name escaped, one histogram per grader."""
    state = "complete" if complete else "partial: some samples are not graded yet"
    parts = [
        '<div style="font-family: sans-serif; font-size: 13px">',
        f"<p><b>EvalRun {escape(name)}</b>: {n_samples:,} samples, "
        f"{len(summaries)} grader{'s' if len(summaries) != 1 else ''} ({state})</p>",
        '<table style="border-collapse: collapse">',
        "<thead><tr>",
        *(
            f"{_TH}{head}</th>"
            for head in ("grader", "n", "mean", "interval", "errors", "abstained", "missing")
        ),
        f"{_TH}scores</th></tr></thead><tbody>",
    ]
    for s in summaries:
        level = f"{s.confidence:.0%}"
        clustered = f", {s.n_clusters} clusters" if s.n_clusters is not None else ""
        interval = (
            f"{level}: {_number(s.ci_low)} to {_number(s.ci_high)}{clustered} "
            f"({s.method_name}{'; ' + s.caveat if s.caveat else ''})"
            if math.isfinite(s.ci_low)
            else "–"
        )
        if s.passed is not None:
            interval += (
                f"; pass rate {_number(s.pass_rate)} ({s.passed}/{s.pass_n}), "
                f"{level}: {_number(s.pass_low)} to {_number(s.pass_high)}"
            )
        parts.append(
            f'<tr><td style="{_CELL}"><b>{escape(s.grader)}</b></td>{_TD}{s.n:,}</td>'
            f"{_TD}{_number(s.mean)}</td>{_TD}{escape(interval)}</td>{_TD}{s.errors:,}</td>"
            f"{_TD}{s.abstained:,}</td>{_TD}{s.missing:,}</td>"
            f'<td style="{_CELL}">'
            f"{histogram(s.grader, scores.get(s.grader, ()), width=240, height=110)}</td></tr>"
        )
    parts.append("</tbody></table></div>")
    return "".join(parts)
