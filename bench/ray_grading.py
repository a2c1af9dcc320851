"""Grading on Ray beside one process: rows/s of a judge-like grader, and Ray's fixed costs.

The grader is a `BinaryJudgeGrader` whose judge is a loopback OpenAI-compatible server
(`tests/judge_server.py` in its bench mode, in a process of its own) that answers every
call after 50 ms: the shape of an LLM-judged eval or reward, with the model's time
replaced by a fixed wait.

Measured in one run:

* one process: ``grade_many`` over N rows with ``C`` calls in flight;
* Ray's start-up: ``ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)``;
* `grade_dataset` on A actors with C/A calls in flight each (the same concurrency in all),
  twice on C rows (its fixed cost: starting the actors, the merge; the lower of the
  two) and once on N rows;
  the per-row cost on Ray is the difference over the extra rows.

From those it prints where Ray catches up with one process at this size. On a 2-core
machine shared with other work the figures move between runs; compare the rows of one
run.

Run: ``python bench/ray_grading.py [--rows 8000] [--concurrency 128] [--actors 2]``
(needs ``pip install 'gradewire[ray]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import gradewire as gw

SERVER = Path(__file__).resolve().parent.parent / "tests" / "judge_server.py"
LATENCY = 0.05
ANSWER = json.dumps({"reasoning": "The answer is right.", "verdict": "PASS"})


@contextlib.contextmanager
def server_process() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--latency", str(LATENCY), "--text", ANSWER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def judge(base_url: str) -> gw.BaseGrader:
    model = gw.OpenAIChatModel("judge", base_url=base_url, max_concurrency=1024)
    return gw.BinaryJudgeGrader("judge", model, "The answer is correct.", sample_tables=False)


def rows(n: int) -> list[dict[str, object]]:
    # Distinct prompts: identical ones would be shared into one judge call.
    return [
        {"prompt": f"Question {i}: what is {i} + {i}?", "completion": str(2 * i)} for i in range(n)
    ]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def one_process(base_url: str, n: int, concurrency: int) -> tuple[float, float]:
    """Seconds and CPU seconds to grade ``n`` rows here."""
    from gradewire_ray._rows import default_row_thread

    grader = judge(base_url)
    threads = [default_row_thread(r) for r in rows(n)]
    await grader.grade_many(threads[: min(n, concurrency)], max_concurrency=concurrency)  # warm
    grader.clear_logs()
    start, cpu = time.perf_counter(), cpu_seconds()
    await grader.grade_many(threads, max_concurrency=concurrency)
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    assert grader.log_state().to_logs()["score/count"] == n
    return seconds, cpu


def on_ray(ray: object, base_url: str, n: int, concurrency: int, actors: int) -> float:
    """Seconds for `grade_dataset` over ``n`` rows, actors started included."""
    import ray.data

    from gradewire_ray import grade_dataset

    dataset = ray.data.from_items(rows(n), override_num_blocks=max(1, min(16, n // 256)))
    start = time.perf_counter()
    graded = grade_dataset(
        dataset, [judge(base_url)], actors=actors, concurrency=concurrency // actors
    )
    seconds = time.perf_counter() - start
    assert graded.states["judge"].to_logs()["score/count"] == n, graded.get_logs("judge")
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8000)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--actors", type=int, default=2)
    args = parser.parse_args(argv)
    n, c, a = args.rows, args.concurrency, args.actors
    ideal = c / LATENCY
    with server_process() as base_url:
        local_s, local_cpu = asyncio.run(one_process(base_url, n, c))
        local_rate = n / local_s
        import ray

        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # loopback only
        start = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        init_s = time.perf_counter() - start
        try:
            # The fixed cost moves most between runs: the least disturbed of two.
            small_s = min(on_ray(ray, base_url, c, c, a) for _ in range(2))
            big_s = on_ray(ray, base_url, n, c, a)
        finally:
            ray.shutdown()
    per_row = (big_s - small_s) / (n - c)
    ray_rate = 1.0 / per_row if per_row > 0 else float("inf")
    fixed = small_s - c * per_row
    print(f"judge: 50 ms a call, {c} calls in flight (ideal {ideal:,.0f} rows/s), {n:,} rows")
    print(
        f"one process       {local_rate:8,.0f} rows/s  ({local_s:.1f} s; "
        f"{1000 * local_cpu / n:.2f} ms CPU a row)"
    )
    print(f"ray.init          {init_s:8.1f} s   (once per job)")
    print(
        f"grade_dataset     {ray_rate:8,.0f} rows/s  once running ({a} actors x {c // a}); "
        f"{fixed:.1f} s fixed per call (actors, merge); {n:,} rows took {big_s:.1f} s"
    )
    print(f"ratio ray/one process, per row once running: {ray_rate / local_rate:.2f}x")
    start_up = init_s + fixed
    if ray_rate > local_rate:
        even = start_up / (1 / local_rate - 1 / ray_rate)
        print(f"here, ray catches up (start-up included) at about {even:,.0f} rows")
    else:
        print("here, ray never catches up: both cores were already busy")
    # On a cluster each actor has a core of its own: K actors at this machine's per-actor
    # rate, against one process at its rate here, and the same start-up.
    per_actor = ray_rate / a
    for k in (8, 32, 128):
        cluster = k * per_actor
        if cluster > local_rate:
            even = start_up / (1 / local_rate - 1 / cluster)
            print(
                f"{k:4d} actors ({cluster:,.0f} rows/s if the judge keeps up): "
                f"ray ahead after about {even:,.0f} rows"
            )


if __name__ == "__main__":
    main()
