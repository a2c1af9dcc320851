"""A full spill disk: nothing leaves memory before it is on disk, and every loss is counted.

The tracker is down and the spill directory is on a 64 KiB tmpfs, mounted in a mount
namespace of the child process's own (``unshare``), so the disk really fills up and writes
fail with ENOSPC. Where no namespace can be made (no user namespaces), the child caps its
file sizes with RLIMIT_FSIZE instead, so that writes fail with EFBIG: the same code paths.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SCENARIO = Path(__file__).with_name("full_disk_scenario.py")
STEPS = 300
MAX_QUEUE = 40
_MOUNT = 'mount -t tmpfs -o size=64k gradewire-full-disk "$1" && shift && exec "$@"'


@functools.cache
def _namespaces() -> bool:
    try:
        probe = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "true"],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def run(mode: str, tmp_path: Path) -> dict[str, Any]:
    disk = tmp_path / "disk"
    disk.mkdir()
    command = [sys.executable, str(SCENARIO), str(disk), mode]
    env = dict(os.environ)
    if _namespaces():
        command = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _MOUNT, "sh"]
        command += [str(disk), sys.executable, str(SCENARIO), str(disk), mode]
    else:
        env["FULL_DISK_FSIZE"] = str(64 * 1024)
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def check_files(result: dict[str, Any]) -> None:
    """No spill file ever ended in half a record, not even while the disk was full."""
    assert result["files_while_full"], "the scenario spilled nothing"
    assert all(result["files_while_full"].values()), result["files_while_full"]
    assert all(result["files_after"].values()), result["files_after"]


def test_steps_that_do_not_fit_are_dropped_counted_and_said_never_lost_silently(tmp_path):
    result = run("drop_newest", tmp_path)
    check_files(result)
    report, delivered = result["report"], result["delivered"]
    assert result["returned"] == list(range(STEPS))  # log() never raised
    assert delivered == sorted(set(delivered))  # in order, each once
    assert report["lost"] > 0  # the disk really was full
    # Every step is delivered or counted as lost, and the report says why.
    assert len(delivered) + report["lost"] == STEPS
    assert report["delivered"] == len(delivered)
    assert report["pending"] == report["lost"]
    assert report["lost_reason"] is not None
    assert "could not be written" in report["lost_reason"]
    assert any(s in report["lost_reason"] for s in ("No space left", "File too large"))
    # What memory held when the disk filled was kept, not dropped: more arrived than disk
    # and memory could hold at once, and only the newest were dropped.
    assert delivered[: MAX_QUEUE + 1] == list(range(MAX_QUEUE + 1))


def test_when_full_raise_refuses_the_step_in_log_and_keeps_every_step_it_accepted(tmp_path):
    result = run("raise", tmp_path)
    check_files(result)
    returned, delivered = result["returned"], result["delivered"]
    assert result["refused"], "log() never raised although the disk was full"
    assert all("was NOT kept" in message for message in result["refused"])
    assert len(returned) + len(result["refused"]) == STEPS
    assert delivered == returned  # every step log() accepted arrived, in order, once
    assert result["report"]["lost"] == 0
    assert result["report"]["ok"]


def test_when_full_block_waits_for_room_and_loses_nothing(tmp_path):
    result = run("block", tmp_path)
    check_files(result)
    assert result["still_blocked"]  # log() waited while memory and disk were full
    assert result["delivered"] == list(range(STEPS))
    assert result["report"]["lost"] == 0
    assert result["report"]["ok"]


def test_closing_on_a_full_disk_keeps_what_fits_and_counts_the_rest(tmp_path):
    result = run("close_while_full", tmp_path)
    check_files(result)
    report = result["report"]
    assert result["delivered"] == []
    assert not report["ok"]
    kept = result["kept"]
    assert kept, "nothing was kept on disk"
    assert kept == list(range(len(kept)))  # the oldest steps, in order
    # Each pending entry is in exactly one place: the spill file or the lost count.
    assert report["pending"] == STEPS
    assert report["pending"] == report["rejected"] + report["lost"] + len(kept)
    assert report["lost_reason"] is not None
    assert "in memory at close()" in report["lost_reason"]
