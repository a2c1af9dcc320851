"""Memory per sample of `run_eval` and `load_run`, beside the size of the text itself.

N short rows (an id, a prompt, a completion and an answer: about 90 bytes of JSON each) go
through `run_eval` with a trivial function grader into a fresh run folder; `run_eval`
runs again into the finished folder (a resume: everything is skipped, but the data and
the folder's outcomes are both read); then the folder is read back with `load_run`. Each
measure runs in a subprocess of its own: the imports and a 10-row warm-up first (so lazy
imports such as scipy are not counted), then the measured call; the figure is the peak
resident set size (``ru_maxrss``) minus the resident size before the call, divided by N.
Beside it: the bytes per sample of the data file (what `run_eval` reads) and of
``results.jsonl`` (what `load_run` reads), the text the samples carry.

``--baseline SRC`` measures another source tree in the same run (a checkout's ``src``
folder, e.g. one of the main branch made with ``git worktree add``), so the figures are
before and after on the same machine and load; the ratio is printed.

Run: ``python bench/eval_memory.py [--samples 100000] [--baseline /path/to/other/src]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _results import Alternative, Figure, record

SRC = Path(__file__).resolve().parent.parent / "src"

CHILD = r"""
import asyncio, json, resource, shutil, sys
from pathlib import Path

import gradewire as gw
from gradewire.eval import load_run, run_eval

def rss() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize()

def correct(sample):
    return 1.0 if sample.completion() == str(sample.metadata["answer"]) else 0.0

what, data, small, work = sys.argv[1:5]
grader = gw.BaseGrader.from_function("correct", correct)
asyncio.run(run_eval(small, [grader], Path(work) / "warm"))
load_run(Path(work) / "warm")
grader.clear_logs()
before = rss()
if what in ("eval", "resume"):
    asyncio.run(run_eval(data, [grader], Path(work) / "run"))
else:
    run = load_run(Path(work) / "run")
    assert len(run.records) > 0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"before": before, "peak": peak}))
"""


def rows(n: int) -> str:
    return "".join(
        json.dumps(
            {
                "id": f"q{i}",
                "prompt": f"What is {i} + {i}?",
                "completion": str(2 * i + (i % 3 == 0)),
                "answer": 2 * i,
            }
        )
        + "\n"
        for i in range(n)
    )


def measure(src: Path, what: str, data: Path, small: Path, work: Path) -> int:
    env = dict(os.environ, PYTHONPATH=str(src))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, what, str(data), str(small), str(work)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{what} with {src} failed:\n{done.stderr}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return int(figures["peak"]) - int(figures["before"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--baseline", type=Path, default=None, help="another source tree")
    args = parser.parse_args()
    n = args.samples
    trees = [("this checkout", SRC)]
    if args.baseline is not None:
        trees.append(("baseline", args.baseline.resolve()))
    results: dict[str, dict[str, int]] = {}
    results_sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "data.jsonl"
        data.write_text(rows(n), encoding="utf-8")
        small = folder / "small.jsonl"
        small.write_text(rows(10), encoding="utf-8")
        text = data.stat().st_size
        print(f"{n:,} samples; data file {text / n:.0f} bytes a sample")
        for label, src in trees:
            work = folder / label.replace(" ", "-")
            work.mkdir()
            grown = {"eval": measure(src, "eval", data, small, work)}
            results_size = (work / "run" / "results.jsonl").stat().st_size
            results_sizes[label] = results_size
            grown["resume"] = measure(src, "resume", data, small, work)
            grown["load"] = measure(src, "load", data, small, work)
            results[label] = grown
            print(f"{label} ({src}):")
            for what, name, beside in (
                ("eval", "run_eval", f"data text {text / n:.0f}"),
                ("resume", "run_eval, resumed", f"data text {text / n:.0f}"),
                ("load", "load_run", f"results.jsonl {results_size / n:.0f}"),
            ):
                print(
                    f"  {name}: peak +{grown[what] / 2**20:.0f} MB, "
                    f"{grown[what] / n:,.0f} bytes a sample ({beside} bytes a sample)"
                )
    ours = results["this checkout"]
    baseline = results.get("baseline")

    def baseline_of(what: str) -> list[Alternative]:
        if baseline is None:
            return []
        return [Alternative(f"the baseline source tree ({args.baseline})", baseline[what] / n)]

    record(
        "eval_memory",
        [
            Figure(
                f"`run_eval`, {n:,} short rows",
                ours["eval"] / n,
                "bytes",
                alternatives=baseline_of("eval"),
                note=f"the data file: {text / n:.0f} bytes a sample",
            ),
            Figure(
                "`run_eval` resumed into the finished folder",
                ours["resume"] / n,
                "bytes",
                alternatives=baseline_of("resume"),
            ),
            Figure(
                "`load_run` of the folder",
                ours["load"] / n,
                "bytes",
                alternatives=baseline_of("load"),
                note=f"results.jsonl: {results_sizes['this checkout'] / n:.0f} bytes a sample",
            ),
        ],
        title="Memory per sample of `run_eval` and `load_run`",
    )
    if "baseline" in results:
        for what in ("eval", "resume", "load"):
            ratio = results["baseline"][what] / max(results["this checkout"][what], 1)
            print(f"{what}: baseline uses {ratio:.1f}x the memory of this checkout")


if __name__ == "__main__":
    main()
