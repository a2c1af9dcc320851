"""TablePolicy: how much of each logged table a sink sends, and how often."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._logging_core import LogValue
from gradewire.core._table import Cell, Table

__all__ = ["PolicyState", "TablePolicy", "cut_text", "spread_positions"]

logger = logging.getLogger("gradewire")

_Kind = type[bool] | type[int] | type[float] | type[str]


def _check_count(name: str, value: object, *, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        allowed = "an int or None" if optional else "an int"
        raise InvalidTypeError(f"TablePolicy.{name} must be {allowed}, not {value!r}")
    if value < 1:
        off = " (or None for no limit)" if optional else ""
        raise InvalidInputError(f"TablePolicy.{name} must be at least 1{off}, not {value}")


@dataclass(frozen=True, kw_only=True)
class TablePolicy:
    """What a sink does to the tables (and the cadence of the numbers) it is given.

    A sink applies it step by step through a `PolicyState`:

    - Cadence: a step is compared with ``step % every == 0``, so step 0 always passes.
      A step that is not a multiple of ``table_every`` drops its tables; one that is not
      a multiple of ``metrics_every`` drops its numbers.
    - Column types stay stable per table key: the first non-None value of a column fixes
      its type (bool, int, float or str). Later values are coerced: an int or bool into
      a float column becomes a float, a bool into an int column an int, anything into a
      str column ``str(value)``. A float in an int column widens that column to float
      from then on (ints are written as floats), the one change a type ever makes, so no
      fraction is lost. Any other mismatch (a str in a number column, a number in a bool
      column) becomes None, with one warning per column through `logging`. A column that
      disappears is kept and filled with None; a new column is appended at the end.
    - Rows: a table longer than ``max_rows`` is sampled deterministically. When the
      ``sort_by`` column exists and holds numbers, the sample has the best (highest) and
      the worst (lowest) row by that column and an even spread over the rows sorted by it
      (missing and NaN values sort last); otherwise an even spread over the rows in their
      order, first and last included. Kept rows stay in their original order.
    - Cells: a str cell longer than ``max_cell_chars`` is cut and ends with a visible
      ``… [+N chars]`` marker, the whole staying within ``max_cell_chars``.

    Attributes:
        max_rows: Rows kept per table per step (None: all). With 1, only the best row
            (or the first) is kept.
        sort_by: The column that ranks rows for sampling.
        max_cell_chars: Longest str cell (None: no limit).
        table_every: Send tables only at steps that are multiples of this.
        metrics_every: Send numbers only at steps that are multiples of this.

    Example:
        >>> policy = TablePolicy(max_rows=20, table_every=10)
    """

    max_rows: int | None = 100
    sort_by: str | None = "Score"
    max_cell_chars: int | None = 2000
    table_every: int = 1
    metrics_every: int = 1

    def __post_init__(self) -> None:
        _check_count("max_rows", self.max_rows, optional=True)
        _check_count("max_cell_chars", self.max_cell_chars, optional=True)
        _check_count("table_every", self.table_every, optional=False)
        _check_count("metrics_every", self.metrics_every, optional=False)
        if self.sort_by is not None and not isinstance(self.sort_by, str):
            raise InvalidTypeError(
                f"TablePolicy.sort_by must be a column name (str) or None, not {self.sort_by!r}"
            )


def spread_positions(n: int, k: int) -> list[int]:
    """``k`` distinct positions evenly spread over ``range(n)``, first and last included."""
    if k >= n:
        return list(range(n))
    if k == 1:
        return [0]
    # Integer rounding half up of i * (n-1) / (k-1): exact, and distinct since the step is >= 1.
    return [(2 * i * (n - 1) + (k - 1)) // (2 * (k - 1)) for i in range(k)]


def cut_text(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters, ending with ``… [+N chars]`` when it fits."""
    n = len(text)
    if n <= limit:
        return text
    for digits in range(1, len(str(n)) + 1):
        keep = limit - len("… [+ chars]") - digits
        if keep >= 1 and len(str(n - keep)) <= digits:
            return f"{text[:keep]}… [+{n - keep} chars]"
    # Too short for the marker: a bare ellipsis still shows that text is missing.
    return text[: limit - 1] + "…"


def _as_float(value: Cell) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond float range
        return math.inf if value > 0 else -math.inf  # type: ignore[operator]


def _number(cell: Cell) -> float | None:
    """The cell as a sort key, or None when it is missing, NaN or not a number."""
    if isinstance(cell, bool) or not isinstance(cell, int | float):
        return None
    value = _as_float(cell)
    return None if math.isnan(value) else value


class PolicyState:
    """A `TablePolicy` in action: remembers each table's column types from step to step.

    `apply` is pure except for that memory: it never changes the logs or tables it is
    given and returns new ones. Not thread-safe by itself; `BaseSink` calls it under its
    lock.
    """

    def __init__(self, policy: TablePolicy) -> None:
        if not isinstance(policy, TablePolicy):
            raise InvalidTypeError(f"expected a TablePolicy, not {type(policy).__name__}")
        self.policy = policy
        self._columns: dict[str, dict[str, _Kind | None]] = {}
        self._told: set[tuple[str, ...]] = set()

    def apply(self, logs: Mapping[str, LogValue], step: int) -> dict[str, LogValue]:
        """The logs of one step as the sink should send them (a new dict)."""
        keep_tables = step % self.policy.table_every == 0
        keep_numbers = step % self.policy.metrics_every == 0
        out: dict[str, LogValue] = {}
        for key, value in logs.items():
            if isinstance(value, Table):
                if keep_tables:
                    out[key] = self.apply_table(key, value)
            elif keep_numbers:
                out[key] = value
        return out

    def apply_table(self, key: str, table: Table) -> Table:
        """One table under ``key`` with stable column types, sampled rows and cut cells."""
        kinds = self._columns.setdefault(key, {})
        first_time = not kinds
        headers = table.headers
        for name in headers:
            if name not in kinds:
                kinds[name] = None
                if not first_time:
                    self._tell(
                        logging.INFO,
                        (key, name, "new"),
                        "table %r gained column %r; it is appended after the known columns",
                        key,
                        name,
                    )
        rows = table.rows
        where = {name: i for i, name in enumerate(headers)}
        columns: list[list[Cell]] = []
        for name in kinds:
            if name in where:
                index = where[name]
                values = [row[index] for row in rows]
            else:
                self._tell(
                    logging.INFO,
                    (key, name, "gone"),
                    "table %r lost column %r; it is kept and filled with None",
                    key,
                    name,
                )
                values = [None] * len(rows)
            columns.append(self._coerce(key, name, values))
        out_headers = list(kinds)
        kept = self._sample(out_headers, columns, len(rows))
        limit = self.policy.max_cell_chars
        result = Table(initial_headers=out_headers)
        for r in kept:
            row: list[Cell] = []
            for column in columns:
                cell = column[r]
                if limit is not None and isinstance(cell, str) and len(cell) > limit:
                    cell = cut_text(cell, limit)
                row.append(cell)
            result.add_row(row)
        return result

    def _coerce(self, key: str, name: str, values: list[Cell]) -> list[Cell]:
        kinds = self._columns[key]
        kind = kinds[name]
        out: list[Cell] = []
        for value in values:
            if value is None:
                out.append(None)
                continue
            have = type(value)
            if kind is None:
                kind = have
            if have is kind:
                out.append(value)
            elif kind is str:
                out.append(str(value))
            elif kind is float and have in (int, bool):
                out.append(_as_float(value))
            elif kind is int and have is bool:
                out.append(int(value))
            elif kind is int and have is float:
                kind = float
                out = [None if v is None else _as_float(v) for v in out]
                out.append(value)
                self._tell(
                    logging.INFO,
                    (key, name, "widened"),
                    "column %r of table %r got a float in an int column; it holds floats now",
                    name,
                    key,
                )
            else:
                out.append(None)
                self._tell(
                    logging.WARNING,
                    (key, name, "mismatch", have.__name__),
                    "column %r of table %r holds %s values, so a %s value was replaced by "
                    "None; log one type per column (e.g. convert with str() or float())",
                    name,
                    key,
                    kind.__name__,
                    have.__name__,
                )
        kinds[name] = kind
        return out

    def _sample(self, headers: list[str], columns: list[list[Cell]], n: int) -> list[int]:
        limit = self.policy.max_rows
        if limit is None or n <= limit:
            return list(range(n))
        sort_by = self.policy.sort_by
        scores: list[float | None] | None = None
        if sort_by is not None and sort_by in headers:
            column = columns[headers.index(sort_by)]
            numeric = all(
                c is None or (isinstance(c, int | float) and not isinstance(c, bool))
                for c in column
            )
            if numeric:
                scores = [_number(c) for c in column]
        if scores is None or all(s is None for s in scores):
            return spread_positions(n, limit)
        ranked = sorted(range(n), key=lambda r: (scores[r] is None, -(scores[r] or 0.0), r))
        worst = sum(s is not None for s in scores) - 1
        positions = spread_positions(n, limit)
        if limit >= 2 and worst not in positions:
            # Missing values sort last, so the spread ends on one of them: swap the nearest
            # pick (never the best) for the worst scored row.
            nearest = min(positions[1:], key=lambda p: (abs(p - worst), p))
            positions[positions.index(nearest)] = worst
        return sorted(ranked[p] for p in positions)

    def _tell(self, level: int, once: tuple[str, ...], message: str, *args: object) -> None:
        if once not in self._told:
            self._told.add(once)
            logger.log(level, message, *args)
