"""math_match: what checking in a worker process costs per call, against Math-Verify in-process.

Math-Verify called directly in the main thread (its SIGALRM timeouts on, as its README uses
it) and `gradewire.math_match` (the same parse and verify in a long-lived worker process,
bounded from outside) on the same answers, in the same run: median wall time per call over
alternating rounds, after the worker has started (its start is timed apart). Also
math_match from 8 threads at once, where Math-Verify's own timeout cannot run at all.

    python bench/math_match.py [--rounds 50]
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from math_verify import parse, verify

from _results import Alternative, Figure, record
from gradewire import math_match
from gradewire.helpers._math import math_pool

CASES = [
    ("The answer is $\\boxed{\\frac{1}{2}}$.", "0.5"),
    ("So x = $\\sqrt{2}$", "$\\sqrt{2}$"),
    ("Final answer: 41", "42"),
    ("$\\boxed{x^2+2x+1}$", "$(x+1)^2$"),
    ("The set is $\\{1, 2, 3\\}$", "$\\{3, 2, 1\\}$"),
]


def direct(answer: str, expected: str) -> float:
    gold = parse(expected) or parse(f"${expected}$")
    return 1.0 if verify(gold, parse(answer)) else 0.0


def one_round(check: object) -> float:
    start = time.perf_counter()
    for answer, expected in CASES:
        check(answer, expected)  # type: ignore[operator]
    return (time.perf_counter() - start) / len(CASES)


def interleaved(rounds: int) -> tuple[float, float]:
    """Median seconds a call of each, rounds alternating so that load drift hits both."""
    direct_times, worker_times = [], []
    for _ in range(rounds):
        direct_times.append(one_round(direct))
        worker_times.append(one_round(math_match))
    return statistics.median(direct_times), statistics.median(worker_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=50)
    rounds = parser.parse_args().rounds
    assert [direct(*c) for c in CASES] == [math_match(*c) for c in CASES]  # same verdicts
    start = time.perf_counter()
    math_pool().close()
    math_match("1", "1")  # a new worker: start, import, warm-up
    started = time.perf_counter() - start
    direct_s, worker_s = interleaved(rounds)
    with ThreadPoolExecutor(8) as threads:
        start = time.perf_counter()
        list(threads.map(lambda c: math_match(*c), CASES * rounds))
        threaded_s = (time.perf_counter() - start) / (rounds * len(CASES))
    print(f"worker start (once per worker, and after each timeout): {started * 1000:.0f} ms")
    print(f"Math-Verify in-process (SIGALRM, main thread only): {direct_s * 1e3:.2f} ms a call")
    print(
        f"math_match (worker process):                        {worker_s * 1e3:.2f} ms a call"
        f"  ({worker_s / direct_s:.2f}x, +{(worker_s - direct_s) * 1e3:.2f} ms)"
    )
    print(
        f"math_match from 8 threads ({math_pool().size} workers):           "
        f"{threaded_s * 1e3:.2f} ms a call"
    )
    record(
        "math_match",
        [
            Figure(
                "a check, median over alternating rounds",
                worker_s * 1e3,
                "ms",
                alternatives=[
                    Alternative("Math-Verify in-process (main thread only)", direct_s * 1e3)
                ],
            ),
            Figure(f"a check from 8 threads ({math_pool().size} workers)", threaded_s * 1e3, "ms"),
            Figure("a worker's start (once, and after each timeout)", started * 1e3, "ms"),
        ],
        title="`math_match` in worker processes beside Math-Verify called in-process",
    )


if __name__ == "__main__":
    main()
