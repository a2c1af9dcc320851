"""A call that hangs: memory goes to disk after stall_timeout, so a hard kill loses little.

A tracker client that retries for minutes on its own (MLflow's, at its defaults), or a
server that accepts connections and never answers, keeps the call from returning. The
worker does not wait for it: after ``stall_timeout`` the sink counts as down, what is in
memory (the hanging call's entries too) goes to disk, and so does everything logged after.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from background_doubles import on_disk, wait_until

from gradewire.sinks import read_spill


def test_a_hanging_call_sends_memory_to_disk_and_delivery_resumes_when_it_returns(
    make, sink, tmp_path
):
    sink.gate = threading.Event()  # every call hangs until the gate opens
    background = make(sink, batch_size=8, stall_timeout=0.05)
    for step in range(30):
        background.log({"x": step}, step)
    spill = tmp_path / "spill"
    wait_until(lambda: on_disk(spill) == list(range(30)), "every step on disk")
    assert not background.is_healthy  # the hang counts as an outage
    assert background.delivered == 0
    for step in range(30, 40):  # while it still hangs: straight to disk
        background.log({"x": step}, step)
    wait_until(lambda: on_disk(spill) == list(range(40)), "the later steps on disk")
    sink.gate.set()
    report = background.flush(timeout=20)
    assert report.ok
    assert sink.steps == list(range(40))  # the hanging call's steps once, not again from disk
    assert background.is_healthy
    wait_until(lambda: not list(spill.glob("*.jsonl")), "the spill removed")


_TRAINER = textwrap.dedent(
    """
    import sys, threading, time
    from gradewire import BackgroundSink

    class HangingSink:  # accepts the first step, then never returns (a dead server, retried)
        def __init__(self):
            self.calls = 0
        def log(self, logs, step):
            self.calls += 1
            if self.calls > 1:
                threading.Event().wait()
        def log_config(self, config):
            pass
        def close(self):
            pass

    sink = BackgroundSink(HangingSink(), spill_dir=sys.argv[1], batch_size=1,
                          flush_interval=0.05, stall_timeout=0.2, exit_timeout=None)
    for step in range(200):
        sink.log({"x": float(step)}, step)
        time.sleep(0.002)
    print("logged", flush=True)
    time.sleep(600)
    """
)


def test_a_hard_kill_while_the_tracker_hangs_loses_nothing_logged_before_the_last_moments(
    tmp_path: Path,
) -> None:
    spill = tmp_path / "spill"
    with subprocess.Popen(
        [sys.executable, "-c", _TRAINER, str(spill)], stdout=subprocess.PIPE, text=True
    ) as trainer:
        try:
            assert trainer.stdout is not None
            assert trainer.stdout.readline() == "logged\n"
            # Step 0 was delivered; every later step reaches disk while the call hangs.
            wait_until(lambda: on_disk(spill) == list(range(1, 200)), "every step on disk")
        finally:
            trainer.send_signal(signal.SIGKILL)
    kept = [step for path in sorted(spill.glob("*.jsonl")) for step, _ in read_spill(path)]
    assert kept == list(range(1, 200))
    for path in spill.glob("*.jsonl"):  # whole lines only, killed or not
        assert all(json.loads(line) for line in path.read_bytes().splitlines())
