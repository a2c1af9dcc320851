"""A long MLflow outage at training speed: memory, disk, time in log(), every step delivered.

Four training processes log ``--rate`` steps a second (3 numbers a step; the gradewire ones
also a 2-row table every 20 steps) to one lean MLflow server on 127.0.0.1, side by side:

- ``gradewire``: ``BackgroundSink(MlflowSink(...))``, its settings at their defaults;
- ``gradewire capped``: the same with ``max_spill_bytes=--cap`` (256 KiB), less than the
  outage needs: the disk stays under the cap, the rest waits in memory (``max_queue``);
- ``mlflow async``: MLflow's own background logging, ``mlflow.log_metrics(...,
  synchronous=False)`` (its queue is drained by a thread pool);
- ``direct``: ``MlflowSink`` called from the training loop.

Each loop is "compute for 1/rate s, then log": a log() that waits delays training. After
``--healthy`` s the server is killed; ``--minutes`` later (default 10) it is started again
on the same store; after ``--after`` s more the processes stop logging, flush (up to
``--drain`` s) and close. MLflow's environment stays at its defaults (its client retries a
dead server for minutes inside one call), as users have it.

Sampled every second: each process's RSS, the bytes of each gradewire sink's spill files,
and what each gradewire sink still holds ("caught up": at most one second of steps
pending). Each process measures every log() call, and how late its own sleep() woke (the
machine's scheduling noise, for scale). At the end every step each process logged is read
back from MLflow: missing, doubled, wrong.

Run: ``python bench/outage_soak.py [--minutes 10] [--rate 10] [--json out.json]`` (about
13 minutes; ``--minutes 1`` for a short run). Needs the full ``mlflow`` (for the server).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrations/mlflow/tests"))
from mlflow_support import MlflowServer, migrate_template

TRAINER = r"""
import json, os, sys, time
variant, url, run_name, spill, cap, rate, stop_file, status_file = sys.argv[1:9]
rate, period = float(rate), 1.0 / float(rate)
import mlflow
from mlflow import MlflowClient
from gradewire import BackgroundSink, Table
from gradewire_mlflow import MlflowSink

client = MlflowClient(url)
experiment_id = client.get_experiment_by_name("soak").experiment_id  # made by the bench
run_id = client.create_run(experiment_id, run_name=run_name).info.run_id

def numbers(step):
    return {"reward/mean": step / 10000, "reward/count": step, "loss": 1.0 / (step + 1)}

def logs(step):
    out = numbers(step)
    if variant == "gradewire" and step % 20 == 0:
        out["reward/samples"] = Table(initial_headers=["completion", "score"]).add_row(
            [f"answer {step}", step / 10000]).add_row([f"other {step}", 0.5])
    return out

if variant == "gradewire":
    options = {} if cap == "default" else {"max_spill_bytes": int(cap)}  # else its default
    sink = BackgroundSink(MlflowSink(tracking_uri=url, run_id=run_id), spill_dir=spill,
                          exit_timeout=None, **options)
    log = lambda step: sink.log(logs(step), step)
elif variant == "direct":
    from gradewire import SinkError
    sink = MlflowSink(tracking_uri=url, run_id=run_id)
    failed = []
    def log(step):
        try:
            sink.log(logs(step), step)
        except SinkError:  # what a careful loop does: note it, and train on
            failed.append(step)
else:
    mlflow.set_tracking_uri(url)
    mlflow.start_run(run_id=run_id)
    log = lambda step: mlflow.log_metrics(numbers(step), step=step, synchronous=False)

print(run_id, flush=True)
latencies, late, step, started = [], [], 0, time.monotonic()
status = open(status_file, "a", buffering=1)
last_status = 0.0
while not os.path.exists(stop_file):
    t0 = time.perf_counter()
    time.sleep(period)  # the training step
    t1 = time.perf_counter()
    late.append(t1 - t0 - period)  # the machine's own scheduling delay, for comparison
    log(step)
    latencies.append(time.perf_counter() - t1)
    step += 1
    now = time.monotonic()
    if now - last_status >= 1.0:
        pending = sink.pending if variant == "gradewire" else None
        status.write(json.dumps({"t": time.time(), "steps": step, "pending": pending}) + "\n")
        last_status = now
elapsed = time.monotonic() - started
drain = float(sys.argv[9])
t0 = time.monotonic()
result = {"variant": variant, "run_id": run_id, "steps": step, "loop_s": elapsed,
          "latencies": latencies, "late": late}
if variant == "gradewire":
    report = sink.flush(timeout=drain)
    result["flushed_at"] = time.time()
    sink.close(timeout=0)
    result.update(report_ok=report.ok, pending=report.pending, lost=report.lost,
                  lost_reason=report.lost_reason)
elif variant == "direct":
    result["failed_steps"] = failed
    try:
        sink.close()
    except SinkError:
        pass
else:
    mlflow.flush_async_logging()
    mlflow.end_run()
result["drain_s"] = time.monotonic() - t0
print(json.dumps(result), flush=True)
os._exit(0)  # what is left in the background is measured as it is
"""

VARIANTS = ("gradewire", "gradewire capped", "mlflow async", "direct")


def _slug(variant: str) -> str:
    return variant.replace(" ", "-")


def _rss(process: psutil.Process) -> float | None:
    try:
        return float(process.memory_info().rss) / 2**20
    except psutil.Error:
        return None


def _spill_bytes(spill: Path) -> int:
    """The bytes of the spill segments in ``spill`` (the owner and lock files are tiny)."""
    total = 0
    for path in spill.glob("*.jsonl") if spill.is_dir() else []:
        with contextlib.suppress(OSError):  # removed meanwhile: delivered
            total += path.stat().st_size
    return total


def _readback(url: str, run_id: str, steps: int) -> dict[str, int]:
    from mlflow import MlflowClient

    client = MlflowClient(url)
    found = {"missing": 0, "doubled": 0, "wrong": 0}
    for key in ("reward/count", "reward/mean", "loss"):
        points = client.get_metric_history(run_id, key)
        by_step: dict[int, list[float]] = {}
        for point in points:
            by_step.setdefault(int(point.step), []).append(point.value)
        for step in range(steps):
            values = by_step.get(step, [])
            expected = {"reward/count": step, "reward/mean": step / 10000, "loss": 1 / (step + 1)}
            if not values:
                found["missing"] += 1
            else:
                found["doubled"] += len(values) - 1
                found["wrong"] += sum(abs(v - expected[key]) > 1e-12 for v in values)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=10.0, help="steps a second")
    parser.add_argument("--healthy", type=float, default=30.0)
    parser.add_argument("--minutes", type=float, default=10.0, help="length of the outage")
    parser.add_argument("--after", type=float, default=60.0)
    parser.add_argument("--drain", type=float, default=900.0)
    parser.add_argument(
        "--cap", type=int, default=256 * 1024, help="max_spill_bytes of 'gradewire capped'"
    )
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    args.outage = args.minutes * 60
    variants = [v.strip() for v in args.variants.split(",")]
    work = Path(tempfile.mkdtemp(prefix="gradewire-soak-"))
    db = work / "mlflow.db"
    migrate_template(db)
    server = MlflowServer(work / "server", db)
    server.start()
    from mlflow import MlflowClient

    MlflowClient(server.url).create_experiment("soak")  # once: the trainers start together
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(NO_PROXY="127.0.0.1,localhost", MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT="true")
    stop = work / "stop"
    spills = {variant: work / f"spill-{_slug(variant)}" for variant in variants}
    trainers: dict[str, subprocess.Popen[str]] = {}
    for variant in variants:
        status = work / f"status-{_slug(variant)}.jsonl"
        cap = str(args.cap) if variant == "gradewire capped" else "default"
        command = [sys.executable, "-c", TRAINER, variant.split()[0], server.url, variant]
        command += [str(spills[variant]), cap, str(args.rate), str(stop), str(status)]
        command.append(str(args.drain))
        with (work / f"{_slug(variant)}.err").open("w") as err:
            trainers[variant] = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=err, text=True, env=env
            )
    runs = {}
    for variant, trainer in trainers.items():
        assert trainer.stdout is not None
        runs[variant] = trainer.stdout.readline().strip()
    processes = {variant: psutil.Process(trainers[variant].pid) for variant in variants}
    samples: list[dict[str, Any]] = []
    phases: dict[str, float] = {"start": time.monotonic()}
    try:
        plan = [("outage", args.healthy), ("back", args.outage), ("stop", args.after)]
        for phase, seconds in plan:
            until = time.monotonic() + seconds
            while time.monotonic() < until:
                samples.append(
                    {
                        "t": time.monotonic() - phases["start"],
                        "rss": {v: _rss(p) for v, p in processes.items()},
                        "spill": {v: _spill_bytes(d) for v, d in spills.items()},
                    }
                )
                time.sleep(1.0)
            phases[phase] = time.monotonic() - phases["start"]
            if phase == "outage":
                server.kill()
            elif phase == "back":
                server.start()
                phases["up"] = time.monotonic() - phases["start"]
                phases["up_wall"] = time.time()
        stop.touch()
        results = {}
        for variant, trainer in trainers.items():
            assert trainer.stdout is not None
            results[variant] = {"variant": variant, "crashed": True}
            for line in trainer.stdout:  # the result is the one JSON object it prints
                if line.startswith("{"):
                    results[variant] = json.loads(line)
            trainer.wait(60)
        checks = {
            variant: _readback(server.url, runs[variant], result["steps"])
            for variant, result in results.items()
            if "steps" in result
        }
    finally:
        for trainer in trainers.values():
            if trainer.poll() is None:
                trainer.send_signal(signal.SIGKILL)
        server.stop()
    summary = _summary(args, variants, samples, phases, results, checks, work)
    print(json.dumps(summary, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=2))


def _summary(
    args: argparse.Namespace,
    variants: list[str],
    samples: list[dict[str, Any]],
    phases: dict[str, float],
    results: dict[str, Any],
    checks: dict[str, dict[str, int]],
    work: Path,
) -> dict[str, Any]:
    down, up = phases["outage"], phases["up"]
    out: dict[str, Any] = {
        "rate": args.rate,
        "outage_s": round(up - down, 1),
        "work": str(work),
        "variants": {},
    }
    for variant in variants:
        result = results.get(variant, {})
        latencies = sorted(result.get("latencies", []))
        late = sorted(result.get("late", []))
        rss = [(s["t"], s["rss"][variant]) for s in samples if s["rss"][variant] is not None]
        during = [r for t, r in rss if down <= t <= up]
        at_down = next((r for t, r in rss if t >= down), None)
        slope = None
        if len(during) > 10:
            ts = [t for t, _ in rss if down <= t <= up]
            slope = statistics.linear_regression(ts, during).slope * 60
        entry: dict[str, Any] = {
            "steps_logged": result.get("steps"),
            "ideal_steps": round(phases["stop"] * args.rate),
            "log_max_ms": round(latencies[-1] * 1000, 2) if latencies else None,
            "log_p999_ms": (
                round(latencies[int(len(latencies) * 0.999)] * 1000, 3) if latencies else None
            ),
            "log_p99_ms": (
                round(latencies[int(len(latencies) * 0.99)] * 1000, 3) if latencies else None
            ),
            "log_calls_over_10ms": sum(t > 0.01 for t in latencies),
            "log_total_s": round(sum(latencies), 2),
            "sleep_overshoot_max_ms": round(late[-1] * 1000, 2) if late else None,
            "sleep_overshoot_p999_ms": (
                round(late[int(len(late) * 0.999)] * 1000, 3) if late else None
            ),
            "rss_mb_at_outage_start": at_down and round(at_down, 1),
            "rss_mb_max_during_outage": during and round(max(during), 1),
            "rss_mb_at_outage_end": during and round(during[-1], 1),
            "rss_mb_per_minute_during_outage": slope and round(slope, 3),
            "drain_s": result.get("drain_s") and round(result["drain_s"], 1),
            "readback": checks.get(variant),
        }
        if variant.startswith("gradewire"):
            entry["spill_cap_bytes"] = args.cap if variant == "gradewire capped" else "default"
            entry["spill_bytes_max"] = max(s["spill"][variant] for s in samples)
            status = work / f"status-{_slug(variant)}.jsonl"
            rows = [json.loads(line) for line in status.read_text().splitlines()]
            back = phases["up_wall"]
            caught = next(
                (r["t"] for r in rows if r["t"] > back and r["pending"] <= args.rate), None
            )
            entry["caught_up_s_after_server_back"] = (
                None if caught is None else round(caught - back, 1)
            )
            if "flushed_at" in result:  # the end of the flush after the loop stopped
                entry["all_delivered_s_after_server_back"] = round(result["flushed_at"] - back, 1)
            entry["pending_max"] = max((r["pending"] for r in rows), default=None)
        for key in ("report_ok", "pending", "lost", "lost_reason", "crashed"):
            if key in result:
                entry[key] = result[key]
        if result.get("crashed"):
            entry["stderr_tail"] = (work / f"{_slug(variant)}.err").read_text()[-2000:]
        if "failed_steps" in result:
            entry["failed_steps"] = len(result["failed_steps"])
        out["variants"][variant] = entry
    return out


if __name__ == "__main__":
    main()
