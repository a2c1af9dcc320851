"""Every block's figures, read from the graded rows, and their exact merge on the driver.

Each block of the graded dataset is summarised by one task (`MergeGrades.of_block`):
the log states its batches carry, merged (count, mean, M2, min, max per key: Chan's
formula), its score histograms, and a bounded sample of rows for the tables. The driver
merges the summaries as they arrive. Reading the figures from the output rows, not
from messages the workers sent, is what keeps a retried batch from counting twice.

(Ray's own ``Dataset.aggregate`` with an ``AggregateFnV2`` gives the same figures but
starts a shuffle stage per call, seconds more on a small cluster; plain tasks over the
materialized blocks reuse Ray's workers.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gradewire import Histogram, LogState
from gradewire_ray._rows import STATE_COLUMN, RowToThread, column_names
from gradewire_ray._samples import choose_failed, choose_scored, cut

__all__ = ["MergeGrades", "empty"]

Accumulator = dict[str, Any]


def empty() -> Accumulator:
    """Nothing graded yet."""
    return {"rows": 0, "logs": {}, "histograms": {}, "scored": {}, "failed": {}}


class MergeGrades:
    """Summarises a block of graded rows, and merges two summaries."""

    def __init__(
        self,
        keys: Sequence[str],
        edges: Mapping[str, tuple[float, ...]],
        table_rows: int,
        cell_chars: int | None,
        to_thread: RowToThread,
    ) -> None:
        self._keys = list(keys)
        self._edges = dict(edges)
        self._k = table_rows
        self._chars = cell_chars
        self._to_thread = to_thread

    def of_block(self, block: Any) -> Any:
        """A one-row table holding the summary of ``block``, as JSON (the task Ray runs)."""
        import pyarrow as pa

        return pa.table({"summary": [json.dumps(self.aggregate_block(block))]})

    def aggregate_block(self, block: Any) -> Accumulator:
        """The figures of one block of graded rows (a pyarrow table)."""
        acc = empty()
        acc["rows"] = block.num_rows
        for text in block.column(STATE_COLUMN).to_pylist():
            if text is not None:
                acc = self.combine(acc, {**empty(), "logs": json.loads(text)})
        for key in self._keys:
            value_col, status_col, reasoning_col, error_col = column_names(key)
            values = block.column(value_col).to_pylist()
            statuses = block.column(status_col).to_pylist()
            scores = [v for v in values if v is not None]
            acc["histograms"][key] = Histogram.of(scores, self._edges[key]).to_dict()
            scored = [i for i, s in enumerate(statuses) if s == "ok"]
            failed = [i for i, s in enumerate(statuses) if s != "ok"]
            reasons = block.column(reasoning_col).to_pylist()
            errors = block.column(error_col).to_pylist()
            # Choose by score first: only the rows kept are turned back into prompts.
            picked = choose_scored([(values[i], "", "", str(i)) for i in scored], self._k)
            acc["scored"][key] = [
                (values[i], *self._texts(block, i), cut(reasons[i], self._chars))
                for i in (int(row[3]) for row in picked)
            ]
            dropped = choose_failed([(statuses[i], f"{i:012d}", "", "") for i in failed], self._k)
            acc["failed"][key] = [
                (
                    statuses[i],
                    cut(errors[i] if statuses[i] == "error" else reasons[i], self._chars),
                    *self._texts(block, i),
                )
                for i in (int(row[1]) for row in dropped)
            ]
        return acc

    def _texts(self, block: Any, index: int) -> tuple[str, str]:
        row = block.slice(index, 1).to_pylist()[0]
        try:
            thread = self._to_thread(row)
        except Exception:
            return "", ""  # the row was no sample; its error says why
        return (
            cut(thread.last_user_content(), self._chars),
            cut(thread.completion(), self._chars),
        )

    def combine(self, current: Accumulator, new: Accumulator) -> Accumulator:
        """Both accumulators together."""
        logs = dict(current["logs"])
        for key, state in new["logs"].items():
            mine = logs.get(key)
            logs[key] = (
                state
                if mine is None
                else LogState.from_dict(mine).merge(LogState.from_dict(state)).to_dict()
            )
        histograms = dict(current["histograms"])
        for key, hist in new["histograms"].items():
            mine = histograms.get(key)
            histograms[key] = (
                hist
                if mine is None
                else Histogram.from_dict(mine).merge(Histogram.from_dict(hist)).to_dict()
            )
        scored = dict(current["scored"])
        for key, rows in new["scored"].items():
            scored[key] = choose_scored([*scored.get(key, []), *rows], self._k)
        failed = dict(current["failed"])
        for key, rows in new["failed"].items():
            failed[key] = choose_failed([*failed.get(key, []), *rows], self._k)
        return {
            "rows": current["rows"] + new["rows"],
            "logs": logs,
            "histograms": histograms,
            "scored": scored,
            "failed": failed,
        }
