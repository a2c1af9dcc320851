from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from gradewire import InvalidInputError, InvalidTypeError, SinkError, Table
from gradewire.core._logging_core import LogValue
from gradewire.sinks import Sink
from gradewire.sinks._base_sink import BaseSink
from gradewire.sinks._memory_sink import MemorySink
from gradewire.sinks._sink import check_config, check_logs, check_step
from gradewire.sinks._table_policy import TablePolicy


class Recording(BaseSink):
    """Records every hook call; fails the next `fail` writes."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls: list[tuple[str, object]] = []
        self.fail = 0

    def _write(self, logs: dict[str, LogValue], step: int) -> None:
        if self.fail:
            self.fail -= 1
            raise ConnectionError("tracker down")
        self.calls.append(("write", (step, logs)))

    def _write_config(self, config: dict[str, Any]) -> None:
        self.calls.append(("config", config))

    def _close(self) -> None:
        self.calls.append(("close", None))


def test_a_base_sink_is_a_sink() -> None:
    assert isinstance(Recording(), Sink)
    with pytest.raises(TypeError):
        BaseSink()  # type: ignore[abstract]


def test_values_are_checked_and_made_plain() -> None:
    table = Table().add_column("A", [1])
    out = check_logs(
        {"b": True, "i": np.int64(3), "f": np.float32(0.5), "g": np.float64(0.25), "t": table}
    )
    assert out == {"b": 1, "i": 3, "f": 0.5, "g": 0.25, "t": table}
    assert [type(v) for v in out.values()] == [int, int, float, float, Table]
    assert out["t"] is table


@pytest.mark.parametrize(
    ("logs", "match"),
    [
        ({"x": "text"}, r"logs\['x'\] is a str.*Table"),
        ({"x": None}, r"logs\['x'\] is a NoneType.*drop keys"),
        ({"x": [1.0]}, r"logs\['x'\] is a list.*float\(value\)"),
        ({"x": np.array([1.0, 2.0])}, r"logs\['x'\] is a ndarray"),
        ({3: 1.0}, r"keys must be str.*int 3"),
        ([("x", 1.0)], "mapping"),
    ],
)
def test_bad_values_name_the_key_and_the_fix(logs: object, match: str) -> None:
    with pytest.raises(InvalidTypeError, match=match):
        check_logs(logs)


def test_steps_are_checked() -> None:
    assert check_step(np.int64(4)) == 4
    assert type(check_step(np.int64(4))) is int
    for bad in (1.0, "3", True, None):
        with pytest.raises(InvalidTypeError, match="step must be an int"):
            check_step(bad)
    with pytest.raises(InvalidInputError, match="0 or more"):
        check_step(-1)


def test_config_is_checked() -> None:
    config = {"a": {"nested": 1}}
    out = check_config(config)
    assert out == config
    assert out is not config
    with pytest.raises(InvalidTypeError, match="mapping"):
        check_config([1])
    with pytest.raises(InvalidTypeError, match="config keys must be str"):
        check_config({1: "a"})


def test_log_passes_a_new_dict_and_never_mutates_the_input() -> None:
    sink = Recording()
    logs: dict[str, Any] = {"a": True, "b": 0.5}
    sink.log(logs, 0)
    assert logs == {"a": True, "b": 0.5}
    [(kind, (step, written))] = sink.calls  # type: ignore[misc]
    assert (kind, step, written) == ("write", 0, {"a": 1, "b": 0.5})
    assert written is not logs


def test_a_lower_step_raises_the_same_step_adds() -> None:
    sink = Recording()
    sink.log({"a": 1.0}, 5)
    with pytest.raises(InvalidInputError, match=r"step 4 is lower than step 5.*must not decrease"):
        sink.log({"a": 1.0}, 4)
    sink.log({"b": 1.0}, 5)
    assert sink.last_step == 5
    assert [c[1][0] for c in sink.calls] == [5, 5]  # type: ignore[index]


def test_a_failed_write_does_not_advance_the_step_so_it_can_be_retried() -> None:
    sink = Recording()
    sink.log({"a": 1.0}, 1)
    sink.fail = 1
    with pytest.raises(ConnectionError):
        sink.log({"a": 2.0}, 7)
    assert sink.last_step == 1
    sink.log({"a": 2.0}, 3)  # lower than the failed step: still accepted
    assert sink.last_step == 3


def test_log_many_checks_every_entry_before_writing_any() -> None:
    sink = Recording()
    with pytest.raises(InvalidTypeError, match=r"entries\[1\]: logs\['x'\] is a str"):
        sink.log_many([(0, {"a": 1.0}), (1, {"x": "bad"})])
    with pytest.raises(InvalidInputError, match=r"entries\[2\]: step 1 is lower than step 3"):
        sink.log_many([(2, {"a": 1.0}), (3, {"a": 1.0}), (1, {"a": 1.0})])
    with pytest.raises(InvalidTypeError, match=r"entries\[0\] must be a \(step, logs\) pair"):
        sink.log_many([{"a": 1.0}])  # type: ignore[list-item]
    assert sink.calls == []
    assert sink.last_step is None
    sink.log_many([(2, {"a": 1.0}), (2, {"b": 1.0}), (4, {"a": 1.0})])
    assert [c[1][0] for c in sink.calls] == [2, 2, 4]  # type: ignore[index]
    assert sink.last_step == 4


def test_the_policy_is_applied_and_empty_steps_are_not_written() -> None:
    sink = Recording(table_policy=TablePolicy(max_rows=2, metrics_every=2, table_every=4))
    table = Table().add_column("Score", [0.1, 0.2, 0.3])
    for step in range(5):
        sink.log({"m": 1.0, "t": table}, step)
    written = {c[1][0]: c[1][1] for c in sink.calls}  # type: ignore[index]
    assert sorted(written) == [0, 2, 4]
    assert sorted(written[2]) == ["m"]
    assert len(written[4]["t"]) == 2  # type: ignore[arg-type]
    assert len(table) == 3
    assert sink.last_step == 4  # step 3 counted though nothing was written
    with pytest.raises(InvalidInputError):
        sink.log({"m": 1.0}, 3)


def test_policy_must_be_a_table_policy() -> None:
    with pytest.raises(InvalidTypeError, match="TablePolicy"):
        Recording(table_policy={"max_rows": 3})


def test_close_is_idempotent_and_final() -> None:
    sink = Recording()
    sink.log_config({"lr": 0.1})
    with sink as entered:
        assert entered is sink
    sink.close()
    assert sink.closed
    assert sink.calls == [("config", {"lr": 0.1}), ("close", None)]
    for call in (
        lambda: sink.log({"a": 1.0}, 1),
        lambda: sink.log_many([(1, {"a": 1.0})]),
        lambda: sink.log_config({"b": 2}),
    ):
        with pytest.raises(SinkError, match="Recording is closed"):
            call()


def test_a_failing_close_raises_once() -> None:
    class FailingClose(Recording):
        def _close(self) -> None:
            super()._close()
            raise OSError("disk gone")

    sink = FailingClose()
    with pytest.raises(OSError, match="disk gone"):
        sink.close()
    sink.close()
    assert sink.calls == [("close", None)]


def test_a_close_from_another_thread_never_interleaves_with_writes() -> None:
    class Checked(MemorySink):
        def __init__(self) -> None:
            super().__init__()
            self.inside = 0
            self.overlaps = 0
            self.after_close = 0

        def _write(self, logs: dict[str, LogValue], step: int) -> None:
            self.inside += 1
            if self.closed:
                self.after_close += 1
            for _ in range(200):  # widen the window in which a close could cut in
                if self.inside != 1:
                    self.overlaps += 1
            super()._write(logs, step)
            self.inside -= 1

        def _close(self) -> None:
            if self.inside:
                self.overlaps += 1

    sink = Checked()
    started = threading.Event()
    refused: list[int] = []

    def produce() -> None:
        for step in range(100_000):
            try:
                sink.log({"step": float(step)}, step)
            except SinkError:
                refused.append(step)
                return
            started.set()

    thread = threading.Thread(target=produce)
    thread.start()
    started.wait()
    sink.close()
    thread.join()
    assert sink.overlaps == 0
    assert sink.after_close == 0
    steps = [step for step, _ in sink.steps]
    assert steps == list(range(len(steps)))  # a gap-free prefix: nothing half-written
    assert refused == [len(steps)] or len(steps) == 100_000
