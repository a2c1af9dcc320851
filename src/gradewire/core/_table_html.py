"""A `Table` as a self-contained HTML `<table>`: inline styles, every cell escaped.

Two renderings: the whole table (`render_html`, for a file or a tracker) and the notebook
view (`render_preview`), which shows a long or wide table as pandas does in a notebook:
its first and last rows and columns around an ellipsis, and its size under it, so a table
of any length stays a few kilobytes of HTML.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from gradewire.core._cells import Cell

__all__ = [
    "PREVIEW_CELL_CHARS",
    "PREVIEW_COLUMNS",
    "PREVIEW_EDGE",
    "PREVIEW_ROWS",
    "render_html",
    "render_preview",
]

PREVIEW_ROWS = 60
"""A table with more rows shows only its first and last `PREVIEW_EDGE` (pandas' max_rows)."""
PREVIEW_COLUMNS = 20
"""A table with more columns shows only its first and last `PREVIEW_EDGE`."""
PREVIEW_EDGE = 5
"""Rows (and columns) shown at each end of a table cut in the notebook view."""
PREVIEW_CELL_CHARS = 300
"""Cell text longer than this is cut in the notebook view (a completion can be megabytes)."""

_CELL_STYLE = "border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; white-space: pre-wrap"
_TABLE_OPEN = '<table style="border-collapse: collapse; font-family: sans-serif; font-size: 13px">'
_TH_OPEN = f'<th style="{_CELL_STYLE}; text-align: left; background: #f2f2f2">'
_TD_TEXT_OPEN = f'<td style="{_CELL_STYLE}; text-align: left">'
_TD_NUMBER_OPEN = f'<td style="{_CELL_STYLE}; text-align: right">'
_TD_GAP = f'<td class="gap" style="{_CELL_STYLE}; text-align: center; color: #777">…</td>'
_TH_GAP = f'<th class="gap" style="{_CELL_STYLE}; text-align: center; background: #f2f2f2">…</th>'


def _cell_text(cell: Cell) -> str:
    if cell is None:
        return ""
    if isinstance(cell, bool):
        return "true" if cell else "false"
    return format(cell, ".6g") if isinstance(cell, float) else str(cell)


def _td(cell: Cell, max_cell_chars: int | None) -> str:
    text = _cell_text(cell)
    if max_cell_chars is not None and len(text) > max_cell_chars:
        # Cut before escaping so that an entity such as &amp; is never split.
        text = text[: max_cell_chars - 1] + "…"
    is_number = isinstance(cell, int | float) and not isinstance(cell, bool)
    return f"{_TD_NUMBER_OPEN if is_number else _TD_TEXT_OPEN}{html.escape(text, quote=True)}</td>"


def render_html(
    headers: Sequence[str], rows: Sequence[Sequence[Cell]], max_cell_chars: int | None
) -> str:
    """The table's HTML; cells longer than ``max_cell_chars`` are cut, ending in "…"."""
    parts = [_TABLE_OPEN, "<thead><tr>"]
    parts.extend(f"{_TH_OPEN}{html.escape(h, quote=True)}</th>" for h in headers)
    parts.append("</tr></thead>\n<tbody>")
    for row in rows:
        parts.append("\n<tr>")
        parts.extend(_td(cell, max_cell_chars) for cell in row)
        parts.append("</tr>")
    parts.append("\n</tbody></table>")
    return "".join(parts)


def _shown(count: int, limit: int) -> list[int | None]:
    """The indexes shown of ``count`` rows or columns, None where some are left out."""
    if count <= limit:
        return list(range(count))
    return [*range(PREVIEW_EDGE), None, *range(count - PREVIEW_EDGE, count)]


def render_preview(headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    """The notebook view: head and tail rows and columns, cut cells, and the table's size.

    A table with nothing to leave out is shown whole, exactly as `render_html` draws it
    (as pandas shows its dimensions only under a cut table, and as Adaptive Harmony's
    `_repr_html_` equals its `to_html_table`).
    """
    if (
        len(rows) <= PREVIEW_ROWS
        and len(headers) <= PREVIEW_COLUMNS
        and all(len(_cell_text(cell)) <= PREVIEW_CELL_CHARS for row in rows for cell in row)
    ):
        return render_html(headers, rows, None)
    columns = _shown(len(headers), PREVIEW_COLUMNS)
    parts = ["<div>", _TABLE_OPEN, "<thead><tr>"]
    for c in columns:
        parts.append(
            _TH_GAP if c is None else f"{_TH_OPEN}{html.escape(headers[c], quote=True)}</th>"
        )
    parts.append("</tr></thead>\n<tbody>")
    for r in _shown(len(rows), PREVIEW_ROWS):
        parts.append("\n<tr>")
        if r is None:
            parts.extend(_TD_GAP for _ in columns)
        else:
            row = rows[r]
            parts.extend(_TD_GAP if c is None else _td(row[c], PREVIEW_CELL_CHARS) for c in columns)
        parts.append("</tr>")
    parts.append("\n</tbody></table>")
    parts.append(
        f'<p style="font-family: sans-serif; font-size: 12px; color: #555">'
        f"{len(rows):,} rows × {len(headers):,} columns</p></div>"
    )
    return "".join(parts)
