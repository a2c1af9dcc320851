"""RewardMonitor on simulated runs with a known answer, and what it adds to a step.

1. Replays (``gradewire.train._replays``): GRPO batches of 64 prompts x 8 completions,
   a quarter of the prompts gold-graded, 300 steps. Clean runs (both rewards rise, in
   three shapes, with a shared slow wobble) give the false-alarm rate: the share of
   runs raising any alert. Hacked runs (plain, paying for length, with a dominant
   component, a slow drift) give, for the ``gold_gap`` rule: the share that alerted
   before the gold's expected peak, the share whose first alert came within 10% of the
   run's steps after it, and the median delay after the peak (a run with no alert counts
   its remaining steps). Seeds: clean from 5000, hacked from 6000 (not the seeds the
   rule was tuned on: clean 7000-7099, hacked 8000-8039).
2. ``RewardLogger.step()`` with the monitor on and off, in the same run (two loggers
   taking the same 512 graded samples a step in turns, a quarter gold-graded), wall and
   thread CPU time; and the monitor's own work inside ``step()`` (thread CPU time, which
   a loaded machine's waits do not inflate). Target: the monitor adds under 1 ms at p99.

Run: ``python bench/reward_health.py [--clean 100] [--hacked 40] [--steps 300]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import numpy as np

from _results import Alternative, Figure, record
from gradewire import BaseGrader, StringThread
from gradewire.core import LogValue
from gradewire.train import Alert, RewardLogger, RewardMonitor
from gradewire.train._replays import KINDS, simulate, step_batches


def replays(clean: int, hacked: int, steps: int) -> list[Figure]:
    alarms = sum(
        bool(RewardMonitor().replay(simulate("clean", 5000 + s, steps=steps).steps))
        for s in range(clean)
    )
    print(f"clean: {alarms}/{clean} runs raised an alert ({alarms / clean:.1%}), seeds 5000-")
    figures = [
        Figure(
            "clean replays raising any alert",
            100 * alarms / clean,
            "%",
            note=f"{alarms} of {clean}, seeds 5000-{5000 + clean - 1}; the issue asks at most 5%",
        )
    ]
    for kind in KINDS[1:]:
        early = within = never = flat = flat_early = 0
        delays = []
        for s in range(hacked):
            replay = simulate(kind, 6000 + s, steps=steps)
            peak = replay.gold_peak
            assert peak is not None
            alerts = [a for a in RewardMonitor().replay(replay.steps) if a.signal == "gold_gap"]
            first = alerts[0].step if alerts else steps
            never += not alerts
            early += first < peak
            within += peak <= first <= peak + 0.1 * steps
            delays.append((first - peak) / steps)
            # A run whose expected gold never falls (its peak is the last step): any alert
            # counts as before the peak, though the training reward does outrun the gold.
            if peak == steps - 1:
                flat += 1
                flat_early += first < peak
        print(
            f"{kind}: before the peak {early}/{hacked} ({flat_early} of them in the {flat} "
            f"runs whose gold never falls), within 10% after it {within}/{hacked}, "
            f"no alert {never}/{hacked}, median delay {statistics.median(delays):.1%} of the "
            f"run (p90 {np.quantile(delays, 0.9):.1%}), seeds 6000-{6000 + hacked - 1}"
        )
        figures.append(
            Figure(
                f"{kind}: first gold_gap alert within 10% of the run after the gold's peak",
                100 * within / hacked,
                "%",
                better="higher",
                note=(
                    f"{within} of {hacked}; before the peak {early} ({flat_early} in the {flat} "
                    f"runs whose gold never falls), no alert {never}; seeds 6000-"
                    f"{6000 + hacked - 1}"
                ),
            )
        )
    return figures


def _value(key: str) -> BaseGrader:
    return BaseGrader.from_function(key, lambda sample: float(sample.metadata[key]))


async def _overhead(steps: int) -> list[Figure]:
    batches, _ = step_batches("hack_length", 7, steps=steps, gold_fraction=1.0)
    loggers = {
        on: RewardLogger(_value("judge"), gold=_value("gold"), gold_fraction=0.25, monitor=on)
        for on in (False, True)
    }
    watched: list[float] = []
    live = loggers[True]
    watch = live.watch

    def timed_watch(step: int, logs: dict[str, LogValue]) -> list[Alert]:
        start = time.thread_time()
        try:
            return watch(step, logs)
        finally:
            watched.append(time.thread_time() - start)

    live.watch = timed_watch  # type: ignore[method-assign]
    wall: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    for batch in batches:
        samples = [
            StringThread(
                [("user", f"s{batch.step} p{g}"), ("assistant", f"c{i}")],
                {"judge": float(v), "gold": float(w), "completion_length": float(n)},
            )
            for i, (g, v, w, n) in enumerate(
                zip(batch.groups, batch.proxy, batch.gold, batch.lengths, strict=True)
            )
        ]
        # Both loggers take the same step in turns (which goes first alternates), so the
        # machine's load falls on both alike.
        order = (False, True) if batch.step % 2 else (True, False)
        for on in order:
            await loggers[on].grade(samples)
            start, start_cpu = time.perf_counter(), time.thread_time()
            logs = loggers[on].step(batch.step)
            wall[on].append(time.perf_counter() - start)
            cpu[on].append(time.thread_time() - start_cpu)
            assert ("rewards/health/alerts" in logs) == on
    for on in (False, True):
        for name, seconds in (("wall", wall[on]), ("CPU", cpu[on])):
            ms = np.array(seconds) * 1000
            print(
                f"step() with the monitor {'on ' if on else 'off'} ({name}): p50 "
                f"{np.median(ms):.3f} ms, p99 {np.quantile(ms, 0.99):.3f} ms, {len(ms)} steps"
            )
    ms = np.array(watched) * 1000
    print(
        f"the monitor's own work in step() (CPU): p50 {np.median(ms):.3f} ms, p99 "
        f"{np.quantile(ms, 0.99):.3f} ms, max {ms.max():.3f} ms"
    )
    for name, seconds in (("wall", wall), ("CPU", cpu)):
        added = (np.array(seconds[True]) - np.array(seconds[False])) * 1000
        print(
            f"added by the monitor, step by step ({name}): p50 {np.median(added):.3f} ms, "
            f"p99 {np.quantile(added, 0.99):.3f} ms"
        )
    on_ms, off_ms = (np.array(cpu[flag]) * 1000 for flag in (True, False))
    return [
        Figure(
            "step() of 512 samples, CPU time, p99",
            float(np.quantile(on_ms, 0.99)),
            "ms",
            alternatives=[Alternative("the monitor off", float(np.quantile(off_ms, 0.99)))],
            note="the issue asks the monitor to add under 1 ms at p99",
        ),
        Figure(
            "the monitor's own work in step(), CPU time, p99",
            float(np.quantile(ms, 0.99)),
            "ms",
            note=f"p50 {np.median(ms):.3f} ms, over {len(ms)} steps",
        ),
    ]


def overhead(steps: int) -> list[Figure]:
    return asyncio.run(_overhead(steps))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clean", type=int, default=100)
    parser.add_argument("--hacked", type=int, default=40)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--overhead-only", action="store_true")
    args = parser.parse_args()
    figures = overhead(args.steps)
    if args.overhead_only:
        return
    figures += replays(args.clean, args.hacked, args.steps)
    record(
        "reward_health",
        figures,
        title="RewardMonitor on replays with a known answer, and what it adds to a step",
        notes=[
            "The replays are simulated GRPO runs (gradewire.train._replays); the rule was "
            "tuned on other seeds (clean 7000-7099, hacked 8000-8039)."
        ],
    )


if __name__ == "__main__":
    main()
