"""A `Table` as a self-contained HTML `<table>`: inline styles, every cell escaped."""

from __future__ import annotations

import html
from collections.abc import Sequence

from gradewire.core._cells import Cell

__all__ = ["render_html"]

_CELL_STYLE = "border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; white-space: pre-wrap"
_TABLE_OPEN = '<table style="border-collapse: collapse; font-family: sans-serif; font-size: 13px">'
_TH_OPEN = f'<th style="{_CELL_STYLE}; text-align: left; background: #f2f2f2">'
_TD_TEXT_OPEN = f'<td style="{_CELL_STYLE}; text-align: left">'
_TD_NUMBER_OPEN = f'<td style="{_CELL_STYLE}; text-align: right">'


def _cell_text(cell: Cell) -> str:
    if cell is None:
        return ""
    if isinstance(cell, bool):
        return "true" if cell else "false"
    return format(cell, ".6g") if isinstance(cell, float) else str(cell)


def render_html(
    headers: Sequence[str], rows: Sequence[Sequence[Cell]], max_cell_chars: int | None
) -> str:
    """The table's HTML; cells longer than ``max_cell_chars`` are cut, ending in "…"."""
    parts = [_TABLE_OPEN, "<thead><tr>"]
    parts.extend(f"{_TH_OPEN}{html.escape(h, quote=True)}</th>" for h in headers)
    parts.append("</tr></thead>\n<tbody>")
    for row in rows:
        parts.append("\n<tr>")
        for cell in row:
            text = _cell_text(cell)
            if max_cell_chars is not None and len(text) > max_cell_chars:
                # Cut before escaping so that an entity such as &amp; is never split.
                text = text[: max_cell_chars - 1] + "…"
            is_number = isinstance(cell, int | float) and not isinstance(cell, bool)
            parts.append(_TD_NUMBER_OPEN if is_number else _TD_TEXT_OPEN)
            parts.append(f"{html.escape(text, quote=True)}</td>")
        parts.append("</tr>")
    parts.append("\n</tbody></table>")
    return "".join(parts)
