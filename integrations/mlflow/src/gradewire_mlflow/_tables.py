"""One appending JSON table per table key, in MLflow's table format, kept locally.

``mlflow.log_table`` appends by downloading the file, concatenating and uploading it again,
and records every new file in the ``mlflow.loggedArtifacts`` run tag, which breaks after
about a hundred files. Here each key gets one file (``tables/<key>/rows.json``) whose rows
are kept in memory as JSON text, so appending never downloads: the file is written whole.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from gradewire import Table

__all__ = [
    "ALWAYS_REWRITE_BYTES",
    "STEP_COLUMN",
    "TableState",
    "html_page",
    "html_path",
    "part_path",
    "rename_column",
    "restore_column",
]

STEP_COLUMN = "step"
"""The column that holds the training step, first in every JSON table."""

ALWAYS_REWRITE_BYTES = 1 << 20
"""A table file up to this size is rewritten on every step that adds rows to it."""

# Past ALWAYS_REWRITE_BYTES, a file is rewritten once the rows not yet uploaded reach this
# fraction of what was: every upload is then at most (1 + 1/8) times the one before, so the
# bytes sent stay within 9x the final file instead of growing with the square of its rows.
_REWRITE_FRACTION = 8

_STEP_LIKE = re.compile(rf"{STEP_COLUMN}_*")


def rename_column(name: str) -> str:
    """A table's own column name in the JSON file: ``step``, ``step_``, ... gain one ``_``."""
    return name + "_" if _STEP_LIKE.fullmatch(name) else name


def restore_column(name: str) -> str:
    """The inverse of `rename_column`, for readers of the JSON file."""
    return name[:-1] if _STEP_LIKE.fullmatch(name) and name != STEP_COLUMN else name


def html_page(table: Table) -> str:
    """The HTML page of a table, every cell escaped, safe to write as UTF-8."""
    # Lone surrogates from model output become character references.
    return table.to_html().encode("utf-8", "xmlcharrefreplace").decode("utf-8")


def html_path(key: str, step: int, index: int) -> str:
    """Where the HTML page of table ``key`` at ``step`` goes (``index``: the nth at that step)."""
    extra = "" if index == 0 else f"-{index + 1}"
    return f"tables/{key}/step_{step:08d}{extra}.html"


def part_path(key: str, part: int) -> str:
    """Where part ``part`` (1, 2, ...) of the JSON table of ``key`` goes."""
    return f"tables/{key}/rows.json" if part == 1 else f"tables/{key}/rows-{part:04d}.json"


def _cell(value: object) -> object:
    # JSON has no NaN or infinity; pandas writes null for them too.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass
class TableState:
    """The JSON table of one key: its columns and the rows of the part being written.

    Rows are JSON text (ASCII escapes, so lone surrogates from model output are writable),
    each holding as many cells as there were columns when it was added; shorter rows are
    padded with null when the file is rendered. `clone` gives a copy to change, so a write
    that fails leaves the committed state as it was.
    """

    key: str
    columns: list[str] = field(default_factory=list)
    part: int = 1
    rows: list[str] = field(default_factory=list)
    widths: list[int] = field(default_factory=list)
    size: int = 0
    uploaded_rows: int = 0
    uploaded_size: int = 0
    page_step: int = -1
    page_count: int = 0
    renamed: bool = False
    found: dict[int, list[str]] = field(default_factory=dict)

    @classmethod
    def from_file(cls, key: str, part: int, text: str) -> TableState:
        """The state of a part already in the run (written by an earlier process), to go on.

        Its rows by step are kept in `found`, so that a step sent again (the call in doubt
        when that process was killed) does not add its rows twice.

        Raises:
            ValueError: The file is not a JSON table that this sink wrote.
        """
        data = json.loads(text)
        columns, rows = data.get("columns"), data.get("data")
        if not isinstance(columns, list) or not columns or columns[0] != STEP_COLUMN:
            raise ValueError(f"not a gradewire table: its first column is not {STEP_COLUMN!r}")
        if not isinstance(rows, list) or not all(
            isinstance(row, list) and len(row) == len(columns) and isinstance(row[0], int)
            for row in rows
        ):
            raise ValueError("its rows are not lists as long as its columns, each with a step")
        state = cls(key, columns=[str(c) for c in columns[1:]], part=part)
        for row in rows:
            text_row = json.dumps(row, allow_nan=False)
            state.rows.append(text_row)
            state.widths.append(len(columns))
            state.size += len(text_row) + 2
            state.found.setdefault(row[0], []).append(text_row)
        state.mark_uploaded()
        return state

    def clone(self) -> TableState:
        """A copy whose lists can change without touching this one."""
        copy = TableState(**self.__dict__)
        copy.columns = list(self.columns)
        copy.rows = list(self.rows)
        copy.widths = list(self.widths)
        copy.found = dict(self.found)
        return copy

    @property
    def path(self) -> str:
        """The artifact path of the part being written."""
        return part_path(self.key, self.part)

    def next_page(self, step: int) -> str:
        """The artifact path for the next HTML page of this table at ``step``."""
        if step != self.page_step:
            self.page_step, self.page_count = step, 0
        path = html_path(self.key, step, self.page_count)
        self.page_count += 1
        return path

    def add(self, table: Table, step: int) -> bool:
        """Append the rows of ``table`` at ``step``; True if a column had to be renamed."""
        renamed = False
        where: list[int] = []
        for name in table.headers:
            column = rename_column(name)
            renamed = renamed or column != name
            if column not in self.columns:
                self.columns.append(column)
            where.append(self.columns.index(column))
        width = len(self.columns)
        texts: list[str] = []
        for row in table.rows:
            cells: list[object] = [None] * width
            for index, value in zip(where, row, strict=True):
                cells[index] = _cell(value)
            texts.append(json.dumps([step, *cells], allow_nan=False))
        if self.found.pop(step, None) == [self._padded(t) for t in texts]:
            return renamed  # the file has these rows already: a step sent again
        for text in texts:
            self.rows.append(text)
            self.widths.append(width + 1)
            self.size += len(text) + 2
        return renamed

    def _padded(self, text: str) -> str:
        """A row as `render` writes it: as wide as the table."""
        missing = len(self.columns) + 1 - len(json.loads(text))
        return text if not missing else text[:-1] + ", null" * missing + "]"

    @property
    def unsent_rows(self) -> int:
        """Rows of the current part not in the uploaded file yet."""
        return len(self.rows) - self.uploaded_rows

    def due(self) -> bool:
        """Whether the current part should be uploaded now (see `ALWAYS_REWRITE_BYTES`)."""
        if not self.unsent_rows:
            return False
        if self.size <= ALWAYS_REWRITE_BYTES:
            return True
        return (self.size - self.uploaded_size) * _REWRITE_FRACTION >= self.uploaded_size

    def render(self, rows: int | None = None) -> str:
        """The file of the current part, split-orient JSON as ``mlflow.log_table`` writes it."""
        width = len(self.columns) + 1
        head = json.dumps({"columns": [STEP_COLUMN, *self.columns]})[:-1]
        body = []
        for text, have in zip(self.rows[:rows], self.widths[:rows], strict=True):
            body.append(text if have == width else text[:-1] + ", null" * (width - have) + "]")
        return f'{head}, "data": [' + ", ".join(body) + "]}"

    def mark_uploaded(self) -> None:
        """Record that the current part was uploaded with every row it holds."""
        self.uploaded_rows = len(self.rows)
        self.uploaded_size = self.size

    def seal(self, rows: int) -> str:
        """Close the current part after ``rows`` rows, start the next; the closed file's text."""
        text = self.render(rows)
        self.rows = self.rows[rows:]
        self.widths = self.widths[rows:]
        self.size = sum(len(t) + 2 for t in self.rows)
        self.uploaded_rows = self.uploaded_size = 0
        self.part += 1
        return text
