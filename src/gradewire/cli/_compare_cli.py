"""``gradewire compare RUN_A RUN_B``: paired differences per grader, with intervals."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
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
            "as well), and wins/ties/losses. Samples and graders only one run has are "
            "counted and listed. Pairs whose prompts differ, and graders whose spec "
            "differs between the runs, are refused unless allowed."
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
        help="also log the comparison to this tracker (repeatable); jsonl writes beside "
        "--html (compare.html: compare.jsonl) and needs it",
    )
    parser.add_argument(
        "--allow-mismatched-prompts",
        action="store_true",
        help="pair samples by id even where their prompts differ (refused by default)",
    )
    parser.add_argument(
        "--allow-changed-graders",
        action="store_true",
        help="compare a grader whose spec differs between the runs (refused by default)",
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
    from gradewire.eval._terminal import terminal_safe
    from gradewire.eval._trackers import log_comparison_to_sink

    try:
        jsonl = _jsonl_path(args.html) if "jsonl" in args.sink else None
        comparison = compare_runs(
            _load(args.run_a),
            _load(args.run_b),
            cluster_key=args.cluster_key,
            n_resamples=args.resamples,
            seed=args.seed,
            allow_mismatched_prompts=args.allow_mismatched_prompts,
            allow_changed_graders=args.allow_changed_graders,
        )
        html = render_comparison(comparison)
        others = [name for name in args.sink if name != "jsonl"]
        trackers, sinks = sinks_for(others, Path(args.html.parent if args.html else "."))
        if jsonl is not None:
            from gradewire.sinks import JsonlSink

            sinks.append(JsonlSink(jsonl))
    except GradewireError as exc:
        print(f"gradewire compare: {terminal_safe(exc, multiline=True)}", file=sys.stderr)
        return 2
    if args.html is not None:
        args.html.write_text(html, encoding="utf-8", errors="surrogatepass")
    if args.json:
        print(json.dumps(comparison.to_dict(), indent=2))
    else:
        _print(comparison)
        if args.html is not None:
            print(f"report: {terminal_safe(args.html.resolve())}")
    notes = []
    for tracker in trackers:
        notes.extend(tracker.log_comparison(comparison, html))
    for sink in sinks:
        log_comparison_to_sink(comparison, sink)
        sink.close()
    if jsonl is not None:
        notes.append(f"logged to {jsonl.resolve()}")
    for line in notes:
        print(terminal_safe(line), file=sys.stderr if args.json else sys.stdout)
    return 0


def _jsonl_path(html: Path | None) -> Path:
    """Where ``--sink jsonl`` logs a comparison: beside the ``--html`` report.

    Raises:
        GradewireError: No ``--html``, or a file of that name that is not a JSONL log.
    """
    if html is None:
        raise GradewireError(
            "--sink jsonl writes the comparison's log beside the report: pass --html "
            "PATH (compare.html logs to compare.jsonl)"
        )
    path = html.with_suffix(".jsonl")
    if path.exists() and not _is_jsonl_log(path):
        raise GradewireError(
            f"{path} exists and is not a gradewire JSONL log; gradewire never writes over a "
            "file it did not create: choose another --html"
        )
    return path


def _is_jsonl_log(path: Path) -> bool:
    """Whether a file starts as `JsonlSink` writes: a ``config`` or ``step`` object."""
    try:
        with path.open("rb") as handle:
            first = handle.readline(1 << 20)
        if not first.strip():
            return path.stat().st_size == 0
        line = json.loads(first)
    except (OSError, ValueError):
        return False
    return isinstance(line, dict) and ("config" in line or "step" in line)


def _f(value: float, digits: int = 4) -> str:
    return (
        "–"
        if not math.isfinite(value)
        else f"{value:+.{digits}f}"
        if digits < 0
        else f"{value:.{digits}f}"
    )


def _print(comparison: Any) -> None:
    from gradewire.eval._terminal import terminal_safe as safe

    c = comparison
    print(f"A = {safe(c.run_a)}   B = {safe(c.run_b)}   (differences are B - A)")
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
                safe(g.grader),
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
            print(f"  {label}: {_listed(ids)}")
    for label, keys in (("A", c.graders_only_a), ("B", c.graders_only_b)):
        if keys:
            print(f"graders only in {label} (not compared): {_listed(keys)}")
    if c.mismatched_prompts:
        print(
            f"warning: {len(c.mismatched_prompts)} pair(s) have different prompts in A and B "
            f"(compared as asked): {_listed(c.mismatched_prompts)}"
        )
    if c.changed_graders:
        print(
            "warning: these graders have another spec in B than in A (compared as asked): "
            f"{_listed(c.changed_graders)}"
        )
    if len(c.graders) > 1:
        print(f"note: {c.note}")
    if c.cluster_key:
        print(f"clustered by {safe(repr(c.cluster_key))}")


def _listed(names: Sequence[str], shown: int = 20) -> str:
    """Names (ids, grader keys) on one line, control characters escaped, the first few."""
    from gradewire.eval._terminal import terminal_safe

    text = ", ".join(terminal_safe(name) for name in names[:shown])
    return text + (f", ... ({len(names) - shown} more)" if len(names) > shown else "")
