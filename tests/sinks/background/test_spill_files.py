"""Spill files changed from outside: the entries cut out are counted, the rest delivered.

An entry's line is written whole or not at all, so the sink itself never leaves a torn
line; a file cut or garbled by something else (a disk error, a person, a crash of an older
version) must neither stop the replay nor join the next append onto a torn line. The
tracker hangs in its first call here (the gate), so the steps go to disk (stall_timeout)
and nothing reads the file before it is changed.
"""

from __future__ import annotations

import logging
import threading

from background_doubles import on_disk, wait_until

from gradewire.sinks import read_spill


def _segment(spill):  # type: ignore[no-untyped-def]
    (path,) = spill.glob("*.part-*.jsonl")
    return path


def test_a_torn_last_line_loses_that_entry_only_and_later_appends_stay_whole(
    make, sink, tmp_path, caplog
):
    spill = tmp_path / "spill"
    sink.gate = threading.Event()
    background = make(sink, batch_size=4, stall_timeout=0.01)
    for step in range(10):
        background.log({"x": step}, step)
    wait_until(lambda: on_disk(spill) == list(range(10)), "every step on disk")
    path = _segment(spill)
    data = path.read_bytes()
    path.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 12])  # step 9, cut short
    for step in range(10, 15):
        background.log({"x": step}, step)
    wait_until(lambda: len(list(spill.glob("*.part-*.jsonl"))) == 2, "a new segment")
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        sink.gate.set()
        report = background.flush(timeout=20)
    assert sink.steps == [*range(9), *range(10, 15)]  # in order, each once
    assert report.lost == 1
    assert report.lost_reason is not None
    assert "cut from the spill files" in report.lost_reason
    assert report.pending == 1
    assert any("cut short or garbled" in r.getMessage() for r in caplog.records)


def test_a_garbled_line_in_the_middle_loses_that_entry_only(make, sink, tmp_path):
    spill = tmp_path / "spill"
    sink.gate = threading.Event()
    background = make(sink, batch_size=4, stall_timeout=0.01)
    for step in range(10):
        background.log({"x": step}, step)
    wait_until(lambda: on_disk(spill) == list(range(10)), "every step on disk")
    path = _segment(spill)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[6] = b"#" * (len(lines[6]) - 1) + b"\n"  # same length: the file still adds up
    path.write_bytes(b"".join(lines))
    sink.gate.set()
    report = background.flush(timeout=20)
    assert sink.steps == [0, 1, 2, 3, 4, 5, 7, 8, 9]
    assert report.lost == 1
    assert report.pending == 1


def test_closing_halfway_through_a_replay_keeps_exactly_the_undelivered_steps(make, sink):
    sink.down = True
    background = make(sink, batch_size=2)
    for step in range(40):
        background.log({"x": step}, step)
    spill_dir = background.spill_dir
    wait_until(lambda: on_disk(spill_dir) == list(range(40)), "every step on disk")
    sink.down_after = 5  # down again, part way through the first segment
    sink.down = False
    wait_until(lambda: sink.failures >= 3, "down again after part of the replay")
    background.close(timeout=0)
    report = background.report
    assert report is not None
    assert report.spill_path is not None
    kept = [step for step, _ in read_spill(report.spill_path)]
    assert sink.steps == list(range(5))
    assert sink.steps + kept == list(range(40))  # each step in one place, in order
    assert report.pending == len(kept)
