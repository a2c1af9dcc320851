"""Spill files a killed (or closed) process left are adopted by the next sink of the same run.

Real processes, really killed (SIGKILL), with a tracker kept in a file that every process
can reach (`FileTracker`; it is "down" while a flag file exists). A tracker recognises a
step it already has by its step and the time it was logged, as MLflow's SQL stores do for
a point, so the tests count what a tracker would store: each (step, time) once.
"""

from __future__ import annotations

import json
import logging
import random
import time
from pathlib import Path

import pytest
from background_doubles import FAST, FileTracker, tracker_rows, wait_until
from spill_processes import Child, sent, spilled, stored

from gradewire import BackgroundSink


def owner_files(spill: Path) -> list[str]:
    return sorted(p.name for p in spill.iterdir()) if spill.is_dir() else []


@pytest.fixture
def tracker(tmp_path: Path) -> FileTracker:
    return FileTracker(tmp_path / "tracker", "run-1")


def test_a_killed_process_spill_is_delivered_first_by_the_next_sink_of_the_run(
    tmp_path: Path, tracker: FileTracker
) -> None:
    tracker.down_flag.touch()
    child = Child(tmp_path, "run-1", 0, 60)
    assert child.adopted == 0
    assert child.line() == "logged"
    wait_until(lambda: spilled(tmp_path / "spill") == list(range(60)), "the steps on disk")
    child.kill()
    tracker.down_flag.unlink()

    sink = BackgroundSink(tracker, spill_dir=tmp_path / "spill", **FAST)
    for step in range(60, 70):
        sink.log({"x": step}, step)
    sink.close()
    report = sink.report
    assert report is not None
    assert report.ok
    assert report.adopted == 60
    assert report.delivered == 70
    assert sent(tmp_path / "tracker") == list(range(70))  # in order, each once
    assert owner_files(tmp_path / "spill") == []


def test_a_spill_of_another_run_is_never_replayed_into_this_one(
    tmp_path: Path, tracker: FileTracker, caplog: pytest.LogCaptureFixture
) -> None:
    tracker.down_flag.touch()
    child = Child(tmp_path, "run-0", 0, 20)
    assert child.line() == "logged"
    wait_until(lambda: spilled(tmp_path / "spill") == list(range(20)), "the steps on disk")
    child.kill()
    tracker.down_flag.unlink()
    before = owner_files(tmp_path / "spill")

    with caplog.at_level(logging.WARNING, logger="gradewire"):
        sink = BackgroundSink(tracker, spill_dir=tmp_path / "spill", **FAST)  # run-1
    sink.log({"x": 100}, 100)
    sink.close()
    assert sink.report is not None
    assert sink.report.adopted == 0
    assert sent(tmp_path / "tracker") == [100]
    assert owner_files(tmp_path / "spill") == before  # left for `gradewire sync`
    assert any(
        "gradewire sync" in r.getMessage() and "run-0" in r.getMessage() for r in caplog.records
    )


def test_two_live_processes_never_adopt_each_other_s_files(
    tmp_path: Path, tracker: FileTracker
) -> None:
    tracker.down_flag.touch()
    first = Child(tmp_path, "run-1", 0, 30)
    assert first.line() == "logged"
    wait_until(lambda: spilled(tmp_path / "spill") == list(range(30)), "the steps on disk")
    second = Child(tmp_path, "run-1", 30, 40)  # alive beside the first: takes nothing
    assert second.adopted == 0
    assert second.line() == "logged"
    wait_until(lambda: spilled(tmp_path / "spill") == list(range(40)), "both on disk")
    first.kill()
    third = Child(tmp_path, "run-1", 40, 45)  # the first is gone: its 30 steps are adopted
    assert third.adopted == 30
    assert third.line() == "logged"
    wait_until(lambda: spilled(tmp_path / "spill") == list(range(45)), "all on disk")
    second.kill()
    third.kill()
    tracker.down_flag.unlink()
    sink = BackgroundSink(tracker, spill_dir=tmp_path / "spill", **FAST)
    assert sink.flush(timeout=30).ok
    sink.close()
    # The first's steps, then the second's, then the third's: owners in the order they began.
    assert sent(tmp_path / "tracker") == list(range(45))
    assert owner_files(tmp_path / "spill") == []


def test_a_call_that_reached_the_tracker_before_the_kill_is_not_stored_twice(
    tmp_path: Path, tracker: FileTracker
) -> None:
    tracker.down_flag.touch()
    child = Child(tmp_path, "run-1", 0, 50)
    assert child.line() == "logged"
    wait_until(lambda: spilled(tmp_path / "spill") == list(range(50)), "the steps on disk")
    child.kill()
    tracker.down_flag.unlink()
    # The next process replays 10 at a time, and is killed right after its third call
    # reached the tracker: before the watermark could say so.
    replay = Child(tmp_path, "run-1", 50, 50, "--batch", "10", "--kill-after", "30")
    assert replay.adopted == 50
    replay.process.wait(60)
    replay.kill()
    assert sent(tmp_path / "tracker") == list(range(30))
    last = Child(tmp_path, "run-1", 50, 60, "--then", "flush")
    assert last.adopted == 30  # the watermark of the killed adopter is at 20 of them
    assert last.line() == "logged"
    assert last.report()["ok"]
    # Sent again: the one call in doubt, with the times its steps were first logged at.
    assert sent(tmp_path / "tracker") == [*range(30), *range(20, 60)]
    assert stored(tmp_path / "tracker") == list(range(60))
    assert owner_files(tmp_path / "spill") == []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_killed_at_random_points_while_logging_and_replaying_every_step_is_stored_once(
    tmp_path: Path, tracker: FileTracker, seed: int
) -> None:
    rng = random.Random(seed)
    spill, logged = tmp_path / "spill", 0
    for round_ in range(4):
        if round_ % 2 == 0:
            tracker.down_flag.touch()
        else:
            tracker.down_flag.unlink(missing_ok=True)
        child = Child(tmp_path, "run-1", logged, logged + 40, "--batch", "3")
        time.sleep(rng.uniform(0.0, 0.3))
        child.kill()
        # What the killed process logged last may be lost (it was only in memory): what it
        # left on disk or delivered counts from here on.
        kept = set(spilled(spill)) | set(sent(tmp_path / "tracker"))
        logged = max([logged - 1, *kept]) + 1
    tracker.down_flag.unlink(missing_ok=True)
    expected = set(spilled(spill)) | set(sent(tmp_path / "tracker"))
    sink = BackgroundSink(tracker, spill_dir=spill, **FAST)
    assert sink.flush(timeout=60).ok
    sink.close()
    assert set(stored(tmp_path / "tracker")) == expected
    assert stored(tmp_path / "tracker") == sorted(expected)  # each once
    steps = sent(tmp_path / "tracker")
    assert len(steps) - len(set(steps)) <= 4 * 3  # at most one call in doubt per kill
    assert owner_files(spill) == []


def test_a_sink_closed_while_down_in_a_process_that_ended_is_closed_by_the_adopter(
    tmp_path: Path, tracker: FileTracker
) -> None:
    tracker.down_flag.touch()
    child = Child(tmp_path, "run-1", 0, 10, "--then", "close")
    assert child.line() == "logged"
    report = child.report()
    assert report["deferred_close"]
    assert report["pending"] == 10
    state = json.loads(next((tmp_path / "spill").glob("*.owner.json")).read_text())
    assert state["closed"]
    tracker.down_flag.unlink()

    sink = BackgroundSink(tracker, spill_dir=tmp_path / "spill", **FAST)
    assert sink.flush(timeout=30).ok
    sink.close()
    rows = tracker_rows(tmp_path / "tracker")
    assert [row[0] for row in rows[:10]] == list(range(10))
    # Then what the ended process's close() would have done, for its target, at its time;
    # then this sink's own close, the same way, and its close().
    theirs, mine, closed = rows[10:]
    assert theirs[0] == mine[0] == "replayed close"
    assert theirs[2] == mine[2] == tracker.delivery_target()
    assert theirs[1] < mine[1] <= time.time()
    assert closed == ["closed", None, "run-1"]
    assert owner_files(tmp_path / "spill") == []


def test_an_adopter_killed_before_it_finished_leaves_the_rest_to_the_next(
    tmp_path: Path, tracker: FileTracker
) -> None:
    tracker.down_flag.touch()
    child = Child(tmp_path, "run-1", 0, 40)
    assert child.line() == "logged"
    wait_until(lambda: spilled(tmp_path / "spill") == list(range(40)), "the steps on disk")
    child.kill()
    adopter = Child(tmp_path, "run-1", 40, 50)  # still down: it adopts, and spills its own
    assert adopter.adopted == 40
    assert adopter.line() == "logged"
    wait_until(lambda: spilled(tmp_path / "spill") == list(range(50)), "all of it on disk")
    adopter.kill()
    tracker.down_flag.unlink()
    sink = BackgroundSink(tracker, spill_dir=tmp_path / "spill", **FAST)
    assert sink.flush(timeout=30).adopted == 50
    sink.close()
    assert sent(tmp_path / "tracker") == list(range(50))
    assert owner_files(tmp_path / "spill") == []
