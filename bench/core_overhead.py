"""What gradewire's grader core costs, measured against the alternatives in the same run.

1. Per sample, a `BaseGrader.from_function(...)` grader's ``grade()`` (scoring + Grade +
   logging) over 200,000 samples, beside a bare ``await fn(sample)`` loop and beside
   adaptive-harmony's ``BaseGrader.from_function`` on the same samples; then each one's
   ``get_logs(clear=True)``.
2. ``get_logs()`` over 1M logged scores beside ``statistics.mean`` + ``statistics.stdev``.
3. Memory per logged number: ``add_log`` of the user's own dicts (the dicts not counted),
   and a function grader's ``grade()`` (everything it keeps counted), beside
   adaptive-harmony's.
4. A sync scoring function (adaptive-harmony takes async ones only): ``grade()`` of
   ``from_function(fn)`` once its first calls measured it fast (inline, each call timed),
   beside ``threads=False`` (inline, untimed: how every sync function ran before worker
   threads) and ``threads=True`` (a worker thread per call).

adaptive-harmony (Python 3.12) is measured when it can be imported; otherwise its column
is skipped with a note (``make compat`` builds a venv that has both). Run:
``python bench/core_overhead.py [--samples N] [--repeats R]``. Absolute times drift on a
shared machine; the ratios are what this script stands behind.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import gradewire as gw
from _results import Alternative, Figure
from _results import record as record_result

try:
    import adaptive_harmony as ah
    from adaptive_harmony.graders import BaseGrader as AhBaseGrader
except ImportError as exc:  # measured where it is installed (make compat)
    ah = None
    AH_MISSING = f"adaptive-harmony not importable here ({exc.name or exc}): its column is skipped"
else:
    AH_MISSING = ""

GRADE_SAMPLES = 200_000


async def score(sample: Any) -> float:
    return 1.0 if len(sample.metadata) else 0.5


def best_of(repeats: int, run: Callable[[], float]) -> float:
    """Fastest of several runs: the least disturbed by other work on the machine."""
    return min(run() for _ in range(repeats))


def threads(kind: Any, n: int) -> list[Any]:
    return [kind([("user", f"q{i}"), ("assistant", f"a{i}")], metadata={"i": i}) for i in range(n)]


def grade_and_clear(make: Callable[[], Any], samples: list[Any]) -> tuple[float, float]:
    """Seconds to grade every sample one by one, then for get_logs(clear=True)."""
    grader = make()

    async def loop() -> float:
        start = time.perf_counter()
        for sample in samples:
            await grader.grade(sample)
        return time.perf_counter() - start

    graded = asyncio.run(loop())
    start = time.perf_counter()
    logs = grader.get_logs(clear=True)
    cleared = time.perf_counter() - start
    assert logs["score/count"] == len(samples), logs
    return graded, cleared


def bench_grade(samples: Any, repeats: int) -> dict[str, tuple[float, float]]:
    async def bare() -> float:
        start = time.perf_counter()
        for sample in samples["gw"]:
            await score(sample)
        return time.perf_counter() - start

    makers: dict[str, Callable[[], Any]] = {
        "gradewire": lambda: gw.BaseGrader.from_function("bench", score)
    }
    if ah is not None:
        makers["adaptive-harmony"] = lambda: AhBaseGrader.from_function("bench", score)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in makers}
    for _ in range(repeats):  # interleaved, so both see the same machine
        for name, make in makers.items():
            gc.collect()
            runs[name].append(
                grade_and_clear(make, samples["ah" if name == "adaptive-harmony" else "gw"])
            )
    figures = {name: (min(r[0] for r in rs), min(r[1] for r in rs)) for name, rs in runs.items()}
    figures["bare"] = (best_of(repeats, lambda: asyncio.run(bare())), 0.0)
    return figures


def sync_score(sample: Any) -> float:
    return 1.0 if len(sample.metadata) else 0.5


def bench_sync(samples: list[Any], repeats: int) -> dict[str, float]:
    """Seconds per sample of grade() for a sync function, by where it runs."""
    makers: dict[str, Callable[[], Any]] = {
        "measured (default)": lambda: gw.BaseGrader.from_function("bench", sync_score),
        "threads=False": lambda: gw.BaseGrader.from_function("bench", sync_score, threads=False),
        "threads=True": lambda: gw.BaseGrader.from_function("bench", sync_score, threads=True),
    }
    best: dict[str, float] = {}
    for _ in range(repeats):  # interleaved, so every row sees the same machine
        for name, make in makers.items():
            grader = make()
            count = len(samples) if name != "threads=True" else len(samples) // 20

            async def loop(grader: Any = grader, count: int = count, name: str = name) -> float:
                for sample in samples[:8]:
                    await grader.grade(sample)  # the probe calls, not timed
                if name == "measured (default)" and not grader._inline:
                    print("  (a probe call was measured slow: the default row ran in threads)")
                start = time.perf_counter()
                for sample in samples[:count]:
                    await grader.grade(sample)
                return (time.perf_counter() - start) / count

            gc.collect()
            per_sample = asyncio.run(loop())
            best[name] = min(best.get(name, per_sample), per_sample)
    return best


def bench_get_logs(values: list[float], repeats: int) -> tuple[float, float]:
    grader = gw.BaseGrader.from_function("bench", score)
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


def traced(run: Callable[[], object]) -> tuple[int, object]:
    """Bytes still allocated after ``run()`` (what it keeps), and what it returned."""
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    kept = run()
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return after - before, kept


def bench_memory(values: list[float], samples: Any) -> dict[str, tuple[float, float]]:
    """Bytes per logged number: (add_log of the user's dicts, a function grader's grade())."""
    records = [{"score": value} for value in values]  # the user's own dicts

    def add_logs(grader: Any) -> Any:
        for record in records:
            grader.add_log(record)
        return grader

    def grades(grader: Any, threads: list[Any]) -> Any:
        async def loop() -> None:
            for sample in threads:
                await grader.grade(sample)  # the Grade is dropped: only the log is kept

        asyncio.run(loop())
        return grader

    makers: dict[str, tuple[Callable[[], Any], list[Any]]] = {
        "gradewire": (lambda: gw.BaseGrader.from_function("bench", score), samples["gw"])
    }
    if ah is not None:
        makers["adaptive-harmony"] = (
            lambda: AhBaseGrader.from_function("bench", score),
            samples["ah"],
        )
    figures: dict[str, tuple[float, float]] = {}
    for name, (make, threads_) in makers.items():
        grader = make()
        added, _ = traced(lambda grader=grader: add_logs(grader))
        grader = make()
        graded, _ = traced(lambda grader=grader, threads_=threads_: grades(grader, threads_))
        figures[name] = (added / len(records), graded / len(threads_))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n = args.samples
    m = min(n, GRADE_SAMPLES)
    if AH_MISSING:
        print(AH_MISSING)

    samples = {"gw": threads(gw.StringThread, m)}
    if ah is not None:
        samples["ah"] = threads(ah.StringThread, m)
    figures = bench_grade(samples, args.repeats)
    bare_s = figures.pop("bare")[0]
    print(f"from_function grader, {m:,} samples, grade() each then get_logs(clear=True)")
    print(f"(best of {args.repeats}, interleaved):")
    print(f"  bare `await fn(sample)` loop : {bare_s / m * 1e6:7.3f} us/sample")
    for name, (graded, cleared) in figures.items():
        print(f"  {name:<17} grade()     : {graded / m * 1e6:7.3f} us/sample")
        print(f"  {name:<17} get_logs()  : {cleared * 1e3:7.2f} ms (clear=True)")
    if "adaptive-harmony" in figures:
        ours, theirs = figures["gradewire"], figures["adaptive-harmony"]
        print(f"  grade() + logging, adaptive-harmony / gradewire: {theirs[0] / ours[0]:5.2f}x")
        print(f"  get_logs(clear=True), adaptive-harmony / gradewire: {theirs[1] / ours[1]:5.1f}x")

    values = [((i * 7919) % 1000) / 1000 for i in range(n)]
    ours_s, stdlib_s = bench_get_logs(values, args.repeats)
    print(f"get_logs() over {n:,} logged scores:")
    print(f"  statistics.mean + stdev      : {stdlib_s * 1e3:9.2f} ms")
    print(f"  grader.get_logs()            : {ours_s * 1e3:9.2f} ms")
    print(f"  speed-up                     : {stdlib_s / ours_s:9.1f}x  (target >= 20x)")

    sync = bench_sync(samples["gw"], args.repeats)
    print(f"sync function, grade() per sample (best of {args.repeats}, interleaved):")
    for name, seconds in sync.items():
        print(f"  {name:<19}: {seconds * 1e6:8.3f} us/sample")
    ratio = sync["measured (default)"] / sync["threads=False"]
    print(f"  measured / threads=False: {ratio:5.2f}x")

    memory = bench_memory(values[:m], samples)
    print(f"memory per logged number ({m:,} samples; target <= 17 bytes):")
    for name, (added, graded) in memory.items():
        print(f"  {name:<17} add_log(user's dict): {added:6.1f} B (the dict not counted)")
        print(f"  {name:<17} grade()             : {graded:6.1f} B (all it keeps)")

    ours = figures["gradewire"]
    theirs = figures.get("adaptive-harmony")
    harmony = "adaptive-harmony 1.1.0"

    def beside(value: float | None, *others: Alternative) -> list[Alternative]:
        alternatives = [Alternative(harmony, value)] if value is not None else []
        return alternatives + list(others)

    ours_memory, theirs_memory = memory["gradewire"], memory.get("adaptive-harmony")
    record_result(
        "core_overhead",
        [
            Figure(
                f"`from_function` grader `grade()` + logging, per sample ({m:,} samples)",
                ours[0] / m * 1e6,
                "µs",
                alternatives=beside(
                    theirs and theirs[0] / m * 1e6,
                    Alternative("bare `await fn(sample)`", bare_s / m * 1e6),
                ),
            ),
            Figure(
                "then `get_logs(clear=True)`",
                ours[1] * 1e3,
                "ms",
                alternatives=beside(theirs and theirs[1] * 1e3),
            ),
            Figure(
                f"`get_logs()` over {n:,} logged scores",
                ours_s * 1e3,
                "ms",
                alternatives=[Alternative("`statistics.mean` + `stdev`", stdlib_s * 1e3)],
            ),
            Figure(
                "sync function, `grade()` per sample, measured fast and run inline",
                sync["measured (default)"] * 1e6,
                "µs",
                alternatives=[
                    Alternative(f"`{name}`", seconds * 1e6)
                    for name, seconds in sync.items()
                    if name != "measured (default)"
                ],
            ),
            Figure(
                "memory per logged number, `add_log` of the user's dict (the dict not counted)",
                ours_memory[0],
                "bytes",
                alternatives=beside(theirs_memory and theirs_memory[0]),
            ),
            Figure(
                "memory per logged number, a function grader's `grade()` (all it keeps)",
                ours_memory[1],
                "bytes",
                alternatives=beside(theirs_memory and theirs_memory[1]),
            ),
        ],
        title="The grader core: grading, logging and `get_logs()`",
        notes=[AH_MISSING] if AH_MISSING else [],
    )


if __name__ == "__main__":
    main()
