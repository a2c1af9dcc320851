"""What a training loop pays to log to MLflow through gradewire, against MLflow's own calls.

Against a lean MLflow tracking server that this script starts on 127.0.0.1 (sqlite store
and artifacts in a temp dir), a loop of ``--steps`` steps logs 20 metrics per step and a
50-row table every 100 steps. The script prints, from one run:

1. the time the loop spends inside ``log()`` of ``BackgroundSink(MlflowSink(...))``, and
   the time until everything is in MLflow (``flush()``, and from the first step);
2. direct ``mlflow.log_metric`` per key and ``mlflow.log_metrics`` per step (metrics only,
   no tables: a conservative baseline), and ``MlflowSink.log`` called directly (batched,
   but synchronous). These cost milliseconds per HTTP request, so they run on the first
   ``--baseline-steps`` steps (per key) and 5x that (per step) and are scaled linearly to
   ``--steps``; the output says so;
3. the ratios. Target: the loop's blocked time >= 50x lower than per-key logging.

Run: ``python bench/sink_overhead.py [--steps 5000] [--baseline-steps 100]``. Needs
``gradewire-mlflow`` and the full ``mlflow`` (for the server). Absolute times drift on a
shared machine; the ratios are what this script stands behind.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gradewire import BackgroundSink, Table
from gradewire.core import LogValue

METRICS = 20
TABLE_EVERY = 100
TABLE_ROWS = 50


@contextmanager
def mlflow_server(directory: Path) -> Iterator[str]:
    """A lean MLflow server (one worker, no job runner) in its own process group."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    log = (directory / "server.log").open("wb")
    command = [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--backend-store-uri",
        f"sqlite:///{directory / 'mlflow.db'}",
        "--artifacts-destination",
        str(directory / "artifacts"),
    ]
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    process = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                text = (directory / "server.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"mlflow server did not start:\n{text}")
            try:
                with opener.open(f"{url}/health", timeout=2):
                    break
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def table(step: int) -> Table:
    out = Table(initial_headers=["Prompt", "Completion", "Score"])
    for i in range(TABLE_ROWS):
        out.add_row([f"prompt {step}.{i}", f"completion {step}.{i} " * 8, (i % 10) / 10])
    return out


def step_logs(step: int) -> dict[str, LogValue]:
    logs: dict[str, LogValue] = {
        f"grader{i % 4}/metric{i}/mean": (step * 31 + i) % 97 / 97 for i in range(METRICS)
    }
    if step % TABLE_EVERY == 0:
        logs["grader0/scored_samples"] = table(step)
    return logs


def bench_background(url: str, steps: int, spill: Path) -> tuple[float, float, float, int]:
    """(seconds inside log(), seconds in flush(), seconds from first step to delivered, runs)."""
    from gradewire_mlflow import MlflowSink

    sink = MlflowSink(tracking_uri=url, experiment_name="bench", run_name="background")
    background = BackgroundSink(sink, spill_dir=spill, exit_timeout=None)
    prepared = [step_logs(step) for step in range(steps)]
    inside = 0.0
    start = time.perf_counter()
    for step, logs in enumerate(prepared):
        before = time.perf_counter()
        background.log(logs, step)
        inside += time.perf_counter() - before
    before_flush = time.perf_counter()
    report = background.flush(timeout=3600)
    flushed = time.perf_counter()
    background.close()
    assert report.ok, report
    return inside, flushed - before_flush, flushed - start, report.delivered


def bench_per_key(steps: int) -> float:
    import mlflow

    prepared = [step_logs(step) for step in range(steps)]
    with mlflow.start_run(run_name="per-key"):
        start = time.perf_counter()
        for step, logs in enumerate(prepared):
            for key, value in logs.items():
                if not isinstance(value, Table):
                    mlflow.log_metric(key, value, step=step)
        return time.perf_counter() - start


def bench_per_step(steps: int) -> float:
    import mlflow

    prepared = [step_logs(step) for step in range(steps)]
    with mlflow.start_run(run_name="per-step"):
        start = time.perf_counter()
        for step, logs in enumerate(prepared):
            mlflow.log_metrics(
                {k: v for k, v in logs.items() if not isinstance(v, Table)}, step=step
            )
        return time.perf_counter() - start


def bench_direct_sink(url: str, steps: int) -> float:
    from gradewire_mlflow import MlflowSink

    prepared = [step_logs(step) for step in range(steps)]
    sink = MlflowSink(tracking_uri=url, experiment_name="bench", run_name="direct")
    start = time.perf_counter()
    for step, logs in enumerate(prepared):
        sink.log(logs, step)
    sink.close()
    return time.perf_counter() - start


def bench_table_rewrite(url: str, sizes: list[int]) -> list[tuple[int, int, float]]:
    """(rows, bytes, seconds) to render one JSON table file and upload it whole (best of 3)."""
    from mlflow import MlflowClient

    from gradewire_mlflow._tables import TableState

    client = MlflowClient(url)
    experiment = client.get_experiment_by_name("bench")
    assert experiment is not None
    run_id = client.create_run(experiment.experiment_id, run_name="table-rewrite").info.run_id
    state = TableState("rewrite")
    out = []
    for rows in sizes:
        step = 0
        while len(state.rows) < rows:
            state.add(table(step), step)
            step += TABLE_EVERY
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            text = state.render()
            client.log_text(run_id, text, state.path)
            best = min(best, time.perf_counter() - start)
        out.append((len(state.rows), len(text), best))
    client.set_terminated(run_id)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--baseline-steps", type=int, default=100)
    args = parser.parse_args()
    steps = args.steps
    key_steps = min(args.baseline_steps, steps)
    step_steps = min(5 * args.baseline_steps, steps)

    with tempfile.TemporaryDirectory(prefix="gradewire-bench-") as tmp:
        directory = Path(tmp)
        started = time.perf_counter()
        with mlflow_server(directory) as url:
            print(f"lean MLflow server on {url} up in {time.perf_counter() - started:.1f}s")
            os.environ["MLFLOW_TRACKING_URI"] = url
            os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
            import mlflow

            mlflow.set_experiment("bench")
            inside, flush_s, total_s, delivered = bench_background(url, steps, directory / "s")
            per_key = bench_per_key(key_steps)
            per_step = bench_per_step(step_steps)
            direct = bench_direct_sink(url, step_steps)
            rewrites = bench_table_rewrite(url, [2_500, 10_000])
            rows = sum(1 for s in range(steps) if s % TABLE_EVERY == 0) * TABLE_ROWS

    per_key_scaled = per_key / key_steps * steps
    per_step_scaled = per_step / step_steps * steps
    direct_scaled = direct / step_steps * steps
    print(
        f"\n{steps:,} steps x {METRICS} metrics = {steps * METRICS:,} metric points, "
        f"+ a {TABLE_ROWS}-row table every {TABLE_EVERY} steps ({rows:,} rows)\n"
    )
    print("time the training loop is blocked:")
    print(f"  BackgroundSink(MlflowSink).log()  : {inside:9.3f} s   (measured, all steps)")
    print(
        f"  mlflow.log_metric per key         : {per_key_scaled:9.1f} s   "
        f"(measured {per_key:.1f} s on {key_steps} steps, scaled x{steps / key_steps:g}; "
        "metrics only)"
    )
    print(
        f"  mlflow.log_metrics per step       : {per_step_scaled:9.1f} s   "
        f"(measured {per_step:.1f} s on {step_steps} steps, scaled x{steps / step_steps:g}; "
        "metrics only)"
    )
    print(
        f"  MlflowSink.log direct (no thread) : {direct_scaled:9.1f} s   "
        f"(measured {direct:.1f} s on {step_steps} steps, scaled x{steps / step_steps:g})"
    )
    print("\nratios (how much less the loop waits with BackgroundSink(MlflowSink)):")
    print(f"  vs log_metric per key   : {per_key_scaled / inside:10.0f}x  (target >= 50x)")
    print(f"  vs log_metrics per step : {per_step_scaled / inside:10.0f}x")
    print(f"  vs MlflowSink direct    : {direct_scaled / inside:10.0f}x")
    print("\ndelivery (the worker thread, off the loop):")
    print(f"  flush() after the last step       : {flush_s:9.2f} s")
    print(f"  first step to all in MLflow       : {total_s:9.2f} s   ({delivered:,} entries)")
    print(f"  per-key logging would still need  : {per_key_scaled:9.1f} s   (scaled, as above)")
    print("\nrewriting one appending JSON table file whole (render + upload, on the worker):")
    for rows, size, seconds in rewrites:
        print(f"  {rows:6,} rows, {size / 1e6:5.2f} MB      : {seconds * 1e3:9.1f} ms")


if __name__ == "__main__":
    main()
