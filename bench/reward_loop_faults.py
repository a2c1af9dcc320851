"""The reward loop against a faulty judge: each step's bound, and the throughput it keeps.

A TRL-sized step (256 completions, ``trl_reward`` at concurrency 64, ``timeout=1.0``) is
graded by `BinaryJudgeGrader` against a loopback judge that answers after 50 ms
(``tests/support/judge_server.py`` in this process). Two runs take turns, step by step:

- fault-free;
- with faults drawn per sample (seeded, exact rates): 10% get a 429 with
  ``Retry-After: 0.05`` on their first request, 2% are answered after 3 s (past the
  timeout), 1% never.

Per run: the step's wall time (the bound: a step waits for its slowest grade, so with a
slow or silent sample in it the step takes the timeout, never more), the graded samples
per step, and the throughput of the calls that succeed (graded samples per second, until
the last of them is graded, through the same ``_attempt_many`` that ``trl_reward`` uses). The
goal is that the successful calls keep within 10% of the fault-free throughput: a call
that fails must not hold the others back (connection slots, concurrency, retries).

Run: ``python bench/reward_loop_faults.py [--steps 6] [--batch 256] [--rate-429 0.1]
[--rate-slow 0.02] [--rate-silent 0.01]`` (one kind of fault at a time shows what each
costs). Figures move on a
loaded machine; compare the rows of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "integrations" / "transformers" / "tests")]

from fault_support import Faults, draw_faults, sample_text  # noqa: E402
from gradewire import BinaryJudgeGrader, OpenAIChatModel, StringThread  # noqa: E402
from support.judge_server import JudgeServer, Reply, Request, chat  # noqa: E402

LATENCY = 0.05
TIMEOUT = 1.0


class Judge:
    """Answers after LATENCY; with faults set, injects them by sample id."""

    def __init__(self) -> None:
        self.faults: Faults | None = None

    async def handle(self, request: Request) -> Reply:
        if self.faults is not None:
            reply = self.faults.handle(request)
            if reply.status != 200 or reply.delay:
                return reply
        await asyncio.sleep(LATENCY)
        return chat(json.dumps({"reasoning": "fine", "verdict": "PASS"}))


async def one_step(grader: BinaryJudgeGrader, first: int, batch: int) -> dict[str, float]:
    samples = [
        StringThread([("user", "What is 2+2?"), ("assistant", sample_text(i))])
        for i in range(first, first + batch)
    ]
    finished: dict[int, float] = {}
    attempt = type(grader)._attempt

    async def timed(sample: StringThread, timeout: float | None = None) -> Any:
        # The same path trl_reward takes (_attempt_many's workers), each finish time noted.
        outcome = await attempt(grader, sample, timeout)
        finished[id(sample)] = time.perf_counter()
        return outcome

    grader._attempt = timed  # type: ignore[method-assign]
    start = time.perf_counter()
    outcomes = await grader._attempt_many(samples, 64, TIMEOUT)
    wall = time.perf_counter() - start
    del grader._attempt
    ends = [
        finished[id(s)] - start
        for s, o in zip(samples, outcomes, strict=True)
        if not isinstance(o, Exception)
    ]
    return {
        "wall": wall,
        "graded": len(ends),
        "failed": batch - len(ends),
        # The successful calls' throughput: graded samples per second until the last of them.
        "good_rate": len(ends) / max(ends) if ends else 0.0,
    }


async def run(steps: int, batch: int, rates: dict[str, float]) -> None:
    judge = Judge()
    rows: dict[str, list[dict[str, float]]] = {"fault-free": [], "faults": []}
    with JudgeServer(judge.handle, record=False) as server:
        model = OpenAIChatModel("judge", base_url=server.base_url, api_key="k", max_concurrency=64)
        grader = BinaryJudgeGrader("judge", model, "The answer states a number")
        # A warm-up step, so that neither run pays for the connections.
        await one_step(grader, 90_000, 64)
        for step in range(steps):
            first = step * batch
            order = ["fault-free", "faults"] if step % 2 == 0 else ["faults", "fault-free"]
            for name in order:
                judge.faults = (
                    draw_faults(batch, seed=step, slow_delay=3 * TIMEOUT, **rates)
                    if name == "faults"
                    else None
                )
                if judge.faults is not None:
                    # draw_faults numbers its samples from 0: shift them to this step's ids.
                    f = judge.faults
                    judge.faults = Faults(
                        rate_limited=frozenset(i + first for i in f.rate_limited),
                        slow=frozenset(i + first for i in f.slow),
                        silent=frozenset(i + first for i in f.silent),
                        slow_delay=f.slow_delay,
                        retry_after=f.retry_after,
                    )
                offset = 50_000 if name == "fault-free" else 0  # ids stay 5 digits
                rows[name].append(await one_step(grader, first + offset, batch))
                grader.clear_logs()
        await model.aclose()
    print(
        f"{steps} steps of {batch} completions, judge latency {LATENCY * 1000:.0f} ms, "
        f"timeout {TIMEOUT:g} s, load average {os.getloadavg()[0]:.2f}"
    )
    base = statistics.median(r["good_rate"] for r in rows["fault-free"])
    for name, runs in rows.items():
        walls = [r["wall"] for r in runs]
        rate = statistics.median(r["good_rate"] for r in runs)
        failed = sum(r["failed"] for r in runs)
        print(
            f"{name:>10}: step wall median {statistics.median(walls):.3f} s, "
            f"max {max(walls):.3f} s; "
            f"failed {failed} of {steps * batch}; successful calls {rate:.0f}/s "
            f"({rate / base:.1%} of fault-free)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rate-429", type=float, default=0.10)
    parser.add_argument("--rate-slow", type=float, default=0.02)
    parser.add_argument("--rate-silent", type=float, default=0.01)
    args = parser.parse_args()
    rates = {
        "rate_429": args.rate_429,
        "rate_slow": args.rate_slow,
        "rate_silent": args.rate_silent,
    }
    asyncio.run(run(args.steps, args.batch, rates))


if __name__ == "__main__":
    main()
