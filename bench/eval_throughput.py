"""`gradewire eval` beside a bare `asyncio.gather` loop over the same judge grader.

A loopback judge server (`tests/support/judge_server.py` in bench mode, its own process) answers
every chat completion after 50 ms. Both sides grade the same N distinct samples with the
same `BinaryJudgeGrader` built from one grader file, 64 in flight:

* gradewire eval: `run_eval` with the live rich display drawing to a terminal (whose
  output goes to /dev/null), every result appended to results.jsonl as it lands, then the
  summary and the HTML report: the whole command but the process start-up.
* bare gather: ``await asyncio.gather(*(grader(s) for s in samples))``, the judge's own
  limit of 64 in flight, nothing written.

The ideal is 64 / 50 ms = 1,280 samples/s. Each side runs --repeats times, alternating;
the best run of each is printed (the one least disturbed by other work on a shared
machine) with the ratio. The claim: gradewire eval within 10% of the bare loop.

Run: ``python bench/eval_throughput.py [--samples 3000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console

from _results import Alternative, Figure, record
from gradewire import load_graders
from gradewire.eval import RichDisplay, load_samples, run_eval

LATENCY = 0.05
IN_FLIGHT = 64
SERVER = Path(__file__).resolve().parent.parent / "tests" / "support" / "judge_server.py"
VERDICT = json.dumps({"reasoning": "fine", "verdict": "PASS"})


@contextlib.contextmanager
def server_process() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--latency", str(LATENCY), "--text", VERDICT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        yield f"http://127.0.0.1:{int(process.stdout.readline())}/v1"
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=10)


def write_inputs(folder: Path, base_url: str, n: int) -> tuple[Path, Path]:
    data = folder / "data.jsonl"
    with data.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = {
                "id": f"s{i}",
                "prompt": f"Sample {i}: is 2 + 2 = 4? " + "Context. " * 30,
                "completion": f"Yes, 4 (sample {i}).",
            }
            out.write(json.dumps(row) + "\n")
    graders = folder / "graders.toml"
    graders.write_text(
        f'[judge]\nbase_url = "{base_url}"\napi_key_env = "BENCH_KEY"\n'
        f"max_concurrency = {IN_FLIGHT}\n\n"
        '[[graders]]\ntype = "binary_judge"\nkey = "correct"\n'
        'criteria = "The answer is right"\njudge_model = "bench"\n',
        encoding="utf-8",
    )
    return data, graders


async def bare(data: Path, graders_file: Path) -> float:
    (grader,) = load_graders(graders_file)
    threads = [sample.thread for sample in load_samples(data)]
    start = time.perf_counter()
    grades = await asyncio.gather(*(grader(thread) for thread in threads))
    elapsed = time.perf_counter() - start
    assert all(g is not None and g.value == 1.0 for g in grades), "a bare grade failed"
    return len(threads) / elapsed


async def gradewire_eval(data: Path, graders_file: Path, out: Path) -> float:
    graders = load_graders(graders_file)
    with open(os.devnull, "w") as sink:
        display = RichDisplay(console=Console(file=sink, force_terminal=True, width=120))
        start = time.perf_counter()
        result = await run_eval(data, graders, out, concurrency=IN_FLIGHT, display=display)
        elapsed = time.perf_counter() - start
    (summary,) = result.summaries
    assert summary.n == result.outcome.graded, summary
    assert summary.mean == 1.0, summary
    return result.outcome.graded / elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.environ["BENCH_KEY"] = "bench"
    os.environ["NO_PROXY"] = "127.0.0.1"
    ideal = IN_FLIGHT / LATENCY
    with server_process() as base_url, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, graders = write_inputs(folder, base_url, args.samples)
        await bare(data, graders)  # warm-up: imports, connections, the server's first calls
        rates: dict[str, list[float]] = {"gradewire eval": [], "bare asyncio.gather": []}
        for repeat in range(args.repeats):
            rates["gradewire eval"].append(
                await gradewire_eval(data, graders, folder / f"run{repeat}")
            )
            rates["bare asyncio.gather"].append(await bare(data, graders))
    print(
        f"{args.samples} samples, judge answering after {LATENCY * 1000:.0f} ms, "
        f"{IN_FLIGHT} in flight (ideal {ideal:.0f} samples/s); best of {args.repeats}:"
    )
    best = {name: max(values) for name, values in rates.items()}
    for name, values in rates.items():
        shown = ", ".join(f"{v:.0f}" for v in values)
        print(
            f"  {name:<20} {best[name]:7.0f} samples/s  ({best[name] / ideal:.0%} of ideal; "
            f"runs: {shown})"
        )
    ratio = best["gradewire eval"] / best["bare asyncio.gather"]
    print(f"  gradewire eval / bare gather: {ratio:.3f} (claim: >= 0.90)")
    record(
        "eval_throughput",
        [
            Figure(
                f"`gradewire eval`, {args.samples:,} samples, a judge answering after "
                f"{LATENCY * 1000:.0f} ms, {IN_FLIGHT} in flight, best of {args.repeats}",
                best["gradewire eval"],
                "samples/s",
                better="higher",
                alternatives=[Alternative("bare `asyncio.gather`", best["bare asyncio.gather"])],
                note=f"ideal {ideal:.0f} samples/s; the display, results file and report included",
            )
        ],
        title="`gradewire eval` beside a bare `asyncio.gather` over the same judge grader",
    )


if __name__ == "__main__":
    asyncio.run(main())
