"""Turning a gradewire `Table` into a typed ``wandb.Table`` W&B will not cut short."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from gradewire import Table
from gradewire.sinks import PolicyState, TablePolicy

if TYPE_CHECKING:
    import wandb

__all__ = ["column_dtypes", "sample_rows", "text_for_mixed_columns", "to_wandb_table"]

logger = logging.getLogger("gradewire")

_Dtype = type[bool] | type[int] | type[float] | type[str] | None


def column_dtypes(table: Table) -> tuple[list[_Dtype], list[int]]:
    """The W&B dtype of each column, and the columns that mix types.

    A column holding one kind of value (None aside) gets that kind; ints and floats
    together make a float column; a column of only None gets None (W&B types it as
    None). Any other mix (text with numbers, bools with numbers) cannot be typed: those
    columns are listed so that the caller writes them as text.
    """
    kinds: list[set[type]] = [set() for _ in table.headers]
    for row in table.rows:
        for found, cell in zip(kinds, row, strict=True):
            if cell is not None:
                found.add(type(cell))
    dtypes: list[_Dtype] = []
    mixed: list[int] = []
    for i, found in enumerate(kinds):
        if not found:
            dtypes.append(None)
        elif len(found) == 1:
            dtypes.append(next(iter(found)))
        elif found == {int, float}:
            dtypes.append(float)
        else:
            dtypes.append(str)
            mixed.append(i)
    return dtypes, mixed


def text_for_mixed_columns(key: str, table: Table, told: set[tuple[str, str]]) -> Table:
    """``table`` with every mixed column (see `column_dtypes`) turned into text.

    W&B refuses a row whose cell does not fit its column's type, so a mixed column is
    written as ``str(cell)`` (None kept), with one warning per key and column (``told``
    remembers which were reported). A table without mixed columns is returned as is.
    """
    _, mixed = column_dtypes(table)
    if not mixed:
        return table
    rows = table.rows
    for index in mixed:
        name = table.headers[index]
        if (key, name) not in told:
            told.add((key, name))
            logger.warning(
                "column %r of table %r mixes value types, which a W&B table cannot hold; it "
                "is logged as text: log one type per column, or keep a TablePolicy on the "
                "sink to fix each column's type",
                name,
                key,
            )
        for row in rows:
            if row[index] is not None:
                row[index] = str(row[index])
    return Table.from_dict({"columns": table.headers, "data": rows})


def to_wandb_table(wandb_module: Any, table: Table) -> wandb.Table:
    """A ``wandb.Table`` with one dtype per column, from a table without mixed columns."""
    dtypes, _ = column_dtypes(table)
    result: wandb.Table = wandb_module.Table(columns=table.headers, data=table.rows, dtype=dtypes)
    return result


def sample_rows(key: str, table: Table, limit: int, sort_by: str | None) -> Table:
    """``table`` as it is when it fits in ``limit`` rows, else ``limit`` rows chosen by a policy.

    W&B keeps only the first ``wandb.Table.MAX_ROWS`` rows (10,000 in 0.31) of a table in
    the run's files, without a warning. This keeps that many instead, chosen as a
    `TablePolicy` chooses (best and worst by ``sort_by``, an even spread between), and
    says so through `logging`. The table must have no mixed columns, so the policy's type
    fixing changes nothing; a fresh policy state per call keeps earlier steps out of it.
    """
    if len(table) <= limit:
        return table
    logger.warning(
        "table %r has %d rows, more than the %d a W&B table keeps (wandb.Table.MAX_ROWS); "
        "%d sampled rows are logged instead: pass a TablePolicy with a smaller max_rows to "
        "the sink to choose the sample size yourself",
        key,
        len(table),
        limit,
        limit,
    )
    policy = TablePolicy(max_rows=limit, sort_by=sort_by, max_cell_chars=None)
    return PolicyState(policy).apply_table(key, table)
