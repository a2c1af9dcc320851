"""ConsoleSink: a readable block per step on a text stream."""

from __future__ import annotations

import json
import shutil
import sys
from typing import IO, Any

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._histogram import Histogram
from gradewire.core._logging_core import LogValue
from gradewire.core._table import Cell, Table
from gradewire.sinks._base_sink import BaseSink
from gradewire.sinks._table_policy import TablePolicy

__all__ = ["ConsoleSink", "format_number", "format_value", "printable"]

# Control characters in untrusted text could move the cursor or recolour the terminal
# (ANSI escapes); they are shown escaped instead.
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]}
_CONTROLS.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})


def format_value(value: float | Histogram) -> str:
    """A number as `format_number` writes it; a histogram as its counts over its range."""
    if isinstance(value, Histogram):
        counts = " ".join(str(c) for c in value.counts)
        outside = value.below + value.above
        extra = f", {outside} outside" if outside else ""
        return f"histogram [{value.edges[0]:g}, {value.edges[-1]:g}]: {counts}{extra}"
    return format_number(value)


def format_number(value: float) -> str:
    """An int as it is, a float with up to 6 significant digits (``nan``, ``inf`` as such)."""
    if isinstance(value, int):
        return str(value)
    return format(value, ".6g")


def printable(text: str) -> str:
    """``text`` with control characters escaped, safe to print to a terminal."""
    return text.translate(_CONTROLS)


def _cut(line: str, width: int) -> str:
    return line if len(line) <= width else line[: max(width - 1, 0)] + "…"


def _cell(cell: Cell) -> str:
    if cell is None:
        return ""
    if isinstance(cell, bool):
        return "true" if cell else "false"
    if isinstance(cell, int | float):
        return format_number(cell)
    return printable(cell)


def _config_text(value: object) -> str:
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):  # non-str keys or a cycle
        return repr(value)


class ConsoleSink(BaseSink):
    """Prints each step as an aligned block of ``key  value`` lines.

    Tables are summarised as ``key: Table(headers=[...], rows=N)``; with
    ``show_tables=True`` their first rows follow, cut to the terminal width. Each
    `log_config` call prints its keys once, as a ``--- config ---`` block. Control
    characters in keys and cells are printed escaped.

    Example:
        >>> ConsoleSink().log({"score/mean": 0.75, "score/count": 4}, step=1)
        --- step 1 ---
          score/mean   0.75
          score/count  4
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        show_tables: bool = False,
        table_rows: int = 5,
        width: int | None = None,
        table_policy: TablePolicy | None = None,
        all_ranks: bool = False,
    ) -> None:
        """Set up the sink.

        Args:
            stream: Where to print; None means `sys.stdout` at the time of each write (so
                a redirected or captured stdout is honoured).
            show_tables: Also print the headers and first rows of each table.
            table_rows: How many rows of each table to print with ``show_tables``.
            width: Line width for table rows; None uses the terminal's width.
            table_policy: Applied before printing (its cadence can thin the output).
            all_ranks: Print on every process, not only on rank 0.
        """
        for name, value in (("table_rows", table_rows), ("width", width)):
            if value is None and name == "width":
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidTypeError(f"{name} must be an int, not {value!r}")
            if value < 1:
                raise InvalidInputError(f"{name} must be at least 1, not {value}")
        super().__init__(table_policy=table_policy, all_ranks=all_ranks)
        self.stream = stream
        self.show_tables = show_tables
        self.table_rows = table_rows
        self.width = width

    def _print(self, text: str) -> None:
        stream = self.stream if self.stream is not None else sys.stdout
        try:
            stream.write(text)
        except UnicodeEncodeError:
            # A console that cannot show some character (a cp1252 Windows terminal) still
            # gets the line, with that character escaped.
            encoding = getattr(stream, "encoding", None) or "ascii"
            stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
        stream.flush()

    def _line_width(self) -> int:
        return self.width or shutil.get_terminal_size((100, 24)).columns

    def _write(self, logs: dict[str, LogValue], step: int) -> None:
        numbers = [(printable(k), v) for k, v in logs.items() if not isinstance(v, Table)]
        pad = max((len(k) for k, _ in numbers), default=0)
        lines = [f"--- step {step} ---"]
        lines.extend(f"  {key.ljust(pad)}  {format_value(value)}" for key, value in numbers)
        for key, value in logs.items():
            if isinstance(value, Table):
                lines.append(
                    f"  {printable(key)}: Table(headers={value.headers!r}, rows={len(value)})"
                )
                if self.show_tables:
                    lines.extend(self._table_lines(value))
        self._print("\n".join(lines) + "\n")

    def _table_lines(self, table: Table) -> list[str]:
        width = self._line_width()
        out = [_cut("    " + " | ".join(printable(h) for h in table.headers), width)]
        for row in table.rows[: self.table_rows]:
            out.append(_cut("    " + " | ".join(_cell(c) for c in row), width))
        if len(table) > self.table_rows:
            out.append(f"    ... {len(table) - self.table_rows} more rows")
        return out

    def _write_config(self, config: dict[str, Any]) -> None:
        width = self._line_width()
        keys = [printable(k) for k in config]
        pad = max((len(k) for k in keys), default=0)
        lines = ["--- config ---"]
        for key, value in zip(keys, config.values(), strict=True):
            text = value if isinstance(value, str) else _config_text(value)
            lines.append(_cut(f"  {key.ljust(pad)}  {printable(text)}", width))
        self._print("\n".join(lines) + "\n")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(stream={self.stream!r})"
