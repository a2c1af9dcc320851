"""Text for terminals and HTML: numbers as people read them, untrusted ids made harmless."""

from __future__ import annotations

import html
import math
from collections.abc import Hashable

__all__ = ["cell_html", "format_id", "format_number", "printable"]

# C0 and C1 controls (an escape sequence can rewrite a terminal), and the bidirectional
# overrides and isolates that make text display in another order than it reads.
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]}
_CONTROLS.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
_CONTROLS.update(
    {c: f"\\u{c:04x}" for c in [0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]}
)
_ID_CHARS = 60


def printable(text: str) -> str:
    """``text`` with control and bidirectional-override characters escaped."""
    return text.translate(_CONTROLS)


def format_id(sample_id: Hashable) -> str:
    """A sample id for a terminal: escaped, and cut to a readable length."""
    text = printable(sample_id if isinstance(sample_id, str) else repr(sample_id))
    return text if len(text) <= _ID_CHARS else text[: _ID_CHARS - 1] + "…"


def format_number(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` decimals (``nan`` and ``inf`` as such)."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}"


def cell_html(text: str) -> str:
    """``text`` escaped for an HTML element or attribute, control characters shown."""
    return html.escape(printable(text), quote=True)
