"""CommandGrader: what the subreaper supervisor costs per grade, against the process group alone.

On Linux every command runs under a small Python supervisor (a child subreaper) so that
no process it starts outlives the grade; without it (other systems) only the command's
process group is ended. Both are measured here in the same run on commands of different
lengths, with ``grade_many`` at 16 in flight: wall time per grade, and the CPU this
process and its children used per grade. Linux only.

    python bench/bash_grader.py [--samples 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from gradewire import CommandGrader, StringThread
from gradewire.tools import _process

COMMANDS = {"true": "true", "sleep 0.05": "sleep 0.05", "python -c pass": "python3 -c pass"}


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


async def measure(command: str, samples: int) -> tuple[float, float]:
    grader = CommandGrader("bench", command)
    batch = [StringThread([("user", "q"), ("assistant", "a")])] * samples
    await grader.grade_many(batch[:16], max_concurrency=16)  # warm up
    cpu, start = cpu_seconds(), time.perf_counter()
    grades = await grader.grade_many(batch, max_concurrency=16)
    wall = time.perf_counter() - start
    assert all(g is not None and g.value == 1.0 for g in grades)
    return wall / samples * 1000, (cpu_seconds() - cpu) / samples * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    real = _process.supervised
    print(f"{args.samples} grades, 16 in flight; ms per grade")
    print(f"{'command':>16} {'how':>15} {'wall':>7} {'CPU':>7}")
    for name, command in COMMANDS.items():
        results = {}
        for how, supervised in (("supervised", real), ("process group", lambda: False)):
            _process.supervised = supervised  # type: ignore[assignment]
            results[how] = asyncio.run(measure(command, args.samples))
            wall, cpu = results[how]
            print(f"{name:>16} {how:>15} {wall:>7.2f} {cpu:>7.2f}")
        _process.supervised = real  # type: ignore[assignment]
        (sw, sc), (gw, gc) = results["supervised"], results["process group"]
        print(f"{'':>16} {'supervised / group':>15} {sw / gw:>6.2f}x {sc / gc:>6.2f}x")


if __name__ == "__main__":
    main()
