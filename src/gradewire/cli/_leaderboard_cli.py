"""``gradewire leaderboard RUN...``: many runs ranked per grader, with rank intervals and tiers."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gradewire.core import GradewireError

__all__ = ["add_leaderboard_parser", "run_leaderboard_command"]


def add_leaderboard_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``leaderboard`` subcommand."""
    parser = commands.add_parser(
        "leaderboard",
        help="rank many eval runs per grader with rank intervals and tiers (needs gradewire[eval])",
        description=(
            "Pair the samples every run holds (gradewire run folders, Inspect AI logs, "
            "lm-eval sample logs, MLflow runs, OpenAI Evals output items) by id and give, per "
            "grader, each run's mean with its interval, every pair's paired difference "
            "with compare's test (mid-p McNemar and Tango's interval for 0/1 graders, the "
            "paired t otherwise, a CR2 t with --cluster-key), the p-values adjusted for the "
            "number of pairs (Holm, or Benjamini-Hochberg with --adjust bh), the ranks each "
            "run could hold and tiers of runs that cannot be told apart. Samples only some "
            "runs hold are counted and listed; mismatched prompts and changed graders are "
            "refused unless allowed."
        ),
    )
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="two or more runs: run folders, Inspect AI logs (with gradewire[inspect]), "
        "lm-eval sample logs, OpenAI Evals output-item JSONL files, or MLflow run ids",
    )
    parser.add_argument(
        "--cluster-key",
        default=None,
        help="metadata field whose samples share a source and are not independent: the "
        "intervals and tests are clustered by it. Default: the key every run was clustered "
        "by, if any; 'none' (or '') treats samples as independent",
    )
    parser.add_argument(
        "--by", default=None, metavar="KEY", help="also rank per value of this metadata field"
    )
    parser.add_argument(
        "--adjust",
        choices=("holm", "bh", "maxt"),
        default="holm",
        help="adjust the pairs' p-values for their number by Holm (default: family-wise "
        "error, whatever the pairs' dependence), Benjamini-Hochberg (bh: false discovery "
        "rate) or the step-down max-T (maxt: family-wise error, less conservative, using "
        "the pairs' correlation; for large n, and not with few clusters)",
    )
    parser.add_argument(
        "--confidence", type=float, default=0.95, help="level of the intervals (default 0.95)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the leaderboard as JSON: per grader, runs (mean, interval, rank_low, "
        "rank_high, tier) and pairs (difference, interval, p_value, p_value_adjusted)",
    )
    parser.add_argument(
        "--html",
        type=Path,
        default=None,
        help="write the leaderboard page here: a forest plot by tier, the rank intervals "
        "and the pairwise matrix, per grader and slice",
    )
    parser.add_argument(
        "--sink",
        action="append",
        choices=("mlflow", "wandb"),
        default=[],
        help="also log the leaderboard to this tracker (repeatable): a run with each run's "
        "mean, interval, ranks and tier per grader as metrics, a table and the page (W&B: "
        "bar charts of the means with their intervals; MLflow: each MLflow run ranked is "
        "tagged with its rank interval and tier). Exit 3 if logging fails",
    )
    parser.add_argument(
        "--allow-mismatched-prompts",
        action="store_true",
        help="pair samples by id even where their prompts differ (refused by default)",
    )
    parser.add_argument(
        "--allow-changed-graders",
        action="store_true",
        help="rank a grader whose spec differs between runs (refused by default)",
    )


def _cluster_key(given: str | None, runs: Sequence[Any]) -> str | None:
    if given is not None:
        return None if given.strip().lower() in ("", "none") else given
    keys = {run.cluster_key for run in runs}
    key = keys.pop() if len(keys) == 1 else None
    return key if isinstance(key, str) else None


def run_leaderboard_command(args: argparse.Namespace) -> int:
    """Run ``gradewire leaderboard``; returns the exit code."""
    from gradewire.cli._eval_cli import sinks_for
    from gradewire.eval import open_run
    from gradewire.eval.ranking._leaderboard import leaderboard
    from gradewire.eval.reporting._leaderboard_page import render_leaderboard
    from gradewire.eval.reporting._terminal import terminal_safe

    try:
        runs = [open_run(ref) for ref in args.runs]
        board = leaderboard(
            runs,
            cluster_key=_cluster_key(args.cluster_key, runs),
            by=args.by,
            confidence=args.confidence,
            adjust=args.adjust,
            allow_mismatched_prompts=args.allow_mismatched_prompts,
            allow_changed_graders=args.allow_changed_graders,
        )
        html = render_leaderboard(board) if args.html is not None or args.sink else None
        trackers, _ = sinks_for(args.sink, Path(args.html.parent if args.html else "."))
    except GradewireError as exc:
        print(f"gradewire leaderboard: {terminal_safe(exc, multiline=True)}", file=sys.stderr)
        return 2
    if html is not None and args.html is not None:
        args.html.write_text(html, encoding="utf-8", errors="surrogatepass")
    if args.json:
        print(json.dumps(board.to_dict(), indent=2))
    else:
        print_leaderboard(board)
        if args.html is not None:
            print(f"report: {terminal_safe(args.html.resolve())}")
    notes: list[str] = []
    failed: list[str] = []
    for name, tracker in zip(dict.fromkeys(args.sink), trackers, strict=True):
        assert html is not None
        try:
            notes.extend(_log(tracker, board, html, runs))
        except Exception as exc:  # any tracker failure: reported, never a traceback
            failed.append(f"{name} ({type(exc).__name__}: {exc})")
    for line in notes:
        print(terminal_safe(line), file=sys.stderr if args.json else sys.stdout)
    if failed:
        print(
            f"gradewire leaderboard: logging the leaderboard failed: "
            f"{terminal_safe('; '.join(failed))}",
            file=sys.stderr,
        )
        return 3
    return 0


def _log(tracker: Any, board: Any, html: str, runs: Sequence[Any]) -> list[str]:
    """The leaderboard to one tracker: its own view, else as a report (an older tracker)."""
    from gradewire.eval.reporting._leaderboard_page import leaderboard_metrics

    log_leaderboard = getattr(tracker, "log_leaderboard", None)
    if log_leaderboard is not None:
        return list(log_leaderboard(board, html, runs))
    return list(
        tracker.log_report(
            "leaderboard",
            f"leaderboard of {len(board.runs)} runs",
            leaderboard_metrics(board),
            [g.grader for g in board.graders],
            html,
            board.to_dict(),
        )
    )


def _f(value: float, digits: int = 4) -> str:
    return f"{value:.{digits}g}" if math.isfinite(value) else "–"


def _p(value: float) -> str:
    if not math.isfinite(value):
        return "= –"
    return "< 0.0001" if value < 1e-4 else f"= {value:.4f}"


def print_leaderboard(board: Any) -> None:
    """The leaderboard on the terminal: one table per grader, every name escaped."""
    from gradewire.eval.reporting._terminal import terminal_safe as safe

    print(
        f"leaderboard of {len(board.runs)} runs on {board.n_shared} shared samples; p-values "
        f"of the pairs adjusted by {board.adjustment}"
    )
    if board.cluster_key:
        print(f"clustered by {safe(repr(board.cluster_key))}")
    for run, ids in board.unshared.items():
        print(f"  {safe(run)}: {len(ids)} sample(s) the other runs lack, left out: {_listed(ids)}")
    if board.mismatched_prompts:
        print(
            f"  {len(board.mismatched_prompts)} shared id(s) with different prompts, paired "
            f"anyway (allowed): {_listed(board.mismatched_prompts)}"
        )
    if board.changed_graders:
        print(f"  graders whose spec changed, ranked anyway: {_listed(board.changed_graders)}")
    for grader in board.graders:
        print()
        _print_board(grader, safe)
        for part in grader.slices:
            print()
            _print_board(part, safe)


def _print_board(g: Any, safe: Any) -> None:
    where = f" [{safe(board_by_slice(g))}]" if g.slice is not None else ""
    print(f"{safe(g.grader)}{where}: {g.n_samples} samples scored by every run")
    if g.runs:
        level = f"{g.confidence:.0%}"
        names = [safe(r.run) for r in g.runs]
        width = max(len("run"), *(len(n) for n in names))
        print(f"  {'tier':>4}  {'rank':>7}  {'run':<{width}}  {'mean':>8}  {level} interval")
        tier = None
        for r, name in zip(g.runs, names, strict=True):
            if tier is not None and r.tier != tier:
                print(f"  {'':>4}  {'':>7}  {'-' * width}")
            tier = r.tier
            rank = f"{r.rank_low}" if r.rank_low == r.rank_high else f"{r.rank_low}–{r.rank_high}"
            interval = f"{_f(r.low)} to {_f(r.high)}" if math.isfinite(r.low) else "–"
            passed = f"  pass rate {_f(r.pass_rate)}" if r.pass_rate is not None else ""
            print(
                f"  {r.tier:>4}  {rank:>7}  {name:<{width}}  {_f(r.mean):>8}  {interval} "
                f"({r.method}){passed}"
            )
        methods = sorted({p.method for p in g.pairs if p.method != "none"})
        separable = [p for p in g.pairs if p.separable]
        if g.pairs:
            print(
                f"  {len(separable)} of {len(g.pairs)} pairs separable"
                + (f" ({'; '.join(methods)})" if methods else "")
                + f"; each X vs Y is the difference X − Y [{g.confidence:.0%} interval, not "
                "adjusted for the pairs]:"
                + "".join(
                    f"\n    {safe(p.a)} vs {safe(p.b)}: {_f(p.difference)} "
                    f"[{_f(p.low)}, {_f(p.high)}], p {_p(p.p_value)}, "
                    f"adjusted p {_p(p.p_value_adjusted)}"
                    for p in separable[:20]
                )
                + (f"\n    ... and {len(separable) - 20} more" if len(separable) > 20 else "")
            )
    print(f"  {safe(g.summary())}")
    for line in g.judge_drift:
        print(f"  warning: {safe(line)}")
    if g.missing_runs:
        print(f"  runs without this grader: {_listed(g.missing_runs)}")
    if g.not_scored:
        print(
            f"  {len(g.not_scored)} shared sample(s) some run did not score, left out: "
            f"{_listed(g.not_scored)}"
        )
    for note in g.notes:
        print(f"  note: {safe(note)}")


def board_by_slice(g: Any) -> str:
    """A slice board's label."""
    return f"slice {g.slice!r}"


def _listed(names: Sequence[str], shown: int = 10) -> str:
    from gradewire.eval.reporting._terminal import terminal_safe

    text = ", ".join(terminal_safe(name) for name in names[:shown])
    return text + (f", ... ({len(names) - shown} more)" if len(names) > shown else "")
