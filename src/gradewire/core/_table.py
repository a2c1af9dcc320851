"""`Table`: the tabular log value graders return from `get_logs()`."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, ClassVar, TypedDict, TypeVar

from gradewire.core._cells import Cell, as_list, same_cell, to_cell, type_name
from gradewire.core._errors import InvalidInputError, InvalidTypeError, MissingDependencyError
from gradewire.core._table_html import PREVIEW_COLUMNS, PREVIEW_EDGE, render_html, render_preview

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Cell", "Table", "TableDict"]

_TableT = TypeVar("_TableT", bound="Table")


class TableDict(TypedDict):
    """The JSON-ready form of a `Table` (MLflow's table layout)."""

    columns: list[str]
    data: list[list[Cell]]


class Table:
    """An ordered table of scalar cells under unique headers, built column- or row-wise.

    Example:
        >>> table = Table().add_column("Category", ["A", "B"]).add_column("Score", [0.9, 0.7])
        >>> table = Table(initial_headers=["Category", "Score"]).add_row(["A", 0.9])
    """

    __slots__ = ("_headers", "_rows")
    __hash__: ClassVar[None] = None  # type: ignore[assignment]

    def __init__(self, initial_headers: Iterable[str] | None = None) -> None:
        """Create a table, optionally with headers so that rows can be added straight away.

        Args:
            initial_headers: Unique column names; any str, even an empty one, is allowed.

        Raises:
            InvalidTypeError: A header is not a str, or a single str was passed.
            InvalidInputError: A header appears twice.
        """
        self._headers: list[str] = []
        self._rows: list[list[Cell]] = []
        if initial_headers is not None:
            example = "Table(initial_headers=['Category', 'Score'])"
            for name in as_list(initial_headers, "initial_headers", example):
                self._headers.append(self._checked_header(name))

    def _checked_header(self, name: object) -> str:
        if not isinstance(name, str):
            raise InvalidTypeError(f"header names must be str, got {type_name(name)}: {name!r}")
        if name in self._headers:
            raise InvalidInputError(
                f"duplicate header {name!r}; every column needs a unique name "
                f"(existing headers: {self._headers})"
            )
        return str.__str__(name)

    def add_column(self: _TableT, name: str, values: Iterable[object]) -> _TableT:
        """Append a column; the first column of a table without headers sets the row count.

        Args:
            name: The new header, different from the existing ones.
            values: One value per row, copied into the table.

        Returns:
            This table, so calls can be chained.

        Raises:
            InvalidInputError: Duplicate name, or the number of values differs from the row count.
            InvalidTypeError: A value is not a supported cell type.
        """
        header = self._checked_header(name)
        example = f"add_column({header!r}, [0.9, 0.7])"
        cells = [to_cell(v, header) for v in as_list(values, "values", example)]
        if not self._headers:
            self._rows = [[cell] for cell in cells]
        elif len(cells) != len(self._rows):
            why = f" (it has headers {self._headers} but no rows yet)" if not self._rows else ""
            raise InvalidInputError(
                f"column {header!r} has {len(cells)} values but the table has {len(self._rows)} "
                f"rows{why}; pass one value per row"
            )
        else:
            for row, cell in zip(self._rows, cells, strict=True):
                row.append(cell)
        self._headers.append(header)
        return self

    def add_row(self: _TableT, values: Iterable[object] | Mapping[str, object]) -> _TableT:
        """Append a row, given in header order or as a mapping from header to value.

        Args:
            values: A sequence with one value per header, or a mapping whose keys are exactly
                the headers, in any order. Values are copied into the table.

        Returns:
            This table, so calls can be chained.

        Raises:
            InvalidInputError: The table has no headers, or the values do not match them.
            InvalidTypeError: A value is not a supported cell type, or `values` is a str.
        """
        if not self._headers:
            raise InvalidInputError(
                "the table has no headers; pass initial_headers=[...] to Table() or add columns "
                "with add_column() before adding rows"
            )
        if isinstance(values, Mapping):
            missing = [h for h in self._headers if h not in values]
            extra = [k for k in values if k not in self._headers]
            if missing or extra:
                raise InvalidInputError(
                    f"row keys must be exactly the headers {self._headers}; "
                    f"missing: {missing}, unexpected: {extra}"
                )
            raw = [values[h] for h in self._headers]
        else:
            raw = as_list(values, "a row", f"add_row({['...'] * len(self._headers)})")
            if len(raw) != len(self._headers):
                raise InvalidInputError(
                    f"row has {len(raw)} values but the table has {len(self._headers)} columns "
                    f"{self._headers}; pass one value per column"
                )
        self._rows.append([to_cell(v, h) for v, h in zip(raw, self._headers, strict=True)])
        return self

    @property
    def headers(self) -> list[str]:
        """A copy of the column names, in order."""
        return list(self._headers)

    @property
    def rows(self) -> list[list[Cell]]:
        """A copy of the rows, each a list of cells in header order."""
        return [list(row) for row in self._rows]

    def __len__(self) -> int:
        return len(self._rows)

    def column(self, name: str) -> list[Cell]:
        """Return a copy of the values of column `name` (InvalidInputError if there is none)."""
        if name not in self._headers:
            raise InvalidInputError(f"no column named {name!r}; the headers are {self._headers}")
        index = self._headers.index(name)
        return [row[index] for row in self._rows]

    def __getitem__(self, name: str) -> list[Cell]:
        """``table["Score"]``: the values of a column, as `column` (Adaptive Harmony's form)."""
        return self.column(name)

    def __contains__(self, name: object) -> bool:
        """``"Score" in table``: whether the table has a column of that name."""
        return name in self._headers

    def add_rows(self: _TableT, rows: Iterable[Iterable[object] | Mapping[str, object]]) -> _TableT:
        """Add several rows, each as `add_row` takes it; returns the table, for chaining.

        Raises:
            InvalidInputError: A row does not fit the headers; the rows before it are added.
        """
        if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Iterable):
            raise InvalidTypeError(
                f"add_rows takes a list of rows, not {type_name(rows)}; use add_row for one row"
            )
        for row in rows:
            self.add_row(row)
        return self

    def export(self) -> tuple[list[str], list[list[str]]]:
        """The headers and every cell as ``str(cell)`` (``""`` for an empty cell), by row."""
        return self.headers, [["" if c is None else str(c) for c in row] for row in self._rows]

    def to_records(self) -> list[dict[str, Cell]]:
        """Return one `{header: cell}` dict per row."""
        return [dict(zip(self._headers, row, strict=True)) for row in self._rows]

    def to_dict(self) -> TableDict:
        """Return `{"columns": headers, "data": rows}`; `from_dict` turns it back into a Table."""
        return {"columns": self.headers, "data": self.rows}

    @classmethod
    def from_dict(cls: type[_TableT], data: Mapping[str, object]) -> _TableT:
        """Build a table from the output of `to_dict`, for example after a JSON round trip.

        Raises:
            InvalidTypeError: The input or one of its parts has the wrong type.
            InvalidInputError: Keys are missing or unexpected, or a row does not fit the columns.
        """
        if not isinstance(data, Mapping):
            raise InvalidTypeError(
                "from_dict expects a dict like {'columns': ['A'], 'data': [[1], [2]]}, "
                f"got {type_name(data)}"
            )
        missing = sorted({"columns", "data"} - set(data))
        extra = [k for k in data if k not in ("columns", "data")]
        if missing or extra:
            raise InvalidInputError(
                "a table dict has exactly the keys 'columns' and 'data'; "
                f"missing: {missing}, unexpected: {extra}"
            )
        columns = as_list(data["columns"], "'columns'", "['Category', 'Score']")
        table = cls(initial_headers=columns)  # type: ignore[arg-type]  # __init__ checks each
        for i, row in enumerate(as_list(data["data"], "'data'", "[['A', 0.9], ['B', 0.7]]")):
            try:
                table.add_row(as_list(row, "a row", "['A', 0.9]"))
            except InvalidInputError as exc:
                raise type(exc)(f"data[{i}]: {exc}") from None
        return table

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Table):
            return NotImplemented
        return (
            self._headers == other._headers
            and len(self._rows) == len(other._rows)
            and all(
                same_cell(x, y)
                for a, b in zip(self._rows, other._rows, strict=True)
                for x, y in zip(a, b, strict=True)
            )
        )

    def __copy__(self: _TableT) -> _TableT:
        # The default shallow copy would share the row lists, so adding to the copy would change
        # this table too; cells are immutable scalars, so a deep copy is cheap.
        return copy.deepcopy(self)

    def __repr__(self) -> str:
        headers = self._headers
        if len(headers) > PREVIEW_COLUMNS:  # a wide table's repr stays one short line
            head = ", ".join(map(repr, headers[:PREVIEW_EDGE]))
            tail = ", ".join(map(repr, headers[-PREVIEW_EDGE:]))
            shown = f"[{head}, ..., {tail}] ({len(headers)} columns)"
        else:
            shown = repr(headers)
        return f"{type(self).__name__}(headers={shown}, rows={len(self._rows)})"

    def to_pandas(self) -> pd.DataFrame:
        """Return a pandas DataFrame with the headers as columns (needs `gradewire[pandas]`).

        Raises:
            MissingDependencyError: pandas is not installed (the message has the pip command).
        """
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingDependencyError(
                "pandas", extra="pandas", purpose="convert a Table to a DataFrame"
            ) from exc
        frame: pd.DataFrame = pd.DataFrame(self.rows, columns=self.headers)
        return frame

    def to_html(self, *, max_cell_chars: int | None = None) -> str:
        """Render a self-contained, inline-styled HTML `<table>`.

        Every header and cell is HTML-escaped, since cells often hold untrusted model output.

        Args:
            max_cell_chars: If set, cell text longer than this is cut to this many characters,
                the last one being "…". Headers are never cut.

        Raises:
            InvalidTypeError: `max_cell_chars` is not an int.
            InvalidInputError: `max_cell_chars` is smaller than 1.
        """
        if max_cell_chars is not None:
            if isinstance(max_cell_chars, bool) or not isinstance(max_cell_chars, int):
                raise InvalidTypeError(
                    f"max_cell_chars must be an int or None, got {type_name(max_cell_chars)}"
                )
            if max_cell_chars < 1:
                raise InvalidInputError(f"max_cell_chars must be at least 1, got {max_cell_chars}")
        return render_html(self._headers, self._rows, max_cell_chars)

    def to_html_table(self) -> str:
        """`to_html()` under Adaptive Harmony's name (every cell escaped, as always here)."""
        return self.to_html()

    def _repr_html_(self) -> str:
        # The notebook view: a long table shows its head and tail, as pandas does, so that
        # displaying a table of 100,000 completions stays a few kilobytes. to_html() is whole.
        return render_preview(self._headers, self._rows)
