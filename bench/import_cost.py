"""What ``import gradewire`` and a worker's first use cost, against importing every public name.

Each case runs in a fresh interpreter (``python -X importtime`` would add its own cost, so
the time is taken inside the process around the statements). The alternative is what an
eager root did: every name of ``gradewire.__all__`` and of every stage package resolved at
import, measured in the same run. Cases alternate, so load on the machine falls on both.

    python bench/import_cost.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from _results import Alternative, Figure, record

STAGES = ("core", "helpers", "http", "models", "judges", "tools", "sinks", "specs", "train", "eval")
EVERYTHING = "import gradewire, importlib\n" + "".join(
    f"_m = importlib.import_module('gradewire.{stage}'); [getattr(_m, n) for n in _m.__all__]\n"
    for stage in STAGES
)

CASES = {
    "import gradewire": "import gradewire",
    "a from_function grader's first grade": (
        "import gradewire as gw\n"
        "g = gw.BaseGrader.from_function('k', lambda s: 1.0)\n"
        "gw.run_sync(g.grade(gw.StringThread([('user', 'q'), ('assistant', 'a')])))"
    ),
    "gradewire.train.openrlhf_reward_func": "import gradewire.train as t; t.openrlhf_reward_func",
    "every public name (an eager root)": EVERYTHING,
}

PROGRAM = """
import sys, time
start = time.perf_counter()
exec(compile(sys.argv[1], "<case>", "exec"), {})
took = time.perf_counter() - start
print(len([m for m in sys.modules if m == "gradewire" or m.startswith("gradewire.")]), took)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in CASES}
    modules: dict[str, int] = {}
    for _ in range(args.runs):
        for name, code in CASES.items():
            out = subprocess.run(
                [sys.executable, "-c", PROGRAM, code], capture_output=True, text=True, check=True
            )
            count, took = out.stdout.split()
            modules[name] = int(count)
            times[name].append(float(took) * 1000)
    eager = statistics.median(times["every public name (an eager root)"])
    print(f"{'case':40s} {'gradewire modules':>18s} {'median ms':>10s} {'vs eager':>9s}")
    figures = []
    for name in CASES:
        median = statistics.median(times[name])
        print(f"{name:40s} {modules[name]:18d} {median:10.1f} {median / eager:8.2f}x")
        if name != "every public name (an eager root)":
            figures.append(
                Figure(
                    f"{name} ({modules[name]} gradewire modules), median of {args.runs}",
                    median,
                    "ms",
                    alternatives=[Alternative("every public name resolved (an eager root)", eager)],
                )
            )
    record("import_cost", figures, title="What `import gradewire` and a first grade cost")


if __name__ == "__main__":
    main()
