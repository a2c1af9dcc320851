"""Logged steps as a notebook shows them: the means over steps as lines, then the last step.

Only a picture of the numbers and the last step's values: a run of 10,000 steps, each with
a table, stays a small page (tables show their head and tail, `Table._repr_html_`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from gradewire.core._histogram import Histogram
from gradewire.core._logging_core import LogValue
from gradewire.core._svg import lines
from gradewire.core._table import Table
from gradewire.sinks._console_sink import format_value

__all__ = ["MAX_LINES", "plotted_keys", "render_history"]

MAX_LINES = 8
"""The most metrics drawn over steps in the view (the others are in ``to_pandas()``)."""

_ROW = (
    '<tr><td style="padding: 2px 8px">{}</td>'
    '<td style="padding: 2px 8px; text-align: right">{}</td></tr>'
)


def plotted_keys(steps: Sequence[tuple[int, dict[str, LogValue]]]) -> list[str]:
    """The means drawn over steps: the scores' (``.../score/mean``), else every ``.../mean``."""
    keys: dict[str, None] = {}
    for _, logs in steps:
        for key, value in logs.items():
            if (key.endswith("/mean") or key == "mean") and not isinstance(
                value, Table | Histogram
            ):
                keys[key] = None
    scores = [k for k in keys if k == "score/mean" or k.endswith("/score/mean")]
    return (scores or list(keys))[:MAX_LINES]


def render_history(name: str, steps: Sequence[tuple[int, dict[str, LogValue]]]) -> str:
    """The steps as HTML: every key and cell escaped."""
    if not steps:
        return f"<p>{escape(name)}: nothing logged yet</p>"
    keys = plotted_keys(steps)
    series = {
        key: [
            (float(step), float(value))
            for step, logs in steps
            if key in logs
            and not isinstance(value := logs[key], Table | Histogram)
            and math.isfinite(value)
        ]
        for key in keys
    }
    first, (last, logs) = steps[0][0], steps[-1]
    parts = [
        '<div style="font-family: sans-serif; font-size: 13px">',
        f"<p><b>{escape(name)}</b>: {len(steps):,} logged, steps {first} to {last}</p>",
    ]
    if any(series.values()):
        parts.append(f"<div>{lines(series)}</div>")
    parts.append(f"<p>The last step ({last}):</p>")
    parts.append('<table style="border-collapse: collapse">')
    parts.extend(
        _ROW.format(escape(key), escape(format_value(value)))
        for key, value in logs.items()
        if not isinstance(value, Table | Histogram)
    )
    parts.append("</table>")
    for key, value in logs.items():
        if isinstance(value, Table | Histogram):
            parts.append(f"<p><b>{escape(key)}</b></p>{value._repr_html_()}")
    parts.append("</div>")
    return "".join(parts)
