"""max_spill_bytes: the spill files never pass the cap, and what does not fit is counted.

The tracker is down for the whole of the logging; the cap is a few kilobytes, so that the
steps of an outage do not fit. At the cap the disk counts as full: the steps stay in memory
(``max_queue``), and then ``when_full`` applies.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import pytest
from background_doubles import FlakySink, wait_until

from gradewire import SinkError

CAP = 4000
PAD = {f"reward/part_{i}": 0.25 for i in range(5)}  # ~130 bytes a line: ~30 fit the cap


def on_disk_bytes(spill: Path) -> int:
    total = 0
    for path in spill.glob("*.part-*.jsonl") if spill.is_dir() else []:
        with contextlib.suppress(FileNotFoundError):  # delivered and removed meanwhile
            total += path.stat().st_size
    return total


def test_the_cap_holds_and_every_step_that_did_not_fit_is_counted(make, sink, tmp_path):
    spill = tmp_path / "spill"
    sink.down = True
    background = make(sink, max_spill_bytes=CAP, max_queue=20, batch_size=5)
    most = 0
    for step in range(200):
        background.log({"x": step, **PAD}, step)
        most = max(most, on_disk_bytes(spill))
    wait_until(lambda: background.flush(timeout=0).lost > 0, "memory and disk full")
    report = background.flush(timeout=0)
    assert 0 < most <= CAP
    assert report.lost_reason is not None
    assert "spill cap" in report.lost_reason
    assert "max_spill_bytes=4000" in report.lost_reason
    sink.down = False
    report = background.flush(timeout=30)
    # Each step is delivered or counted lost; the oldest were kept, in order, each once.
    assert len(sink.steps) + report.lost == 200
    assert sink.steps == list(range(len(sink.steps)))
    assert report.pending == report.lost
    wait_until(lambda: on_disk_bytes(spill) == 0, "the delivered segments removed")


def test_at_the_cap_when_full_raise_refuses_the_step_in_log(make, tmp_path):
    sink = FlakySink()
    sink.down = True
    background = make(sink, max_spill_bytes=CAP, max_queue=10, when_full="raise")
    accepted: list[int] = []
    with pytest.raises(SinkError, match="spill cap"):  # noqa: PT012 - raises once full
        for step in range(500):
            background.log({"x": step, **PAD}, step)
            accepted.append(step)
    assert on_disk_bytes(tmp_path / "spill") <= CAP
    sink.down = False
    assert background.flush(timeout=30).ok
    assert sink.steps == accepted  # every step log() took, and no other


def test_at_the_cap_when_full_block_waits_until_delivery_makes_room(make, tmp_path):
    sink = FlakySink()
    sink.down = True
    background = make(sink, max_spill_bytes=CAP, max_queue=10, when_full="block")
    returned: list[int] = []

    def produce() -> None:
        for step in range(100):
            background.log({"x": step, **PAD}, step)
            returned.append(step)

    producer = threading.Thread(target=produce)
    producer.start()
    wait_until(lambda: len(returned) >= 30, "memory and disk to fill")
    time.sleep(0.3)  # unblocked, the other 70 steps would be logged in microseconds
    assert producer.is_alive()
    assert len(returned) < 100
    assert on_disk_bytes(tmp_path / "spill") <= CAP
    sink.down = False
    producer.join(30)
    assert not producer.is_alive()
    assert background.flush(timeout=30).ok
    assert sink.steps == list(range(100))
