"""``gradewire compare RUN_A RUN_B``: paired differences per grader, with intervals."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from gradewire.core import GradewireError

__all__ = ["add_compare_parser", "run_compare_command"]


def add_compare_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``compare`` subcommand."""
    parser = commands.add_parser(
        "compare",
        help="compare two eval runs on their paired samples (needs gradewire[eval])",
        description=(
            "Pair the samples of two runs by id and give, per grader, the means, the "
            "difference B - A with its paired standard error and bootstrap interval, a "
            "p-value (McNemar for 0/1 graders, else paired t; Holm-adjusted across graders "
            "as well), and wins/ties/losses. Samples only one run has are counted and listed."
        ),
    )
    parser.add_argument("run_a", help="run folder (or, with gradewire[mlflow], an MLflow run id)")
    parser.add_argument("run_b", help="the run compared with RUN_A")
    parser.add_argument("--cluster-key", default=None, help="metadata field to cluster by")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--html", type=Path, default=None, help="write the HTML report here")
    parser.add_argument(
        "--sink",
        action="append",
        choices=("mlflow", "wandb", "jsonl", "console"),
        default=[],
        help="also log the comparison to this tracker (repeatable)",
    )
    parser.add_argument(
        "--resamples", type=int, default=2000, help="bootstrap resamples (default: 2000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")


def _load(ref: str) -> Any:
    from gradewire.eval import load_run
    from gradewire.eval._trackers import find_run

    if Path(ref).exists():
        return load_run(ref)
    run = find_run(ref)
    if run is None:
        raise GradewireError(
            f"{ref!r} is neither a run folder nor a run an installed tracker knows (an MLflow "
            "run id needs pip install 'gradewire[mlflow]' and MLFLOW_TRACKING_URI)"
        )
    return run


def run_compare_command(args: argparse.Namespace) -> int:
    """Run ``gradewire compare``; returns the exit code."""
    from gradewire.cli._eval_cli import sinks_for
    from gradewire.eval._compare import compare_runs
    from gradewire.eval._compare_report import render_comparison
    from gradewire.eval._trackers import log_comparison_to_sink

    try:
        comparison = compare_runs(
            _load(args.run_a),
            _load(args.run_b),
            cluster_key=args.cluster_key,
            n_resamples=args.resamples,
            seed=args.seed,
        )
        html = render_comparison(comparison)
        trackers, sinks = sinks_for(args.sink, Path(args.html.parent if args.html else "."))
    except GradewireError as exc:
        print(f"gradewire compare: {exc}", file=sys.stderr)
        return 2
    if args.html is not None:
        args.html.write_text(html, encoding="utf-8", errors="surrogatepass")
    if args.json:
        print(json.dumps(comparison.to_dict(), indent=2))
    else:
        _print(comparison)
        if args.html is not None:
            print(f"report: {args.html.resolve()}")
    notes = []
    for tracker in trackers:
        notes.extend(tracker.log_comparison(comparison, html))
    for sink in sinks:
        log_comparison_to_sink(comparison, sink)
        sink.close()
    for line in notes:
        print(line, file=sys.stderr if args.json else sys.stdout)
    return 0


def _f(value: float, digits: int = 4) -> str:
    return (
        "–"
        if not math.isfinite(value)
        else f"{value:+.{digits}f}"
        if digits < 0
        else f"{value:.{digits}f}"
    )


def _print(comparison: Any) -> None:
    c = comparison
    print(f"A = {c.run_a}   B = {c.run_b}   (differences are B - A)")
    level = f"{c.graders[0].confidence:.0%}" if c.graders else "95%"
    rows = [
        (
            "grader",
            "pairs",
            "mean A",
            "mean B",
            "B - A",
            f"{level} interval",
            "p",
            "p (Holm)",
            "test",
            "W/T/L",
        )
    ]
    for g in c.graders:
        rows.append(
            (
                g.grader,
                str(g.n_pairs),
                _f(g.mean_a),
                _f(g.mean_b),
                _f(g.diff),
                f"[{_f(g.ci_low)}, {_f(g.ci_high)}]",
                _f(g.p_value),
                _f(g.p_value_holm),
                g.test,
                f"{g.wins}/{g.ties}/{g.losses}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(
                cell.ljust(w) if i in (0, 8) else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    print(f"unpaired: {len(c.only_a)} sample(s) only in A, {len(c.only_b)} only in B (left out)")
    for label, ids in (("only in A", c.only_a), ("only in B", c.only_b)):
        if ids:
            shown = ", ".join(ids[:20]) + (f", ... ({len(ids) - 20} more)" if len(ids) > 20 else "")
            print(f"  {label}: {shown}")
    if len(c.graders) > 1:
        print(f"note: {c.note}")
    if c.cluster_key:
        print(f"clustered by {c.cluster_key!r}")
