"""An entry the tracker can never take is set aside after a few attempts; later steps go on.

A refusal is told apart from an outage by the entry after it: an entry that failed
``max_attempts`` times in a row, and fails again while the next one goes through, is set
aside (on disk, listed in the report, readable with `read_spill`). While every call fails
(an outage) nothing is set aside, however many attempts it takes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from background_doubles import FlakySink, wait_until

from gradewire import SinkError
from gradewire.sinks import BaseSink, Rejection, read_spill


def test_an_entry_that_keeps_failing_alone_is_set_aside_and_later_steps_go_on(make, sink):
    sink.poison = {3}  # raises SinkError, as W&B did for a table cell it could not encode
    background = make(sink, batch_size=4)  # max_attempts=5
    for step in range(10):
        background.log({"x": step}, step)
    report = background.flush(timeout=20)
    assert sink.steps == [0, 1, 2, 4, 5, 6, 7, 8, 9]  # in order, each once
    assert report.delivered == 9
    assert report.rejected == 1
    assert report.pending == 1
    assert report.rejections == (Rejection(3, "SinkError: cannot encode step 3"),)
    # A bounded number of attempts: max_attempts alone, one more beside the next entry and
    # one after it went through, and the batches that carried it while the entries before
    # it were found good (at most one per entry of the first failed batch of 4).
    assert sink.poison_calls <= 5 + 2 + 4
    background.log({"x": 10}, 10)
    assert background.flush(timeout=20).rejected == 1  # it stays aside; step 10 goes on
    assert sink.steps[-1] == 10
    background.close()
    final = background.report
    assert final is not None
    assert final.spill_path is None
    assert final.rejected_path is not None
    assert read_spill(final.rejected_path) == [(3, {"x": 3})]  # replayable
    (line,) = final.rejected_path.read_text().splitlines()
    assert json.loads(line)["error"] == "SinkError: cannot encode step 3"


def test_a_refused_config_is_set_aside_like_a_step(make):
    from background_doubles import FlakySink

    class ConfigRefusingSink(FlakySink):
        def log_config(self, config):  # type: ignore[no-untyped-def]
            raise RuntimeError("config too large")

    sink = ConfigRefusingSink()
    background = make(sink, max_attempts=2)
    background.log({"x": 0}, 0)
    background.log_config({"lr": 1e-5})
    background.log({"x": 1}, 1)
    report = background.flush(timeout=20)
    assert sink.steps == [0, 1]
    assert report.rejections == (Rejection(None, "RuntimeError: config too large"),)


def test_an_outage_sets_nothing_aside_however_long_it_lasts(make, sink):
    background = make(sink, batch_size=4, max_attempts=2)
    background.log({"x": 0}, 0)
    assert background.flush(timeout=20).ok
    sink.down = True
    for step in range(1, 10):
        background.log({"x": step}, step)
    wait_until(lambda: sink.failures >= 10, "many failed attempts, past max_attempts")
    report = background.flush(timeout=0)
    assert report.rejected == 0
    assert report.pending == 9
    sink.down = False
    report = background.flush(timeout=20)
    assert report.ok
    assert report.rejected == 0
    assert sink.steps == list(range(10))


def test_a_poisoned_entry_during_an_outage_is_set_aside_only_once_the_tracker_is_back(make, sink):
    sink.poison = {2}
    sink.down = True
    background = make(sink, batch_size=4, max_attempts=2)
    for step in range(6):
        background.log({"x": step}, step)
    wait_until(lambda: sink.failures >= 8, "many failed attempts while down")
    assert background.flush(timeout=0).rejected == 0
    sink.down = False
    report = background.flush(timeout=20)
    assert sink.steps == [0, 1, 3, 4, 5]
    assert [r.step for r in report.rejections] == [2]


class BackBetweenTwoCalls(FlakySink):
    """Down until a call carries step ``back_at``: an outage that ends mid suspect job."""

    def __init__(self, back_at: int) -> None:
        super().__init__()
        self.down = True
        self.back_at = back_at

    def log(self, logs: Mapping[str, Any], step: int) -> None:
        if step == self.back_at:
            self.down = False  # the server is up again just as the next entry is sent
        super().log(logs, step)


def test_an_entry_that_only_met_the_end_of_an_outage_is_not_set_aside(make):
    # Step 0 fails alone max_attempts times (the tracker is down), then in the suspect job
    # it fails once more and step 1 goes through: the tracker came back in between. Seen
    # in a real MLflow restart; step 0 must be tried again, not set aside.
    sink = BackBetweenTwoCalls(back_at=1)
    background = make(sink)
    background.log({"x": 0}, 0)
    background.log({"x": 1}, 1)
    report = background.flush(timeout=20)
    assert report.rejected == 0, report
    assert sorted(sink.steps) == [0, 1]
    assert report.delivered == 2


class _OrderedBackBetweenTwoCalls(BaseSink):
    """A real `BaseSink` (steps must not decrease), down until a call carries ``back_at``."""

    def __init__(self, back_at: int) -> None:
        super().__init__()
        self.down, self.down_after, self.gate = True, None, None
        self.back_at = back_at
        self.written: list[int] = []

    def _write(self, logs: dict[str, Any], step: int) -> None:
        if step == self.back_at:
            self.down = False  # the server is up again just as the next entry is sent
        if self.down:
            raise SinkError("tracker down")
        self.written.append(step)


class _KeepsLateSteps(_OrderedBackBetweenTwoCalls):
    late_steps = True  # as MLflow: a step after a higher one is kept


@pytest.mark.parametrize("keeps_late", [True, False], ids=["keeps late steps", "drops them"])
def test_an_outage_ending_between_the_calls_of_a_suspect_job_on_a_sink_that_orders_steps(
    make, keeps_late
):
    # Step 0 meets the end of the outage, step 1 goes through, and step 0 can no longer be
    # logged in order (a real sink refuses a lower step). Seen in the MLflow outage test
    # under load: step 39 set aside after 40 went through. A tracker that keeps late steps
    # gets it late; one that would drop it has it set aside, on disk, never lost silently.
    sink = (_KeepsLateSteps if keeps_late else _OrderedBackBetweenTwoCalls)(back_at=1)
    background = make(sink)
    background.log({"x": 0}, 0)
    background.log({"x": 1}, 1)
    report = background.flush(timeout=20)
    if keeps_late:
        assert report.ok, report
        assert sink.written == [1, 0]
        assert report.delivered == 2
    else:
        assert sink.written == [1]
        assert [r.step for r in report.rejections] == [0]
        assert "StepOrderError" in report.rejections[0].error
