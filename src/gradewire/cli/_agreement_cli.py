"""``gradewire agreement RUN --labels LABELS --grader KEY``: a judge against people."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gradewire.core import GradewireError

__all__ = ["add_agreement_parser", "run_agreement_command"]


def add_agreement_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``agreement`` subcommand."""
    parser = commands.add_parser(
        "agreement",
        help="how far a run's judge agrees with human labels or with another run's judge",
        description=(
            "Compare the scores one grader gave in a run with labels of the same samples: "
            "raw agreement, Cohen's κ (weighted on an ordinal scale), Krippendorff's α, "
            "Pearson and Spearman on an interval scale, each with a bootstrap interval, the "
            "confusion matrix and the disagreements. LABELS is a .jsonl or .csv file of id "
            "and label rows, or another run folder (inter-judge agreement). Writes "
            "agreement-<grader>.html into the run folder, beside its report."
        ),
    )
    parser.add_argument("run", help="run folder (or, with gradewire[mlflow], an MLflow run id)")
    parser.add_argument(
        "--labels", required=True, help="labels file (.jsonl/.csv of id, label) or a run folder"
    )
    parser.add_argument("--grader", required=True, help="the grader of RUN to compare")
    parser.add_argument(
        "--labels-grader",
        default=None,
        help="when LABELS is a run: its grader to compare with (default: --grader)",
    )
    parser.add_argument(
        "--scale",
        choices=("nominal", "ordinal", "interval"),
        default=None,
        help="level of measurement (default: nominal when every value is 0 or 1, else interval)",
    )
    parser.add_argument("--cluster-key", default=None, help="metadata field to cluster by")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--sink",
        action="append",
        choices=("mlflow", "wandb", "jsonl", "console"),
        default=[],
        help="also log the figures to this tracker (repeatable)",
    )
    parser.add_argument(
        "--resamples", type=int, default=2000, help="bootstrap resamples (default: 2000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")


def run_agreement_command(args: argparse.Namespace) -> int:
    """Run ``gradewire agreement``; returns the exit code."""
    from gradewire.cli._compare_cli import _load
    from gradewire.cli._eval_cli import sinks_for
    from gradewire.eval.auditing._run_agreement import (
        label_text,
        read_labels,
        run_agreement,
        write_agreement_page,
    )
    from gradewire.eval.reporting._terminal import terminal_safe

    try:
        if args.resamples < 0:
            raise GradewireError(f"--resamples must be 0 or more, not {args.resamples}")
        run = _load(args.run)
        labels, name = _labels(args, read_labels)
        as_given = label_text(args.labels) if not Path(args.labels).is_dir() else None
        result = run_agreement(
            run,
            args.grader,
            labels,
            labels_name=name,
            label_text=as_given,
            scale=args.scale,
            cluster_key=args.cluster_key,
            n_resamples=args.resamples,
            seed=args.seed,
        )
        folder = run.folder if run.folder is not None else Path(".")
        trackers, sinks = sinks_for(args.sink, folder)
        written = write_agreement_page(result, run.folder) if run.folder is not None else None
    except (GradewireError, OSError) as exc:
        print(f"gradewire agreement: {terminal_safe(exc, multiline=True)}", file=sys.stderr)
        return 2
    out = sys.stderr if args.json else sys.stdout
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=True))
    else:
        print(terminal_safe(str(result), multiline=True))
    if written is not None:
        print(f"report: {terminal_safe(written.resolve())}", file=out)
    failed = []
    for sink_name, tracker in zip(
        [n for n in dict.fromkeys(args.sink) if n in ("mlflow", "wandb")], trackers, strict=True
    ):
        try:
            lines = tracker.log_report(
                "agreement",
                f"agreement {result.grader} of {result.run}",
                result.metrics(),
                [result.grader],
                result.to_html(),
                result.to_dict(),
            )
        except Exception as exc:  # any tracker failure: reported, never a traceback
            failed.append(f"{sink_name} ({type(exc).__name__}: {exc})")
            continue
        for line in lines:
            print(terminal_safe(line), file=out)
    for sink in sinks:
        sink.log_config({"run": result.run, "grader": result.grader, "labels": result.labels})
        sink.log(dict(result.metrics()), 0)
        sink.close()
    if failed:
        print(
            f"gradewire agreement: logging failed: {terminal_safe('; '.join(failed))}",
            file=sys.stderr,
        )
        return 3
    return 0


def _labels(args: argparse.Namespace, read_labels: Any) -> tuple[dict[str, Any], str]:
    from gradewire.eval import load_run

    source = Path(args.labels)
    if source.is_dir():
        other = load_run(source)
        key = args.labels_grader or args.grader
        if key not in other.spec_hashes:
            raise GradewireError(
                f"run {other.name} has no grader {key!r} to compare with; it has: "
                f"{', '.join(other.graders)} (choose one with --labels-grader)"
            )
        return dict(other.scores(key)), f"grader {key!r} of run {other.name}"
    if args.labels_grader is not None:
        raise GradewireError("--labels-grader is for a LABELS run folder, not a labels file")
    return read_labels(source), str(source)
