"""Eval results into MLflow: ``gradewire eval --sink mlflow`` beside ``mlflow.genai.evaluate``.

One lean ``mlflow server`` on 127.0.0.1 with a sqlite store (as the integration tests start
it), one data set of ``--samples`` rows (a prompt, a completion and the expected answer), and
two code graders on each side: an exact numeric match and a length check.

- gradewire: `run_eval` with two ``from_function`` graders into a run folder, then the
  ``mlflow`` eval tracker (what ``--sink mlflow`` runs): one trace per sample with a Feedback
  per grader, metrics and artifacts, the run tagged as an evaluation run.
- MLflow: ``mlflow.genai.evaluate(data=..., scorers=[...])`` with two ``@scorer`` functions
  doing the same checks on the same rows: one trace per row with a Feedback per scorer.

Each side runs ``--repeats`` times, alternating, each time into a new experiment of the
same store; the figure is the best wall time per sample of each, and their ratio. Every run
is then read back through ``mlflow.search_traces``: the count of traces and of Feedback per
trace must be what was logged, or the run fails. ``import mlflow`` is paid once, before
either side is timed.

Run: ``python integrations/mlflow/bench/eval_vs_genai_evaluate.py [--samples 300]
[--repeats 3]``. Needs the full ``mlflow`` (for the server). Figures move on a loaded
machine; compare the rows of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import gradewire as gw
from gradewire.eval import run_eval
from gradewire_mlflow._eval import MlflowEvalTracker
from mlflow_support import MlflowServer, migrate_template


def rows(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"q{i}",
            "prompt": f"What is {i} + {i}? Answer with the number.",
            "completion": f"The answer is {2 * i + (i % 4 == 0)}.",
            "answer": 2 * i,
        }
        for i in range(n)
    ]


def correct_value(completion: str, answer: int) -> float:
    return gw.numeric_match(completion, answer, which="last")


def short_value(completion: str) -> float:
    return float(len(completion) <= 40)


def gradewire_graders() -> list[gw.BaseGrader]:
    def correct(sample: gw.StringThread) -> float:
        return correct_value(sample.completion() or "", sample.metadata["answer"])

    def short(sample: gw.StringThread) -> float:
        return short_value(sample.completion() or "")

    return [
        gw.BaseGrader.from_function("correct", correct),
        gw.BaseGrader.from_function("short", short),
    ]


def run_gradewire(url: str, data: Path, folder: Path, experiment: str) -> str:
    result = asyncio.run(run_eval(data, gradewire_graders(), folder))
    tracker = MlflowEvalTracker(folder, tracking_uri=url, experiment_name=experiment)
    tracker.log_run(result.run, result.summaries)
    state = json.loads((folder / "mlflow.json").read_text(encoding="utf-8"))
    return str(state["run_id"])


def run_mlflow(url: str, table: list[dict[str, Any]], experiment: str) -> str:
    import mlflow
    from mlflow.genai.scorers import scorer

    @scorer
    def correct(inputs: dict[str, Any], outputs: str) -> float:
        return correct_value(outputs, inputs["answer"])

    @scorer
    def short(outputs: str) -> float:
        return short_value(outputs)

    data = [
        {"inputs": {"prompt": r["prompt"], "answer": r["answer"]}, "outputs": r["completion"]}
        for r in table
    ]
    mlflow.set_tracking_uri(url)
    mlflow.set_experiment(experiment)
    with mlflow.start_run() as run:
        mlflow.genai.evaluate(data=data, scorers=[correct, short])
    return str(run.info.run_id)


def check(url: str, run_id: str, samples: int, feedback: int) -> None:
    """Every trace of the run, and each one's Feedback, read back through search_traces."""
    import mlflow
    from mlflow import MlflowClient

    client = MlflowClient(url)
    run = client.get_run(run_id)
    mlflow.set_tracking_uri(url)
    traces = mlflow.search_traces(
        run_id=run_id, return_type="list", locations=[run.info.experiment_id]
    )
    counts = sorted(
        sum(1 for a in t.info.assessments or () if getattr(a, "feedback", None) is not None)
        for t in traces
    )
    if len(traces) != samples or counts[0] < feedback:
        raise SystemExit(
            f"run {run_id}: {len(traces)} of {samples} traces read back, Feedback per trace "
            f"{counts[0] if counts else 0}..{counts[-1] if counts else 0} (want {feedback})"
        )
    if run.data.tags.get("mlflow.runType") != "genai_evaluate":
        raise SystemExit(f"run {run_id} is not marked as an evaluation run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID"):
        os.environ.pop(name, None)
    logging.getLogger("mlflow").setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    import mlflow  # paid once, outside both timings

    del mlflow
    table = rows(args.samples)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        db = root / "server" / "mlflow.db"
        db.parent.mkdir()
        migrate_template(db)
        server = MlflowServer(db.parent, db)
        server.start()
        try:
            data = root / "data.jsonl"
            data.write_text("".join(json.dumps(r) + "\n" for r in table), encoding="utf-8")
            times: dict[str, list[float]] = {"gradewire": [], "mlflow": []}
            for repeat in range(args.repeats):
                for side in ("gradewire", "mlflow"):
                    experiment = f"bench-{side}-{uuid.uuid4().hex[:8]}"
                    start = time.perf_counter()
                    if side == "gradewire":
                        folder = root / f"run-{repeat}"
                        run_id = run_gradewire(server.url, data, folder, experiment)
                    else:
                        run_id = run_mlflow(server.url, table, experiment)
                    times[side].append(time.perf_counter() - start)
                    check(server.url, run_id, args.samples, feedback=2)
                    print(
                        f"  {side:<10} repeat {repeat + 1}: {times[side][-1]:6.2f} s",
                        file=sys.stderr,
                        flush=True,
                    )
                    if side == "gradewire":
                        shutil.rmtree(folder)
        finally:
            server.stop()
    own = min(times["gradewire"]) / args.samples * 1e3
    theirs = min(times["mlflow"]) / args.samples * 1e3
    print(
        f"{args.samples} samples, 2 code graders, lean MLflow server on 127.0.0.1 (sqlite); "
        f"best of {args.repeats}; every trace and Feedback read back through search_traces"
    )
    print(f"  gradewire eval --sink mlflow   {own:7.1f} ms a sample")
    print(f"  mlflow.genai.evaluate          {theirs:7.1f} ms a sample")
    print(f"  ratio                          {theirs / own:7.1f}x  (target >= 5x)")


if __name__ == "__main__":
    main()
