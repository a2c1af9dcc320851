"""gradewire sync's machinery on any tracker: scan a spill directory, deliver run by run.

The tracker is a `FileTracker` (a file several processes reach); the training processes
are real, and really killed. The MLflow integration has the same tests against a real
MLflow server, through the command line.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from background_doubles import FileTracker, tracker_rows, wait_until
from spill_processes import Child, sent, spilled

from gradewire import BackgroundSink, InvalidInputError
from gradewire.sinks import read_spill, read_spill_configs
from gradewire.sinks.background._owner import OwnerLock, lock_path
from gradewire.sinks.background._spill_format import Entry, decode_entry, encode_entry
from gradewire.sinks.background._spill_replay import scan_spill, sync_spill


def file_tracker(target: dict[str, Any], *, closed: bool, run: str | None = None) -> FileTracker:
    """The factory `sync_spill` calls for "file" targets; ``run`` overrides the run."""
    where = target["run"]
    return FileTracker(Path(where["path"]), run or where["run"])


FACTORIES = {"file": file_tracker}


def killed_with_steps_on_disk(tmp_path: Path, run: str, first: int, stop: int) -> None:
    """A process of ``run`` logs steps first..stop-1 while the tracker is down, and is killed.

    It is killed once all of them are on disk: counted beside what earlier processes
    left there, which may hold the same steps.
    """
    before = Counter(spilled(tmp_path / "spill"))
    expected = before + Counter(range(first, stop))
    child = Child(tmp_path, run, first, stop)
    assert child.line() == "logged"
    wait_until(lambda: Counter(spilled(tmp_path / "spill")) == expected, "on disk")
    child.kill()


def test_entries_keep_their_time_and_a_close_and_read_spill_leaves_closes_out(tmp_path):
    step = Entry(4, 2, {"x": 1.5}, None, 1718000000.25)
    close = Entry(5, None, None, None, 1718000001.5, {"owner": "s", "target": {"kind": "k"}})
    assert decode_entry(encode_entry(step)) == step
    assert decode_entry(encode_entry(close)) == close
    assert decode_entry(b'{"v":1,"seq":3,"step":1,"logs":{}}').time is None  # older files
    with pytest.raises(ValueError, match="'t' must be a number"):
        decode_entry(b'{"v":1,"seq":3,"t":"noon","step":1,"logs":{}}')
    path = tmp_path / "s.part-000001.jsonl"
    path.write_bytes(encode_entry(step) + encode_entry(close))
    assert read_spill(path) == [(2, {"x": 1.5})]
    assert read_spill_configs(path) == []


def test_read_spill_leaves_out_what_the_owner_file_says_was_delivered(tmp_path):
    tracker = FileTracker(tmp_path / "tracker")
    tracker.down_flag.touch()
    killed_with_steps_on_disk(tmp_path, "run-1", 0, 20)
    spill = tmp_path / "spill"
    (owner,) = spill.glob("*.owner.json")
    state = json.loads(owner.read_text())
    state["settled"] = 12  # as if a replay had delivered the first 12
    owner.write_text(json.dumps(state))
    (segment,) = spill.glob("*.part-*.jsonl")
    assert [step for step, _ in read_spill(segment)] == list(range(12, 20))
    rejected = spill / f"{state['stem']}.rejected.jsonl"
    rejected.write_bytes(segment.read_bytes())  # set-aside files are all below it: kept
    assert [step for step, _ in read_spill(rejected)] == list(range(20))


def test_scan_and_dry_run_say_what_each_run_holds_and_send_nothing(tmp_path):
    tracker = FileTracker(tmp_path / "tracker")
    tracker.down_flag.touch()
    killed_with_steps_on_disk(tmp_path, "run-1", 0, 20)
    killed_with_steps_on_disk(tmp_path, "run-2", 100, 105)
    files = sorted((tmp_path / "spill").iterdir())
    results = sync_spill(tmp_path / "spill", factories=FACTORIES, dry_run=True)
    assert [(r.run.target or {})["run"]["run"] for r in results] == ["run-1", "run-2"]
    assert [(r.run.steps, r.run.first_step, r.run.last_step) for r in results] == [
        (20, 0, 19),
        (5, 100, 104),
    ]
    assert all(r.skipped == "dry run" and not r.run.closed for r in results)
    assert sorted((tmp_path / "spill").iterdir()) == files
    assert not (tmp_path / "tracker").exists()


def test_sync_delivers_each_run_to_its_own_run_once_and_removes_the_files(tmp_path):
    tracker = FileTracker(tmp_path / "tracker")
    tracker.down_flag.touch()
    killed_with_steps_on_disk(tmp_path, "run-1", 0, 20)
    killed_with_steps_on_disk(tmp_path, "run-1", 20, 30)  # a second process of run-1
    killed_with_steps_on_disk(tmp_path, "run-2", 100, 105)
    tracker.down_flag.unlink()
    results = sync_spill(tmp_path / "spill", factories=FACTORIES, timeout=30)
    assert [r.ok for r in results] == [True, True]
    assert [r.report.adopted for r in results if r.report] == [30, 5]
    assert sent(tmp_path / "tracker") == [*range(30), *range(100, 105)]
    assert list((tmp_path / "spill").iterdir()) == []
    assert sync_spill(tmp_path / "spill", factories=FACTORIES) == []  # nothing left
    (tmp_path / "spill" / "abc.rejected.jsonl").write_text("")  # set aside: stays, not sent
    assert sync_spill(tmp_path / "spill", factories=FACTORIES) == []
    (tmp_path / "spill" / "notes.txt").write_text("not ours")
    with pytest.raises(InvalidInputError, match="holds no gradewire spill files"):
        sync_spill(tmp_path / "spill", factories=FACTORIES)


class _Guarded:
    """A "file" factory that says where it delivers, and that only the files name it."""

    def __init__(self) -> None:
        self.made = 0

    def __call__(self, target: dict[str, Any], *, closed: bool) -> FileTracker:
        self.made += 1
        return file_tracker(target, closed=closed)

    def destination(self, target: dict[str, Any]) -> tuple[str, str | None]:
        return f"file {target['run']['path']}", "only the files name it: confirm"


def test_a_destination_only_the_files_name_is_not_sent_to_unless_confirmed(tmp_path):
    tracker = FileTracker(tmp_path / "tracker")
    tracker.down_flag.touch()
    killed_with_steps_on_disk(tmp_path, "run-1", 0, 5)
    tracker.down_flag.unlink()
    guarded = _Guarded()
    (dry,) = sync_spill(tmp_path / "spill", factories={"file": guarded}, dry_run=True)
    assert dry.destination == f"file {tmp_path / 'tracker'}"
    assert dry.skipped == "dry run; only the files name it: confirm"
    (refused,) = sync_spill(tmp_path / "spill", factories={"file": guarded}, timeout=30)
    assert (refused.report, refused.skipped) == (None, "only the files name it: confirm")
    assert guarded.made == 0  # no sink made, nothing sent
    assert sent(tmp_path / "tracker") == []
    (confirmed,) = sync_spill(
        tmp_path / "spill", factories={"file": guarded}, timeout=30, trust_targets=True
    )
    assert confirmed.ok
    assert confirmed.destination == f"file {tmp_path / 'tracker'}"
    assert sent(tmp_path / "tracker") == list(range(5))


def test_sync_into_another_run_refuses_a_folder_of_several_runs(tmp_path):
    tracker = FileTracker(tmp_path / "tracker")
    tracker.down_flag.touch()
    killed_with_steps_on_disk(tmp_path, "run-1", 0, 5)
    killed_with_steps_on_disk(tmp_path, "run-2", 0, 5)
    with pytest.raises(InvalidInputError, match="holds the spill files of 2 runs"):
        sync_spill(tmp_path / "spill", factories=FACTORIES, overrides={"run": "run-3"})


def test_sync_leaves_a_live_process_alone_and_says_so(tmp_path):
    tracker = FileTracker(tmp_path / "tracker")
    tracker.down_flag.touch()
    live = Child(tmp_path, "run-1", 0, 10)
    try:
        assert live.line() == "logged"
        wait_until(lambda: spilled(tmp_path / "spill") == list(range(10)), "on disk")
        tracker.down_flag.unlink()  # it would deliver them itself, in its own time
        (result,) = sync_spill(tmp_path / "spill", factories=FACTORIES, timeout=5)
        assert result.skipped == "held by a live process"
        assert [owner.state.pid for owner in result.run.live] == [live.process.pid]
    finally:
        live.kill()


def test_an_unknown_kind_or_a_bad_folder_is_refused_with_the_fix(tmp_path):
    tracker = FileTracker(tmp_path / "tracker")
    tracker.down_flag.touch()
    killed_with_steps_on_disk(tmp_path, "run-1", 0, 3)
    (result,) = sync_spill(tmp_path / "spill", factories={})
    assert result.skipped is not None
    assert "no installed integration delivers to 'file' targets" in result.skipped
    with pytest.raises(InvalidInputError, match="is not a directory"):
        scan_spill(tmp_path / "tracker")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "a.jsonl").write_text("{}\n")
    with pytest.raises(InvalidInputError, match=r"1 \.jsonl files without an owner file"):
        scan_spill(tmp_path / "other")


def test_an_unreadable_owner_file_is_left_alone_with_a_warning(tmp_path, caplog):
    tracker = FileTracker(tmp_path / "tracker")
    tracker.down_flag.touch()
    killed_with_steps_on_disk(tmp_path, "run-1", 0, 3)
    (owner,) = (tmp_path / "spill").glob("*.owner.json")
    owner.write_text("not json")
    with (
        caplog.at_level(logging.WARNING, logger="gradewire"),
        pytest.raises(InvalidInputError, match="holds no gradewire spill files"),
    ):
        scan_spill(tmp_path / "spill")
    assert any("not a readable gradewire owner file" in r.getMessage() for r in caplog.records)
    assert owner.read_text() == "not json"


def test_a_forked_child_does_not_keep_its_parent_s_lock(tmp_path):
    path = lock_path(tmp_path, "stem")
    lock = OwnerLock.take(path, create=True)
    assert lock is not None
    reader, writer = os.pipe()
    ready_reader, ready_writer = os.pipe()
    pid = os.fork()  # as a DataLoader worker is: no exec, so close-on-exec does not apply
    if pid == 0:  # the child outlives the lock's owner, until the parent closes the pipe
        try:
            os.close(writer)
            os.write(ready_writer, b"x")  # past fork(): its at-fork hooks have run
            os.read(reader, 1)
        finally:
            os._exit(0)
    os.close(reader)
    try:
        assert os.read(ready_reader, 1) == b"x"
        lock.release(remove=False)  # the parent lets go while the child lives on
        again = OwnerLock.take(path, create=False)
        assert again is not None  # the child did not keep it
        again.release(remove=True)
    finally:
        os.close(writer)
        os.close(ready_reader)
        os.close(ready_writer)
        os.waitpid(pid, 0)


def test_a_lock_left_without_its_owner_file_is_swept(tmp_path):
    spill = tmp_path / "spill"
    spill.mkdir()
    stale = lock_path(spill, "Gone-1")
    stale.touch()  # a process killed between taking its lock and writing its owner file
    (spill / "Gone-1.owner.json.tmp").write_text("{")
    held = OwnerLock.take(lock_path(spill, "Alive-1"), create=True)  # starting right now
    assert held is not None
    tracker = FileTracker(tmp_path / "tracker")
    sink = BackgroundSink(tracker, spill_dir=spill, exit_timeout=None)
    sink.close()
    assert sorted(p.name for p in spill.iterdir()) == ["Alive-1.lock"]
    held.release(remove=True)
    assert tracker_rows(tmp_path / "tracker")[-1] == ["closed", None, "run-1"]
