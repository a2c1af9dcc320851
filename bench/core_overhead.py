"""What gradewire's grader core costs, measured against the alternative in the same run.

1. Per-sample cost of `BaseGrader.from_function(...).grade()` (scoring + Grade + logging)
   beside a bare `await fn(sample)` loop over the same samples.
2. `get_logs()` over 1M logged scores beside `statistics.mean` + `statistics.stdev` over
   the same values.
3. Memory per logged numeric value, beyond the user's own dicts.

Run: `python bench/core_overhead.py [--samples N] [--repeats R]`. Absolute times drift on
a shared machine; the ratios are what this script stands behind.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable

from gradewire import BaseGrader, StringThread


async def score(sample: StringThread) -> float:
    return 1.0 if len(sample.metadata) else 0.0


def best_of(repeats: int, run: Callable[[], float]) -> float:
    """Fastest of several runs: the least disturbed by other work on the machine."""
    return min(run() for _ in range(repeats))


def bench_grade(samples: list[StringThread], repeats: int) -> tuple[float, float]:
    async def bare() -> float:
        start = time.perf_counter()
        for sample in samples:
            await score(sample)
        return time.perf_counter() - start

    async def graded() -> float:
        grader = BaseGrader.from_function("bench", score)
        start = time.perf_counter()
        for sample in samples:
            await grader.grade(sample)
        elapsed = time.perf_counter() - start
        assert grader.get_logs()["score/count"] == len(samples)
        return elapsed

    bare_s = best_of(repeats, lambda: asyncio.run(bare()))
    graded_s = best_of(repeats, lambda: asyncio.run(graded()))
    return bare_s, graded_s


def bench_get_logs(values: list[float], repeats: int) -> tuple[float, float]:
    grader = BaseGrader.from_function("bench", score)
    for value in values:
        grader.add_log({"score": value})

    def ours() -> float:
        start = time.perf_counter()
        logs = grader.get_logs()
        elapsed = time.perf_counter() - start
        assert logs["score/count"] == len(values)
        return elapsed

    def stdlib() -> float:
        start = time.perf_counter()
        statistics.mean(values)
        statistics.stdev(values)
        return time.perf_counter() - start

    return best_of(repeats, ours), best_of(max(1, repeats // 2), stdlib)


def bench_memory(values: list[float]) -> float:
    records = [{"score": value} for value in values]  # the user's own dicts
    grader = BaseGrader.from_function("bench", score)
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    for record in records:
        grader.add_log(record)
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return (after - before) / len(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n = args.samples

    samples = [
        StringThread([("user", f"q{i}"), ("assistant", f"a{i}")], metadata={"i": i})
        for i in range(min(n, 200_000))
    ]
    samples = (samples * (n // len(samples) + 1))[:n]
    bare_s, graded_s = bench_grade(samples, args.repeats)
    print(f"grade() + logging, {n:,} samples (best of {args.repeats}):")
    print(f"  bare `await fn(sample)` loop : {bare_s / n * 1e6:6.3f} us/sample")
    print(f"  from_function grader.grade() : {graded_s / n * 1e6:6.3f} us/sample")
    print(f"  gradewire overhead           : {(graded_s - bare_s) / n * 1e6:6.3f} us/sample")
    del samples

    values = [((i * 7919) % 1000) / 1000 for i in range(n)]
    ours_s, stdlib_s = bench_get_logs(values, args.repeats)
    print(f"get_logs() over {n:,} logged scores:")
    print(f"  statistics.mean + stdev      : {stdlib_s * 1e3:9.2f} ms")
    print(f"  grader.get_logs()            : {ours_s * 1e3:9.2f} ms")
    print(f"  speed-up                     : {stdlib_s / ours_s:9.1f}x  (target >= 20x)")

    per_value = bench_memory(values)
    print(f"memory per logged value beyond the user's dict: {per_value:.1f} bytes (target <= 100)")


if __name__ == "__main__":
    main()
