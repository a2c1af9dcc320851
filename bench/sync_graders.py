"""Sync graders that wait (a sync HTTP call, a subprocess): concurrent in worker threads.

1. ``gradewire eval`` of 20 samples whose sync grader sleeps 0.2 s, at ``--concurrency 20``,
   through the real CLI (a subprocess each, startup included): the grader file as it is
   (worker threads, the default) beside the same file with ``threads = false`` (one call at
   a time on the event loop, as every sync grader ran before). With ``--before-src PATH``
   (another checkout's ``src``) the default file also runs on that code, for a
   before/after in one run. Each row times ``run_eval`` (what the command runs: data,
   grading, summary and report) in a fresh process, and the whole command. Ideal: 0.2 s of
   grading.
2. ``trl_reward`` called as GRPOTrainer calls it, one batch of 64 completions whose grader
   waits 50 ms: sync (threads, the default), sync with ``threads=False``, and async
   (``asyncio.sleep``). Ideal: 50 ms.

Run: ``python bench/sync_graders.py [--repeats 3] [--before-src ../main/src]``. Times
move on a loaded machine; compare the rows of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _results import Alternative, Figure, record

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = 20
TRL_BATCH = 64


def write_inputs(folder: Path) -> tuple[Path, Path, Path]:
    data = folder / "data.jsonl"
    rows = [{"id": f"q{i}", "prompt": f"q{i}", "completion": "a"} for i in range(SAMPLES)]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "slow_graders.py").write_text(
        "import time\n\n\ndef waits(sample):\n    time.sleep(0.2)\n    return 1.0\n"
        "\n\ndef done(sample):\n    return 1.0\n"
    )
    spec = '[[graders]]\ntype = "custom"\nkey = "waits"\nfunction = "slow_graders:waits"\n'
    threaded = folder / "threaded.toml"
    threaded.write_text(spec)
    inline = folder / "inline.toml"
    inline.write_text(spec + "threads = false\n")
    (folder / "fixed.toml").write_text(spec.replace("slow_graders:waits", "slow_graders:done"))
    return data, threaded, inline


# The grading step of `gradewire eval` (run_eval: data, grading, summary and report), timed
# in a fresh process on the chosen source tree, without the interpreter's startup.
TIMED_EVAL = """
import asyncio, sys, time
from gradewire import load_graders
from gradewire.eval import run_eval
graders = load_graders(sys.argv[2])
start = time.perf_counter()
asyncio.run(run_eval(sys.argv[1], graders, sys.argv[3], concurrency=int(sys.argv[4])))
print(time.perf_counter() - start)
"""


def eval_seconds(folder: Path, data: Path, graders: Path, src: Path) -> tuple[float, float]:
    """(seconds of run_eval, seconds of the whole `gradewire eval` command)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(folder), str(src)])
    out = Path(tempfile.mkdtemp(dir=folder))
    timed = [sys.executable, "-c", TIMED_EVAL, str(data), str(graders), str(out / "a")]
    done = subprocess.run(
        [*timed, str(SAMPLES)], capture_output=True, text=True, env=env, timeout=600
    )
    if done.returncode != 0:
        raise SystemExit(f"run_eval failed:\n{done.stderr}")
    inside = float(done.stdout.split()[-1])
    command = [sys.executable, "-m", "gradewire", "eval", str(data), "--graders", str(graders)]
    command += ["--out", str(out / "b"), "--concurrency", str(SAMPLES), "--no-progress"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    whole = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"gradewire eval failed:\n{done.stderr}")
    return inside, whole


def bench_eval(repeats: int, before: Path | None) -> list[Figure]:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        data, threaded, inline = write_inputs(folder)
        rows: dict[str, tuple[Path, Path]] = {
            "worker threads (default)": (threaded, ROOT / "src"),
            "threads = false (one at a time)": (inline, ROOT / "src"),
        }
        if before is not None:
            rows["the same file, on --before-src"] = (threaded, before)
        rows["no wait (the fixed cost)"] = (folder / "fixed.toml", ROOT / "src")
        times: dict[str, list[tuple[float, float]]] = {label: [] for label in rows}
        for _ in range(repeats):  # interleaved, so every row sees the same machine
            for label, (graders, src) in rows.items():
                times[label].append(eval_seconds(folder, data, graders, src))
    print(f"gradewire eval, {SAMPLES} samples of a sync grader sleeping 0.2 s, --concurrency 20")
    print(f"(best of {repeats}; run_eval is the grading step, the command adds startup):")
    best = {
        label: (min(t[0] for t in values), min(t[1] for t in values))
        for label, values in times.items()
    }
    for label, (inside, whole) in best.items():
        print(f"  {label:<33}: run_eval {inside:6.2f} s, command {whole:6.2f} s")
    fixed = best.pop("no wait (the fixed cost)")[0]
    first = best["worker threads (default)"][0] - fixed
    print(f"  the fixed cost (data, summary, report) of run_eval: {fixed:5.2f} s; beyond it:")
    for label, (inside, _) in best.items():
        print(f"  {label:<33}: {inside - fixed:6.2f} s = {(inside - fixed) / first:5.1f}x")
    # A --before-src row is an earlier checkout's code: printed, left out of the result file.
    inline = best["threads = false (one at a time)"]
    threads = best["worker threads (default)"]
    return [
        Figure(
            f"`gradewire eval`'s `run_eval`, {SAMPLES} samples of a sync grader sleeping 0.2 s, "
            f"--concurrency {SAMPLES}, best of {repeats}",
            threads[0],
            "s",
            alternatives=[Alternative("`threads = false` (one call at a time)", inline[0])],
            note=f"the same with a grader that does not wait: {fixed:.2f} s",
        ),
        Figure(
            "the whole `gradewire eval` command, startup included",
            threads[1],
            "s",
            alternatives=[Alternative("`threads = false` (one call at a time)", inline[1])],
        ),
    ]


def trl_seconds(reward: Any) -> float:
    kwargs = {
        "prompts": [f"q{i}" for i in range(TRL_BATCH)],
        "completions": ["a"] * TRL_BATCH,
        "completion_ids": [[0]] * TRL_BATCH,
        "trainer_state": None,
        "log_extra": lambda column, values: None,
        "log_metric": lambda name, value: None,
    }

    async def once() -> float:
        start = time.perf_counter()
        values = await reward(**kwargs)
        seconds = time.perf_counter() - start
        assert values == [1.0] * TRL_BATCH, values
        return seconds

    return asyncio.run(once())


def bench_trl(repeats: int) -> list[Figure]:
    from gradewire import BaseGrader
    from gradewire_transformers import trl_reward

    def sync_wait(sample: Any) -> float:
        time.sleep(0.05)
        return 1.0

    async def async_wait(sample: Any) -> float:
        await asyncio.sleep(0.05)
        return 1.0

    makers = {
        "sync, worker threads (default)": lambda: BaseGrader.from_function("s", sync_wait),
        "sync, threads=False": lambda: BaseGrader.from_function("s", sync_wait, threads=False),
        "async": lambda: BaseGrader.from_function("a", async_wait),
    }
    times: dict[str, list[float]] = {label: [] for label in makers}
    for _ in range(repeats):
        for label, make in makers.items():
            times[label].append(trl_seconds(trl_reward(make())))
    print(f"trl_reward, one batch of {TRL_BATCH} completions, grader waits 50 ms (median):")
    for label, values in times.items():
        print(f"  {label:<31}: {statistics.median(values) * 1e3:8.1f} ms")
    median = {label: statistics.median(values) * 1e3 for label, values in times.items()}
    return [
        Figure(
            f"`trl_reward`, one batch of {TRL_BATCH} completions, a sync grader waiting 50 ms "
            f"(median of {repeats})",
            median["sync, worker threads (default)"],
            "ms",
            alternatives=[
                Alternative("`threads=False`", median["sync, threads=False"]),
                Alternative("an async grader (`asyncio.sleep`)", median["async"]),
            ],
            note="ideal: 50 ms",
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--before-src", type=Path, default=None, help="another checkout's src, for before/after"
    )
    args = parser.parse_args()
    figures = bench_eval(args.repeats, args.before_src) + bench_trl(args.repeats)
    record("sync_graders", figures, title="Sync graders that wait, in worker threads")


if __name__ == "__main__":
    main()
