"""CommandGrader: what keeping every process of a grade contained costs, three ways, one run.

On Linux every command runs under a supervisor (a child subreaper) so that no process it
starts outlives the grade, even one that left its process group; without it (other
systems) only the command's process group is ended. Measured in the same run, with
``grade_many`` at 16 in flight on commands of different lengths:

* **shared supervisor**: this checkout; one supervisor process per grading process,
  started once, whose long-lived workers run one command at a time;
* **per-grade supervisor**: the supervisor as it was before (a ``python -I -S`` process
  started for every grade), from the git commit ``--baseline`` of this repository;
* **process group**: this checkout with the supervisor turned off (the fallback of other
  systems, which cannot end a process that left the group).

Each way runs in a fresh process per round (``--rounds``, interleaved; the median is
shown). Wall time per grade, and CPU per grade: the grading process, whatever it reaped,
and its live descendants (the shared supervisor and its workers, with the commands they
reaped). Linux only; the baseline needs ``git``.

    python bench/bash_grader.py [--samples 200] [--rounds 3] [--baseline 6ebe4d8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from _results import Alternative, Figure, record

COMMANDS = {"true": "true", "sleep 0.05": "sleep 0.05", "python -c pass": "python3 -c pass"}
WAYS = ("shared supervisor", "per-grade supervisor", "process group")
IN_FLIGHT = 16
REPO = Path(__file__).resolve().parent.parent
# The last commit whose command grader started a supervisor process for every grade.
BASELINE = "6ebe4d8"
_TICK = os.sysconf("SC_CLK_TCK")


def descendants_cpu() -> float:
    """CPU seconds of the live processes below this one, with what they reaped (/proc)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        parents[int(name)] = int(fields[1])
        # utime, stime, cutime, cstime
        times[int(name)] = sum(int(value) for value in fields[11:15]) / _TICK
    me, total = os.getpid(), 0.0
    for pid, seconds in times.items():
        ancestor = parents.get(pid)
        while ancestor is not None and ancestor not in (me, 0, 1):
            ancestor = parents.get(ancestor)
        if ancestor == me:
            total += seconds
    return total


def cpu_seconds() -> float:
    own = os.times()
    return own.user + own.system + own.children_user + own.children_system + descendants_cpu()


async def measure(command: str, samples: int) -> dict[str, float]:
    import gradewire
    from gradewire import StringThread

    # CommandGrader today; the baseline commit called the same grader BashGrader.
    kind = getattr(gradewire, "CommandGrader", None) or gradewire.BashGrader
    grader = kind("bench", command)
    batch = [StringThread([("user", "q"), ("assistant", "a")])] * samples
    await grader.grade_many(batch[:IN_FLIGHT], max_concurrency=IN_FLIGHT)  # warm up
    cpu, start = cpu_seconds(), time.perf_counter()
    grades = await grader.grade_many(batch, max_concurrency=IN_FLIGHT)
    wall = time.perf_counter() - start
    cpu = cpu_seconds() - cpu
    assert all(g is not None and g.value == 1.0 for g in grades)
    return {"wall_ms": wall / samples * 1000, "cpu_ms": cpu / samples * 1000}


def run_one(way: str, command: str, samples: int) -> None:
    """In a fresh process: measure one way, print the figures as JSON."""
    if way == "process group":
        from gradewire.tools import _process

        _process.supervised = lambda: False  # type: ignore[assignment]
    print(json.dumps(asyncio.run(measure(command, samples))))


def export_baseline(ref: str, folder: Path) -> Path:
    """The package as it was at ``ref``, unpacked under ``folder``; its import root."""
    archive = folder / "baseline.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", ref, "src/gradewire"], cwd=REPO, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.10.12+, 3.11.4+
            tar.extractall(folder, filter="data")
        else:
            tar.extractall(folder)  # this repository's own archive
    return folder / "src"


def spawn(way: str, command: str, samples: int, baseline_src: Path) -> dict[str, float]:
    env = dict(os.environ)
    paths = [str(REPO / "src")] if way != "per-grade supervisor" else [str(baseline_src)]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")])
    script = [sys.executable, __file__, "--one", way, "--command", command]
    out = subprocess.run(
        [*script, "--samples", str(samples)], env=env, capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--one", choices=WAYS, help=argparse.SUPPRESS)
    parser.add_argument("--command", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        run_one(args.one, args.command, args.samples)
        return
    with tempfile.TemporaryDirectory() as folder:
        baseline_src = export_baseline(args.baseline, Path(folder))
        figures: dict[tuple[str, str], list[dict[str, float]]] = {}
        for _ in range(args.rounds):
            for name, command in COMMANDS.items():
                for way in WAYS:
                    result = spawn(way, command, args.samples, baseline_src)
                    figures.setdefault((name, way), []).append(result)
    print(
        f"{args.samples} grades, {IN_FLIGHT} in flight, median of {args.rounds} rounds; "
        f"ms per grade (per-grade supervisor: commit {args.baseline})"
    )
    print(
        f"{'command':>15} {'way':>21} {'wall':>7} {'CPU':>7} {'wall/group':>11} {'CPU/group':>10}"
    )
    contained: dict[str, tuple[float, float]] = {}
    result_figures: list[Figure] = []
    for name in COMMANDS:
        group = {
            key: statistics.median(r[key] for r in figures[(name, "process group")])
            for key in ("wall_ms", "cpu_ms")
        }
        for way in WAYS:
            wall = statistics.median(r["wall_ms"] for r in figures[(name, way)])
            cpu = statistics.median(r["cpu_ms"] for r in figures[(name, way)])
            print(
                f"{name:>15} {way:>21} {wall:>7.2f} {cpu:>7.2f} "
                f"{wall / group['wall_ms']:>10.2f}x {cpu / group['cpu_ms']:>9.2f}x"
            )
            if way == "shared supervisor":
                contained[name] = (wall, cpu)
        # The per-grade supervisor is an earlier commit's code: printed above, left out of
        # the result file, whose alternatives are what a user can choose today.
        for index, unit in ((0, "wall_ms"), (1, "cpu_ms")):
            kind = "wall time" if index == 0 else "CPU"
            result_figures.append(
                Figure(
                    f"`{name}`, {kind} per grade, {IN_FLIGHT} in flight, every process ended",
                    contained[name][index],
                    "ms",
                    alternatives=[
                        Alternative("the process group alone (escapes survive)", group[unit])
                    ],
                )
            )
    record(
        "bash_grader",
        result_figures,
        title="`CommandGrader`: containment by the shared supervisor beside a process group",
        notes=[f"median of {args.rounds} rounds of {args.samples} grades"],
    )


if __name__ == "__main__":
    main()
