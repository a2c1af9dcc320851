"""RewardMonitor on simulated runs with a known answer, and what it adds to a step.

1. Replays (``gradewire.train._replays``): GRPO batches of 64 prompts x 8 completions,
   a quarter of the prompts gold-graded, 300 steps. Clean runs (both rewards rise, in
   three shapes, with a shared slow wobble) give the false-alarm rate: the share of
   runs raising any alert. Hacked runs (plain, paying for length, with a dominant
   component, a slow drift) give, for the ``gold_decline`` rule: the share that alerted
   before the gold's expected peak, the share whose first alert came within 10% of the
   run's steps after it, and the median delay after the peak (a run with no alert counts
   its remaining steps). Seeds: clean from 5000, hacked from 6000 (not the seeds the
   threshold was set on, 2000-2099).
2. ``RewardLogger.step()`` with the monitor on and off, in the same run: 512 recorded
   samples a step with a gold share, ``--steps`` steps each; p50/p99 of the step's time.
   Target: the monitor adds under 1 ms at p99.

Run: ``python bench/reward_health.py [--clean 100] [--hacked 40] [--steps 300]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from gradewire import BaseGrader, Grade, StringThread
from gradewire.train import RewardLogger, RewardMonitor
from gradewire.train._replays import KINDS, simulate, step_batches


def replays(clean: int, hacked: int, steps: int) -> None:
    alarms = sum(
        bool(RewardMonitor().replay(simulate("clean", 5000 + s, steps=steps).steps))
        for s in range(clean)
    )
    print(f"clean: {alarms}/{clean} runs raised an alert ({alarms / clean:.1%}), seeds 5000-")
    for kind in KINDS[1:]:
        early = within = never = 0
        delays = []
        for s in range(hacked):
            replay = simulate(kind, 6000 + s, steps=steps)
            peak = replay.gold_peak
            assert peak is not None
            alerts = [a for a in RewardMonitor().replay(replay.steps) if a.signal == "gold_decline"]
            first = alerts[0].step if alerts else steps
            never += not alerts
            early += first < peak
            within += peak <= first <= peak + 0.1 * steps
            delays.append((first - peak) / steps)
        print(
            f"{kind}: before the peak {early}/{hacked}, within 10% after it {within}/{hacked}, "
            f"no alert {never}/{hacked}, median delay {statistics.median(delays):.1%} of the "
            f"run (p90 {np.quantile(delays, 0.9):.1%}), seeds 6000-{6000 + hacked - 1}"
        )


def overhead(steps: int) -> None:
    proxy = BaseGrader.from_function("judge", lambda s: 0.5)
    gold = BaseGrader.from_function("gold", lambda s: 1.0)
    batches, _ = step_batches("hack_length", 7, steps=steps)
    data = list(batches)
    samples = [StringThread([("user", f"p{i % 64}"), ("assistant", "x")]) for i in range(512)]
    for on in (False, True, False, True):
        logger = RewardLogger(proxy, gold=gold, monitor=on)
        times = []
        for batch in data:
            grades = [Grade(float(v), "judge") for v in batch.proxy]
            checks = [None if np.isnan(v) else Grade(float(v), "gold") for v in batch.gold]
            logger.record(
                proxy,
                samples,
                grades,
                lengths=list(batch.lengths),
                gold=checks,
                groups=[str(g) for g in batch.groups],
            )
            start = time.perf_counter()
            logger.step(batch.step)
            times.append(time.perf_counter() - start)
        ms = np.array(times) * 1000
        print(
            f"step() with the monitor {'on ' if on else 'off'}: p50 {np.median(ms):.2f} ms, "
            f"p99 {np.quantile(ms, 0.99):.2f} ms over {len(ms)} steps"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clean", type=int, default=100)
    parser.add_argument("--hacked", type=int, default=40)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--overhead-only", action="store_true")
    args = parser.parse_args()
    overhead(args.steps)
    if not args.overhead_only:
        replays(args.clean, args.hacked, args.steps)


if __name__ == "__main__":
    main()
