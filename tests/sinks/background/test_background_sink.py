"""BackgroundSink: log() never waits, delivery is ordered, an outage loses nothing.

The tracker outage here is a test double that raises ConnectionError while switched
"down" (a fault that cannot be provoked for real without a server; the outage test against
a killed MLflow server lives with the MLflow integration). Waits are on conditions, never on
timings: every delay is configured tiny.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from background_doubles import (
    FAST,
    BatchingFlakySink,
    FlakySink,
    gradewire_threads,
    numbers,
    on_disk,
    same,
    wait_until,
)

from gradewire import (
    BackgroundSink,
    FanOutSink,
    InvalidInputError,
    InvalidTypeError,
    JsonlSink,
    MemorySink,
    SinkError,
    Table,
)
from gradewire.sinks import (
    DeliveryReport,
    Rejection,
    Sink,
    read_jsonl,
    read_spill,
    read_spill_configs,
)
from support.sink_conformance import Readback, SinkConformance


def test_log_returns_while_the_sink_is_busy_and_only_the_worker_calls_it(make, sink):
    sink.gate = threading.Event()  # every call to the sink blocks until the gate opens
    background = make(sink)
    for step in range(5):
        background.log({"score/mean": step / 10}, step)  # would hang if it waited on the sink
    assert sink.records == []
    assert threading.current_thread().name not in sink.threads
    sink.gate.set()
    assert background.flush(timeout=20).ok
    background.close()
    assert sink.steps == list(range(5))
    workers = {name for name, _, _ in sink.records} | sink.threads
    assert len(workers) == 1
    (worker,) = workers
    assert worker.startswith("gradewire-")
    assert worker != threading.current_thread().name
    assert sink.closed_on == worker


def test_entries_arrive_in_order_with_their_values(make, sink):
    background = make(sink, batch_size=7)
    background.log_config({"lr": 1e-5})
    for step in range(50):
        background.log({"score/mean": step * 0.5, "score/count": step}, step)
    report = background.flush(timeout=20)
    assert report == DeliveryReport(
        delivered=51,
        pending=0,
        rejected=0,
        spill_path=None,
        last_error=None,
        failed_attempts=0,
        ok=True,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.ok = False  # type: ignore[misc]
    assert isinstance(background, Sink)
    assert sink.steps == list(range(50))
    assert [logs for _, _, logs in sink.records][3] == {"score/mean": 1.5, "score/count": 3}
    assert [config for _, config in sink.configs] == [{"lr": 1e-5}]
    if isinstance(sink, BatchingFlakySink):
        assert max(sink.batch_sizes) > 1  # batches were used
        assert max(sink.batch_sizes) <= 7


def test_outage_of_several_batches_then_recovery_delivers_each_step_once_in_order(
    make, sink, tmp_path
):
    background = make(sink, batch_size=4)
    for step in range(10):
        background.log({"step": step}, step)
    assert background.flush(timeout=20).ok
    sink.down = True
    for step in range(10, 40):
        background.log({"step": step}, step)
    wait_until(lambda: sink.failures >= 5, "several failed retries")
    assert not background.is_healthy
    assert list((tmp_path / "spill").glob("*.part-*.jsonl"))  # kept on disk while down
    for step in range(40, 70):  # still down: more batches behind the first ones
        background.log({"step": step}, step)
    report = background.flush(timeout=0)
    assert report.pending > 0
    assert report.last_error == "ConnectionError: tracker unreachable"
    sink.down = False
    report = background.flush(timeout=20)
    assert report.ok
    assert report.delivered == 70
    assert report.failed_attempts == sink.failures
    assert background.is_healthy
    assert background.pending == 0
    assert sink.steps == list(range(70))
    assert all(logs == {"step": step} for _, step, logs in sink.records)
    assert len(sink.threads) == 1  # retries and replay too: only the worker calls the sink
    assert threading.current_thread().name not in sink.threads
    wait_until(lambda: not list((tmp_path / "spill").glob("*.jsonl")), "the spill removed")


def test_a_batch_that_fails_halfway_is_resent_one_entry_at_a_time(make):
    sink = BatchingFlakySink()
    sink.gate = threading.Event()
    sink.lose_reply_once = {2}  # steps 1 and 2 reach the tracker, then the call raises
    background = make(sink, batch_size=8)
    background.log({"step": 0}, 0)
    wait_until(lambda: sink.threads, "the worker inside a call")  # it holds step 0
    for step in range(1, 9):  # these queue up, and go as one batch
        background.log({"step": step}, step)
    sink.gate.set()
    assert background.flush(timeout=20).ok
    # Only the entries of the call that raised can come twice; after it, one entry per call.
    assert sink.steps == [0, 1, 2, 1, 2, 3, 4, 5, 6, 7, 8]
    # log_many calls only: the probe after the failure went through log(), then the replay
    # of what was kept on disk is batched again.
    assert sink.batch_sizes == [8, 7]


def test_without_log_many_only_the_step_whose_call_raised_is_resent(make):
    sink = FlakySink()
    sink.lose_reply_once = {5}
    background = make(sink, batch_size=8)
    for step in range(10):
        background.log({"step": step}, step)
    assert background.flush(timeout=20).ok
    assert sink.steps == [0, 1, 2, 3, 4, 5, 5, 6, 7, 8, 9]


def test_a_full_queue_goes_to_disk_while_the_sink_hangs_and_is_delivered_later(
    make, sink, tmp_path
):
    sink.gate = threading.Event()
    background = make(sink, max_queue=2, batch_size=4)
    background.log({"step": 0}, 0)
    wait_until(lambda: sink.threads, "the worker inside a call")  # it holds step 0
    for step in range(1, 20):
        background.log({"step": step}, step)  # would hang if it waited on the sink
    # Memory never holds more than max_queue entries: the rest went to disk, oldest first
    # (the entry of the hanging call too: it may never return).
    kept = on_disk(tmp_path / "spill")
    assert kept == list(range(len(kept)))
    assert len(kept) >= 18
    assert threading.current_thread().name not in sink.threads
    sink.gate.set()
    report = background.flush(timeout=20)
    assert report.ok
    assert report.delivered == 20
    assert sink.steps == list(range(20))  # step 0 once, though it was on disk as well
    wait_until(lambda: not list((tmp_path / "spill").glob("*.jsonl")), "the spill removed")


def test_a_full_queue_during_an_outage_keeps_order_across_both_spills(make, sink, tmp_path):
    sink.gate = threading.Event()
    sink.down = True
    background = make(sink, max_queue=3, batch_size=2)
    background.log({"step": 0}, 0)
    wait_until(lambda: sink.threads, "the worker inside a call")  # a call that will fail
    for step in range(1, 20):  # memory holds 3, the rest goes to disk
        background.log({"step": step}, step)
    assert len(on_disk(tmp_path / "spill")) >= 16
    sink.gate.set()
    wait_until(lambda: sink.failures >= 3, "retries while down")
    for step in range(20, 30):  # behind everything kept so far
        background.log({"step": step}, step)
    sink.down = False
    assert background.flush(timeout=20).ok
    assert sink.steps == list(range(30))


def test_close_delivers_everything_then_closes_the_wrapped_sink(make, sink, tmp_path):
    background = make(sink, flush_interval=60.0)  # close() must not wait for a batch to fill
    for step in range(10):
        background.log({"step": step}, step)
    background.close()
    assert sink.steps == list(range(10))
    assert sink.closed_on is not None
    assert sink.closed_on.startswith("gradewire-")
    report = background.report
    assert report is not None
    assert report.ok
    assert (report.delivered, report.pending, report.spill_path) == (10, 0, None)
    assert not (tmp_path / "spill").exists()  # never needed, never created


def test_close_while_down_keeps_every_undelivered_step_in_one_spill_file_and_goes_on(
    make, sink, caplog
):
    background = make(sink, batch_size=3)
    background.log({"step": 0}, 0)
    assert background.flush(timeout=20).ok
    sink.down = True
    config = {"model": "m", "layers": (1, 2), "note": {"$float": "nan"}, "nan": math.nan}
    background.log_config(config)
    for step in range(1, 12):
        background.log({"step": step, "score/mean": step / 3}, step)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        background.close(timeout=0.02)
    report = background.report
    assert report is not None
    assert not report.ok
    assert report.delivered == 1
    assert report.pending == 12
    assert report.last_error == "ConnectionError: tracker unreachable"
    assert report.spill_path is not None
    assert report.spill_path.is_file()
    assert report.deferred_close
    stem = report.spill_path.name.removesuffix(".jsonl")
    owner = [f"{stem}.jsonl", f"{stem}.lock", f"{stem}.owner.json"]
    assert sorted(p.name for p in report.spill_path.parent.iterdir()) == owner
    kept = read_spill(report.spill_path)
    assert [step for step, _ in kept] == list(range(1, 12))
    assert all(logs == {"step": s, "score/mean": s / 3} for s, logs in kept)
    (kept_config,) = read_spill_configs(report.spill_path)
    expected = {"model": "m", "layers": [1, 2], "note": {"$float": "nan"}, "nan": math.nan}
    assert same(kept_config, expected)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any(str(report.spill_path) in r.getMessage() for r in warnings)
    for line in report.spill_path.read_text().splitlines():
        json.loads(line, parse_constant=lambda name: pytest.fail(f"{name} is not strict JSON"))
    # The wrapped sink is closed only after the steps logged before close(): once the
    # tracker is back, the worker delivers them, then closes it, then removes the files.
    assert sink.closed_on is None
    sink.down = False
    final = background.flush(timeout=20)
    assert final.ok
    assert not final.deferred_close
    assert background.report == final
    assert sink.steps == list(range(12))
    assert sink.events[-1] == "step 11"
    assert sink.closed_on is not None
    assert not report.spill_path.parent.exists()  # made by the sink, and empty again


def test_a_close_deferred_by_an_outage_never_gets_the_last_step_set_aside(make, sink):
    """The close entry is never the entry that would tell the last step refused.

    After ``max_attempts`` failures of one entry, the worker sends the entry behind it:
    if that goes through, the tracker is up and the first is set aside. A close may
    succeed while the tracker is down, and must come after every entry anyway.
    """
    sink.down = True
    background = make(sink, max_attempts=1)
    background.log({"x": 1}, 0)
    background.close(timeout=0.02)
    report = background.report
    assert report is not None
    assert report.deferred_close
    wait_until(lambda: sink.failures >= 20, "many failed attempts after the close")
    assert sink.closed_on is None  # not before the step
    sink.down = False
    final = background.flush(timeout=20)
    assert final.ok, final
    assert final.rejected == 0
    assert sink.steps == [0]
    assert sink.closed_on is not None


def test_tables_and_non_finite_numbers_survive_the_spill_and_the_replay(make, sink):
    table = Table(["prompt", "score", "ok", "note"])
    table.add_row(["<b>2+2</b>", math.nan, True, None])
    table.add_row(["ünï\ud800", math.inf, False, "x"])
    logs = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "n": 3, "big": 2**70, "t": table}
    sink.down = True
    background = make(sink)
    background.log(logs, 1)
    wait_until(lambda: sink.failures >= 1, "a failed delivery")
    sink.down = False
    assert background.flush(timeout=20).ok
    ((_, step, delivered),) = sink.records
    assert step == 1
    assert same(numbers(delivered), numbers(logs))
    assert delivered["t"] == table
    assert delivered["t"] is not table

    sink.down = True
    background.log(logs, 2)
    background.close(timeout=0.02)
    assert background.report is not None
    assert background.report.spill_path is not None
    ((step, kept),) = read_spill(background.report.spill_path)
    assert step == 2
    assert kept["t"] == table
    assert same(numbers(kept), numbers(logs))


def test_what_the_caller_changes_after_log_is_not_sent(make, sink):
    sink.gate = threading.Event()
    background = make(sink)
    table = Table().add_column("a", [1])
    logs: dict[str, Any] = {"x": 1.0, "t": table}
    background.log(logs, 0)
    logs["x"] = 2.0
    logs["y"] = 3.0
    table.add_row([2])
    sink.gate.set()
    assert background.flush(timeout=20).ok
    ((_, _, sent),) = sink.records
    assert sent["x"] == 1.0
    assert "y" not in sent
    assert sent["t"].rows == [[1]]


def test_config_is_delivered_before_the_steps_logged_after_it(make, sink):
    background = make(sink, batch_size=10)
    background.log({"x": 0}, 0)
    background.log_config({"phase": "eval", "ids": (1, 2)})
    background.log({"x": 1}, 1)
    assert background.flush(timeout=20).ok
    assert sink.events == ["step 0", "config", "step 1"]
    assert sink.configs[0][1] == {"phase": "eval", "ids": [1, 2]}


def test_log_after_close_raises_and_a_second_close_does_nothing(make, sink):
    background = make(sink)
    background.log({"x": 1}, 0)
    background.close()
    report = background.report
    with pytest.raises(SinkError, match="closed"):
        background.log({"x": 2}, 1)
    with pytest.raises(SinkError, match="closed"):
        background.log_config({"a": 1})
    background.close()
    assert background.report is report
    assert background.flush() is report
    assert sink.steps == [0]


def test_flush_with_a_timeout_returns_while_the_sink_is_down(make, sink):
    sink.down = True
    background = make(sink)
    for step in range(5):
        background.log({"x": step}, step)
    report = background.flush(timeout=0.01)
    assert not report.ok
    assert report.pending == 5
    assert report.spill_path is None  # only close() names the final file
    assert background.pending == 5


def test_the_sink_closing_with_an_error_raises_sink_error_with_the_report(make, sink):
    sink.close_error = RuntimeError("finish failed")
    background = make(sink)
    background.log({"x": 1}, 0)
    with pytest.raises(SinkError, match="finish failed") as caught:
        background.close()
    report = caught.value.report  # type: ignore[attr-defined]
    assert report is background.report
    assert not report.ok
    assert report.delivered == 1
    assert report.last_error == "RuntimeError: finish failed"


def test_an_entry_the_sink_refuses_for_good_is_set_aside_not_retried_forever(make, sink):
    sink.refuse = {3}
    background = make(sink, batch_size=4)
    for step in range(8):
        background.log({"x": step}, step)
    report = background.flush(timeout=20)
    assert report.pending == 1
    assert report.rejected == 1
    assert report.rejections == (Rejection(3, "InvalidInputError: step 3 is not acceptable"),)
    assert sink.steps == [0, 1, 2, 4, 5, 6, 7]
    background.close()
    report = background.report
    assert report is not None
    assert report.spill_path is None  # nothing waits: the refused entry is apart
    assert report.rejected_path is not None
    assert read_spill(report.rejected_path) == [(3, {"x": 3})]
    (line,) = report.rejected_path.read_text().splitlines()
    assert json.loads(line)["error"] == "InvalidInputError: step 3 is not acceptable"


def test_a_sink_stuck_in_a_call_at_close_still_keeps_the_queue_on_disk(make, sink):
    sink.gate = threading.Event()
    background = make(sink, batch_size=1, close_timeout=0.05)
    background.log({"x": 0}, 0)
    wait_until(lambda: sink.threads, "the worker inside a call")
    for step in range(1, 4):
        background.log({"x": step}, step)
    background.close(timeout=0.01)
    report = background.report
    assert report is not None
    assert not report.ok
    assert report.last_error is not None
    assert "did not return" in report.last_error
    assert report.pending == 4
    # The spill file holds the entry of the hanging call too (it might never return).
    assert report.spill_path is not None
    assert read_spill(report.spill_path) == [(s, {"x": s}) for s in range(4)]
    sink.gate.set()  # the call returns: the rest goes after it, once, then the close
    final = background.flush(timeout=20)
    assert final.ok
    assert final.delivered == 4
    assert background.report == final
    assert sink.steps == [0, 1, 2, 3]
    (caller,) = sink.threads
    assert sink.closed_on == caller


def test_an_inactive_sink_starts_no_thread_and_is_never_called(make):
    sink = FlakySink()
    sink.active = False  # type: ignore[attr-defined]  # as on a non-zero rank
    before = gradewire_threads()
    background = make(sink)
    assert not background.active
    assert gradewire_threads() == before
    background.log({"x": 1}, 0)
    background.log_config({"a": 1})
    assert background.flush().ok
    background.close()
    assert background.report is not None
    assert background.report.ok
    assert sink.threads == set()
    with pytest.raises(SinkError):
        background.log({"x": 1}, 1)


def test_bad_input_is_refused_in_log_and_nothing_is_enqueued(make, sink):
    background = make(sink)
    with pytest.raises(InvalidTypeError, match="'text'"):
        background.log({"text": "hello"}, 0)
    with pytest.raises(InvalidTypeError, match="step"):
        background.log({"x": 1}, True)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="0 or more"):
        background.log({"x": 1}, -1)
    with pytest.raises(InvalidTypeError, match=r"config\['path'\]"):
        background.log_config({"path": object()})
    with pytest.raises(InvalidTypeError, match=r"entries\[1\]"):
        background.log_many([(0, {"x": 1}), (1, {"x": [1]})])
    assert background.pending == 0
    with pytest.raises(InvalidInputError):
        BackgroundSink(sink, max_queue=0)
    with pytest.raises(InvalidTypeError):
        BackgroundSink(object())  # type: ignore[arg-type]


def test_entries_from_several_threads_are_each_delivered_once(make, sink):
    background = make(sink, max_queue=16, batch_size=5)  # small: some go through the overflow

    def produce(thread: int) -> None:
        for i in range(200):
            background.log({"thread": thread, "i": i}, 0)  # the same step again adds to it

    threads = [threading.Thread(target=produce, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert background.flush(timeout=20).ok
    got = [(logs["thread"], logs["i"]) for _, _, logs in sink.records]
    assert sorted(got) == [(k, i) for k in range(4) for i in range(200)]
    for k in range(4):  # each producer's own order is kept
        assert [i for thread, i in got if thread == k] == list(range(200))


def test_a_lower_step_is_refused_at_once_and_nothing_is_enqueued(make, sink):
    background = make(sink)
    background.log({"a": 1}, 3)
    with pytest.raises(InvalidInputError, match="lower"):
        background.log({"a": 2}, 2)
    with pytest.raises(InvalidInputError, match=r"entries\[1\].*lower"):
        background.log_many([(4, {"a": 3}), (3, {"a": 4})])
    background.log({"b": 5}, 3)
    assert background.flush(timeout=20).ok
    assert [(step, logs) for _, step, logs in sink.records] == [(3, {"a": 1}), (3, {"b": 5})]


def test_the_default_spill_dir_is_one_per_user_and_private(
    make, sink, tmp_path, monkeypatch, caplog
):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    sink.down = True
    background = make(sink, spill_dir=None)
    assert background.spill_dir == tmp_path / f"gradewire-spill-{os.getuid()}"
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        background.log({"x": 1}, 0)
        background.close(timeout=0.02)
    assert background.report is not None
    assert background.report.spill_path is not None
    assert background.report.spill_path.parent == background.spill_dir
    assert any(str(background.spill_dir) in r.getMessage() for r in caplog.records)
    assert background.spill_dir.stat().st_mode & 0o777 == 0o700


def test_a_default_spill_dir_of_another_user_is_not_written_to(make, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    me = os.getuid() + 1000  # the directory below is then another user's
    monkeypatch.setattr(os, "getuid", lambda: me)
    theirs = tmp_path / f"gradewire-spill-{me}"
    theirs.mkdir(mode=0o777)
    sink = FlakySink()
    sink.down = True
    background = make(sink, spill_dir=None, max_queue=3)
    for step in range(5):
        background.log({"x": step}, step)
    report = background.flush(timeout=0.2)
    assert report.lost == 2  # memory held 3; the disk of another user took none
    assert report.lost_reason is not None
    assert "belongs to another user" in report.lost_reason
    assert list(theirs.iterdir()) == []


def test_read_spill_skips_a_line_cut_off_by_a_crash_and_refuses_other_garbage(make, tmp_path):
    sink = FlakySink()
    sink.down = True
    background = make(sink)
    background.log({"x": 1}, 0)
    background.close(timeout=0.02)
    assert background.report is not None
    path = background.report.spill_path
    assert path is not None
    with open(path, "ab") as file:
        file.write(b'{"v":1,"seq":9,"step":')
    assert read_spill(path) == [(0, {"x": 1})]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"v":1,"seq":1,"step":0,"logs":{"x":NaN}}\n')
    with pytest.raises(InvalidInputError, match="line 1"):
        read_spill(bad)


def test_a_script_that_never_calls_close_still_delivers_at_exit(tmp_path):
    out = tmp_path / "delivered.txt"
    script = textwrap.dedent(
        f"""
        import time
        from gradewire.sinks.background._background_sink import BackgroundSink

        class FileSink:
            def log(self, logs, step):
                time.sleep(0.001)
                with open({str(out)!r}, "a") as f:
                    f.write(f"{{step}}\\n")
            def log_config(self, config):
                pass
            def close(self):
                with open({str(out)!r}, "a") as f:
                    f.write("closed\\n")

        sink = BackgroundSink(FileSink(), spill_dir={str(tmp_path / "spill")!r},
                              flush_interval=60, exit_timeout=20)
        for step in range(50):
            sink.log({{"x": step}}, step)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert out.read_text().split() == [str(s) for s in range(50)] + ["closed"]


class TestConformanceInFrontOfMemorySink(SinkConformance):
    """A BackgroundSink is a sink like any other: the shared contract holds through it."""

    def make_sink(self, tmp_path: Path) -> Sink:
        return BackgroundSink(MemorySink(), spill_dir=tmp_path / "spill", **FAST)

    def read_back(self, sink: Sink, tmp_path: Path) -> Readback:
        assert isinstance(sink, BackgroundSink)
        assert sink.report is not None
        assert sink.report.ok
        memory = sink.wrapped
        assert isinstance(memory, MemorySink)
        return Readback.from_steps(memory.steps, memory.config, [memory._repr_html_()])


class TestConformanceInFrontOfJsonlSink(SinkConformance):
    def make_sink(self, tmp_path: Path) -> Sink:
        jsonl = JsonlSink(tmp_path / "logs" / "run.jsonl")
        return BackgroundSink(jsonl, spill_dir=tmp_path / "spill", **FAST)

    def read_back(self, sink: Sink, tmp_path: Path) -> Readback:
        run = read_jsonl(tmp_path / "logs" / "run.jsonl")
        assert run.skipped_lines == []
        return Readback.from_steps(run.steps, run.config)


def test_a_fan_out_is_refused_because_it_would_hide_failures():
    with pytest.raises(InvalidInputError, match=r"FanOutSink\(BackgroundSink\(a\)"):
        BackgroundSink(FanOutSink(MemorySink(), MemorySink()))
    fanned = FanOutSink(BackgroundSink(MemorySink()), BackgroundSink(MemorySink()))
    fanned.log({"x": 1.0}, 0)
    fanned.close()
