"""``gradewire compare RUN_A RUN_B``: paired differences per grader, with intervals."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gradewire.cli._labels_key import labels_grader_key
from gradewire.core import GradewireError

__all__ = ["add_compare_parser", "run_compare_command"]


def add_compare_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``compare`` subcommand."""
    parser = commands.add_parser(
        "compare",
        help="compare two eval runs on their paired samples (needs gradewire[eval])",
        description=(
            "Pair the samples of two runs (gradewire run folders, Inspect AI logs, lm-eval "
            "sample logs, MLflow runs) by id and give, per grader, the means, the "
            "difference B - A with its paired standard error, an interval and a p-value "
            "from one method (the mid-p McNemar test with Tango's score interval for 0/1 "
            "graders, else the paired t test; with --cluster-key, a cluster-robust CR2 t "
            "interval with Bell-McCaffrey degrees of freedom), the p-values Holm-adjusted "
            "across graders as well, and wins/ties/losses. Samples and graders only one "
            "run has are counted and listed. Pairs whose prompts differ, and graders whose spec "
            "differs between the runs, are refused unless allowed."
        ),
    )
    parser.add_argument(
        "run_a",
        help="run folder, Inspect AI log (.eval/.json, with gradewire[inspect]), lm-eval "
        "samples_<task>_<date>.jsonl file or the folder of one run's, or (with "
        "gradewire[mlflow]) an MLflow run id",
    )
    parser.add_argument("run_b", help="the run compared with RUN_A")
    parser.add_argument(
        "--cluster-key",
        default=None,
        help="metadata field whose samples share a source and are not independent (a "
        "document, an Inspect sample's epochs): the intervals are clustered by it. Default: "
        "the key both runs were clustered by, if any (Inspect logs of several epochs: "
        "inspect_id). 'none' (or '') treats the pairs as independent. A field that only "
        "groups questions (a topic) is a stratum: use --by",
    )
    parser.add_argument(
        "--by",
        default=None,
        metavar="KEY",
        help="also compare each grader per value of this metadata field (a stratum: "
        "topic, difficulty, source); slices that go (or lean) the other way are pointed out",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help=(
            "print the comparison as JSON: per grader, what did not pair, and the pairs "
            "kept for the compare page (--pairs-shown) with the counts of every kind"
        ),
    )
    parser.add_argument(
        "--html",
        type=Path,
        default=None,
        help="write the compare page here: verdict, intervals, slices, and the pairs that "
        "changed most side by side, filtered by grader, outcome and slice",
    )
    parser.add_argument(
        "--pairs-shown",
        type=int,
        default=None,
        metavar="N",
        help="pairs the page keeps (default: 100): the largest change of each grader, "
        "outcome and slice in turn; the page counts the rest",
    )
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
        "--resamples",
        type=int,
        default=2000,
        help="bootstrap resamples of --judge win rates (default: 2000)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="bootstrap seed of --judge win rates (default: 0)"
    )
    parser.add_argument(
        "--judge",
        type=Path,
        default=None,
        metavar="FILE",
        help='a grader file with pairwise judges (type = "pairwise_judge"): each judges '
        "B's completion against A's on every pair; adds B's judged win rate (wins, ties, "
        "losses, a paired interval) and, with swap = true, the position consistency",
    )
    parser.add_argument(
        "--labels-a",
        type=Path,
        default=None,
        metavar="LABELS",
        help="human labels of run A's answers (.jsonl/.csv of id, label); with --labels-b "
        "and --labels-grader, the difference B - A corrected by the labels (paired PPI)",
    )
    parser.add_argument(
        "--labels-b", type=Path, default=None, metavar="LABELS", help="the same for run B"
    )
    parser.add_argument(
        "--labels-grader",
        default=None,
        metavar="KEY",
        help="the grader the labels are of (default: the only grader both runs have)",
    )

    parser.add_argument(
        "--explain",
        action="store_true",
        help="after the comparison, say what each statistic means",
    )
    from gradewire.cli._judge_cli import add_certificate_arguments

    add_certificate_arguments(parser)


def _judged(args: argparse.Namespace, run_a: Any, run_b: Any, cluster_key: str | None) -> list[Any]:
    """Each pairwise judge of ``--judge`` on the runs' pairs."""
    import asyncio

    from gradewire.eval.comparing._judged_pairs import judge_runs
    from gradewire.judges import PairwiseJudgeGrader
    from gradewire.specs import load_graders

    if args.judge is None:
        return []
    judges = [g for g in load_graders(args.judge) if isinstance(g, PairwiseJudgeGrader)]
    if not judges:
        raise GradewireError(
            f"{args.judge} declares no pairwise judge; --judge takes a grader file with "
            'type = "pairwise_judge" graders'
        )

    async def every() -> list[Any]:
        return [
            await judge_runs(
                run_a,
                run_b,
                judge,
                cluster_key=cluster_key,
                n_resamples=args.resamples,
                seed=args.seed,
            )
            for judge in judges
        ]

    return asyncio.run(every())


def _paired_ppi(args: argparse.Namespace, run_a: Any, run_b: Any) -> Any:
    """The labels-corrected difference B - A of ``--labels-a``/``--labels-b``, or None."""
    from gradewire.eval.auditing._run_agreement import read_labels
    from gradewire.stats import ppi_mean_difference

    given = (args.labels_a is not None, args.labels_b is not None)
    if not any(given):
        if args.labels_grader is not None:
            raise GradewireError("--labels-grader goes with --labels-a and --labels-b")
        return None
    if not all(given):
        raise GradewireError(
            "paired PPI needs the labels of both runs' answers: --labels-a and --labels-b"
        )
    shared = [key for key in run_a.graders if key in run_b.spec_hashes]
    key = labels_grader_key(args.labels_grader, shared, "both runs")
    return key, ppi_mean_difference(
        run_a.scores(key),
        run_b.scores(key),
        _present(read_labels(args.labels_a)),
        _present(read_labels(args.labels_b)),
    )


def _present(labels: dict[str, Any]) -> dict[str, float]:
    return {k: v for k, v in labels.items() if v is not None}


def _load(ref: str) -> Any:
    from gradewire.eval import open_run

    return open_run(ref)


def _cluster_key(given: str | None, run_a: Any, run_b: Any) -> str | None:
    """``--cluster-key``: 'none' or '' for independent pairs, else the field, else the runs'."""
    if given is None:
        return _shared_cluster_key(run_a, run_b)
    if given.strip().lower() in ("", "none"):
        return None
    return given


def _shared_cluster_key(run_a: Any, run_b: Any) -> str | None:
    """The cluster key both runs were made with: their pairs are not independent without it."""
    key: str | None = run_a.cluster_key
    return key if key is not None and key == run_b.cluster_key else None


def run_compare_command(args: argparse.Namespace) -> int:
    """Run ``gradewire compare``; returns the exit code."""
    from gradewire.cli._eval_cli import sinks_for
    from gradewire.eval.comparing._compare_runs import compare_runs
    from gradewire.eval.reporting._compare_page import render_comparison
    from gradewire.eval.reporting._terminal import terminal_safe
    from gradewire.eval.reporting._trackers import log_comparison_to_sink

    try:
        jsonl = _jsonl_path(args.html) if "jsonl" in args.sink else None
        run_a, run_b = _load(args.run_a), _load(args.run_b)
        from gradewire.cli._judge_cli import check_run_certificates

        check_run_certificates(args, {"A": run_a, "B": run_b}, "gradewire compare")
        cluster_key = _cluster_key(args.cluster_key, run_a, run_b)
        comparison = compare_runs(
            run_a,
            run_b,
            cluster_key=cluster_key,
            by=args.by,
            n_resamples=args.resamples,
            seed=args.seed,
            **({} if args.pairs_shown is None else {"shown": args.pairs_shown}),
            allow_mismatched_prompts=args.allow_mismatched_prompts,
            allow_changed_graders=args.allow_changed_graders,
        )
        paired = _paired_ppi(args, run_a, run_b)
        judged = _judged(args, run_a, run_b, cluster_key)
        html = render_comparison(comparison, judged=judged, paired_ppi=paired)
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
        data = comparison.to_dict()
        data["judged"] = [result.to_dict() for result in judged]
        if paired is not None:
            data["paired_ppi"] = {"grader": paired[0], **_finite(paired[1].to_dict())}
        print(json.dumps(data, indent=2))
    else:
        _print(comparison, args.explain)
        for result in judged:
            print(terminal_safe(str(result), multiline=True))
        if paired is not None:
            print(f"{terminal_safe(paired[0])}, corrected by human labels (paired PPI):")
            print(terminal_safe(str(paired[1]), multiline=True))
        if args.html is not None:
            print(f"report: {terminal_safe(args.html.resolve())}")
    notes = []
    for tracker in trackers:
        notes.extend(tracker.log_comparison(comparison, html))
    extra = _extra_metrics(judged, paired)
    for tracker in trackers:
        if extra:
            notes.extend(
                tracker.log_report(
                    "judged",
                    f"judged {comparison.run_b} vs {comparison.run_a}",
                    extra,
                    [r.judge for r in judged] + ([paired[0]] if paired else []),
                    html,
                    {"judged": [r.to_dict() for r in judged]},
                )
            )
    for sink in sinks:
        log_comparison_to_sink(comparison, sink)
        if extra:
            sink.log(dict(extra), 0)
        sink.close()
    if jsonl is not None:
        notes.append(f"logged to {jsonl.resolve()}")
    for line in notes:
        print(terminal_safe(line), file=sys.stderr if args.json else sys.stdout)
    return 0


def _finite(data: dict[str, Any]) -> dict[str, Any]:
    return {
        k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in data.items()
    }


def _extra_metrics(judged: Sequence[Any], paired: Any) -> dict[str, float]:
    """``judged/<judge>/win_rate`` and the like, ``judged/<grader>/ppi_diff`` (finite only)."""
    metrics: dict[str, float] = {}
    for r in judged:
        figures = {
            "win_rate": r.win_rate,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "wins": r.wins,
            "ties": r.ties,
            "losses": r.losses,
            "n_pairs": r.n_pairs,
        }
        if r.position_consistency is not None:
            figures["position_consistency"] = r.position_consistency
        for name, value in figures.items():
            if math.isfinite(value):
                metrics[f"judged/{r.judge}/{name}"] = float(value)
    if paired is not None:
        key, ppi = paired
        for name, value in (
            ("ppi_diff", ppi.estimate),
            ("ppi_ci_low", ppi.low),
            ("ppi_ci_high", ppi.high),
            ("ppi_labels", ppi.n_labels),
        ):
            if math.isfinite(value):
                metrics[f"judged/{key}/{name}"] = float(value)
    return metrics


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
    if not math.isfinite(value):
        return "–"
    if abs(value) >= 1e6:
        return f"{value:.{digits}g}"
    return f"{value:.{digits}f}"


def _difference(value: float, points: bool, signed: bool = False) -> str:
    """A difference as the verdict, the page and the table write it: points or score units."""
    from gradewire.eval.comparing._verdict import format_difference

    text = format_difference(value, points, signed=signed).replace("−", "-")
    return text + (" pts" if points and math.isfinite(value) else "")


def _print(comparison: Any, explain: bool = False) -> None:
    from gradewire.eval.comparing._verdict import explain as explanations
    from gradewire.eval.reporting._terminal import terminal_safe as safe

    c = comparison
    print(f"A = {safe(c.run_a)}   B = {safe(c.run_b)}   (differences are B - A)")
    print()
    for g in c.graders:
        print(f"* {safe(g.verdict)}")
    print()
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
            "detectable",
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
                _difference(g.diff, g.points, signed=True),
                f"[{_difference(g.ci_low, g.points)}, {_difference(g.ci_high, g.points)}]",
                _f(g.p_value),
                _f(g.p_value_holm),
                _difference(g.detectable, g.points),
                f"{g.wins}/{g.ties}/{g.losses}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    if c.by is not None:
        _print_slices(c)
    methods: dict[str, list[str]] = {}
    for g in c.graders:
        methods.setdefault(g.method, []).append(g.grader)
    for method, keys in methods.items():
        print(f"method ({_listed(keys)}): {method}")
    if any(g.points for g in c.graders):
        print("pts: points, 100 to a score range of 1 (0.25 = 25.0 pts)")
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
    for line in c.judge_drift:
        print(f"warning: {safe(line)}")
    if len(c.graders) > 1:
        print(f"note: {c.note}")
    if c.cluster_key:
        print(f"clustered by {safe(repr(c.cluster_key))}")
    if explain:
        print()
        print("What each statistic means:")
        print(explanations())
    else:
        print("(--explain says what each statistic means)")


def _print_slices(comparison: Any) -> None:
    from gradewire.eval.reporting._terminal import terminal_safe as safe

    c = comparison
    for g in c.graders:
        print()
        print(f"{safe(g.grader)} by {safe(c.by)}:")
        rows = [("slice", "pairs", "mean A", "mean B", "B - A", "interval", "p", "")]
        notes = []
        for s in g.slices:
            rows.append(
                (
                    safe(s.value),
                    str(s.n_pairs),
                    _f(s.mean_a),
                    _f(s.mean_b),
                    _difference(s.diff, g.points, signed=True),
                    f"[{_difference(s.ci_low, g.points)}, {_difference(s.ci_high, g.points)}]",
                    _f(s.p_value),
                    slice_flag(s),
                )
            )
            if s.note:
                notes.append(f"  {safe(s.value)}: {safe(s.note)}")
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            print(
                "  "
                + "  ".join(
                    cell.ljust(w) if i in (0, 7) else cell.rjust(w)
                    for i, (cell, w) in enumerate(zip(row, widths, strict=True))
                ).rstrip()
            )
        for line in notes:
            print(line)


def slice_flag(s: Any) -> str:
    """A slice's flag: it goes the other way (interval excludes 0), or only leans that way."""
    if not s.flips:
        return ""
    return "<- goes the other way" if s.flips_clearly else "<- leans the other way"


def _listed(names: Sequence[str], shown: int = 20) -> str:
    """Names (ids, grader keys) on one line, control characters escaped, the first few."""
    from gradewire.eval.reporting._terminal import terminal_safe

    text = ", ".join(terminal_safe(name) for name in names[:shown])
    return text + (f", ... ({len(names) - shown} more)" if len(names) > shown else "")
