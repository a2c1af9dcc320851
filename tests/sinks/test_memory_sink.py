from __future__ import annotations

import math

import numpy as np

from gradewire import Table
from gradewire.sinks._memory_sink import MemorySink
from gradewire.sinks._table_policy import TablePolicy


def test_steps_metric_and_table_helpers() -> None:
    sink = MemorySink()
    table = Table().add_column("Score", [0.5])
    sink.log({"score/mean": 0.5, "score/count": 2, "t": table}, 0)
    sink.log({"score/mean": 0.75}, 3)
    assert sink.steps == [
        (0, {"score/mean": 0.5, "score/count": 2, "t": table}),
        (3, {"score/mean": 0.75}),
    ]
    assert sink.metric("score/mean") == [(0, 0.5), (3, 0.75)]
    assert sink.metric("score/count") == [(0, 2)]
    assert type(sink.metric("score/count")[0][1]) is int
    assert sink.metric("t") == []
    assert sink.metric("never") == []
    assert sink.table("t") == [(0, table)]
    assert sink.table("score/mean") == []


def test_stored_tables_are_copies() -> None:
    sink = MemorySink()
    table = Table().add_column("A", [1])
    sink.log({"t": table}, 0)
    table.add_row([2])
    [(_, stored)] = sink.table("t")
    assert stored.rows == [[1]]


def test_numpy_and_bool_values_are_stored_plain() -> None:
    sink = MemorySink()
    sink.log({"a": np.float32(0.5), "b": np.bool_(True), "c": float("nan")}, 1)
    [(_, logs)] = sink.steps
    assert logs["a"] == 0.5
    assert type(logs["a"]) is float
    assert logs["b"] == 1
    assert type(logs["b"]) is int
    assert math.isnan(logs["c"])  # type: ignore[arg-type]


def test_config_calls_merge_and_are_copied() -> None:
    sink = MemorySink()
    nested = {"layers": [1, 2]}
    sink.log_config({"model": nested, "lr": 0.1})
    sink.log_config({"lr": 0.2, "seed": 1})
    nested["layers"].append(3)
    assert sink.config == {"model": {"layers": [1, 2]}, "lr": 0.2, "seed": 1}


def test_closed_flag() -> None:
    sink = MemorySink()
    assert not sink.closed
    sink.close()
    assert sink.closed
    assert repr(sink) == "MemorySink(steps=0, closed=True)"


def test_policy_is_applied_when_given() -> None:
    sink = MemorySink(table_policy=TablePolicy(max_rows=2))
    sink.log({"t": Table().add_column("Score", [0.1, 0.9, 0.5])}, 0)
    [(_, stored)] = sink.table("t")
    assert stored.column("Score") == [0.1, 0.9]


def test_html_shows_the_last_step_escaped() -> None:
    sink = MemorySink()
    assert "nothing logged" in sink._repr_html_()
    sink.log({"old": 1.0}, 0)
    table = Table().add_column("Q&A", ["<script>alert(1)</script>", "x" * 2000])
    sink.log({"<b>key</b>": 0.123456789, "count": 7, "samples<i>": table}, 4)
    page = sink._repr_html_()
    assert "steps 0 to 4" in page
    assert "The last step (4)" in page
    assert "2 logged" in page
    assert "old" not in page
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;key&lt;/b&gt;" in page
    assert "samples&lt;i&gt;" in page
    assert "Q&amp;A" in page
    assert "0.123457" in page
    assert ">7<" in page
    assert "x" * 2000 not in page  # long cells are cut for display
