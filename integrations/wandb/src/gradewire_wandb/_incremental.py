"""One growing W&B table per key: each step's rows added to an INCREMENTAL ``wandb.Table``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from gradewire import Table

if TYPE_CHECKING:
    import wandb

__all__ = ["STEP_COLUMN", "IncrementalTables"]

logger = logging.getLogger("gradewire")

STEP_COLUMN = "step"
"""The first column of every incremental table: the step the row was logged at."""


class IncrementalTables:
    """The incremental tables of one sink, by key.

    W&B keeps a table logged again under the same key as a new file per step, and its
    workspace shows only the latest; an ``INCREMENTAL`` table (wandb 0.20+, shown by W&B
    Server 0.70+) adds each step's rows to one table instead, so every step stays in view.
    A table's own ``step`` column is renamed ``step_``. Columns cannot change in an
    incremental table: when a key's columns change, a new table starts under that key,
    with a warning.
    """

    def __init__(self) -> None:
        self._tables: dict[str, tuple[list[str], wandb.Table]] = {}

    def add(self, wandb_module: Any, key: str, table: Table, step: int) -> wandb.Table:
        """The key's incremental table with ``table``'s rows added at ``step``."""
        columns = [STEP_COLUMN] + [h + "_" if h == STEP_COLUMN else h for h in table.headers]
        known = self._tables.get(key)
        if known is not None and known[0] != columns:
            logger.warning(
                "the columns of table %r changed (%s -> %s); an incremental W&B table cannot "
                "change its columns, so a new one starts under that key",
                key,
                known[0],
                columns,
            )
            known = None
        if known is None:
            known = (columns, wandb_module.Table(columns=columns, log_mode="INCREMENTAL"))
            self._tables[key] = known
        target = known[1]
        for row in table.rows:
            target.add_data(step, *row)
        return target
