"""``gradewire eval DATA --graders FILE``: grade a data set into a resumable run folder."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gradewire.cli._eval_failures import EXIT_GRADER_FAILED, eval_exit_status, failing_graders
from gradewire.cli._labels_key import labels_grader_key
from gradewire.cli._recorded_note import note_recorded_agreement
from gradewire.core import GradewireError

__all__ = [
    "EXIT_GRADER_FAILED",
    "add_eval_parser",
    "data_options",
    "parse_fail_on_error",
    "parse_rate",
    "run_eval_command",
    "sinks_for",
]

SINKS = ("mlflow", "wandb", "jsonl", "console")


def parse_rate(text: str) -> float:
    """A fraction between 0 and 1 (``--max-error-rate``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction (e.g. 0.05)") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r}: a rate is between 0 and 1 (e.g. 0.05)")
    return value


def parse_fail_on_error(text: str) -> tuple[str, float]:
    """``N`` (a count of samples) or ``FRACTION`` (between 0 and 1, with a point)."""
    try:
        if text.strip().isdigit():
            return "count", float(int(text))
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a count (e.g. 5) nor a fraction (e.g. 0.02)"
        ) from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a fraction is between 0 and 1 (e.g. 0.02); a count has no point (e.g. 5)"
        )
    return "fraction", value


def add_eval_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``eval`` subcommand."""
    parser = commands.add_parser(
        "eval",
        help="grade a data file into a run folder, with a live display (needs gradewire[eval])",
        description=(
            "Grade every sample of DATA (JSONL, CSV, Parquet, or a Hugging Face dataset "
            "saved with save_to_disk) with the graders of a grader file. Results are appended "
            "to OUT/results.jsonl as they land; running the same command again resumes, "
            "skipping what is already graded with the same grader specs. Ctrl-C stops "
            "starting samples and keeps everything graded (press it twice to abandon the "
            "samples in flight). Exit status: 0 done; 1 more samples with an error than "
            "--fail-on-error allows; 2 bad arguments, data, grader file or run folder "
            "(nothing graded); 3 logging to a tracker failed (the run folder is complete); "
            f"{EXIT_GRADER_FAILED} a grader scored no sample, or failed on more than "
            "--max-error-rate of them (the run folder is kept); 130 interrupted."
        ),
    )
    parser.add_argument(
        "data",
        type=Path,
        help="the eval data: .jsonl, .csv, .parquet, a dataset folder, an Inspect AI "
        "log (.eval/.json, with gradewire[inspect]) or an OpenAI Evals run's output items "
        "(.jsonl) to grade their samples again (for output items, a note says how each "
        "testing criterion agrees with the recorded results)",
    )
    parser.add_argument("--graders", type=Path, required=True, help="grader file (.toml or .json)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="run folder: new, empty, or a run to resume (default: ./gradewire-eval/<data name>)",
    )
    parser.add_argument(
        "--sink",
        action="append",
        choices=SINKS,
        default=[],
        help="also log the run to this tracker (repeatable): mlflow (traces with feedback), "
        "wandb (summary and a table), jsonl (OUT/logs.jsonl), console",
    )
    parser.add_argument(
        "--concurrency", type=int, default=32, help="samples in flight (default: 32)"
    )
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help="grade only the first N samples (the run still spans the whole data)",
    )
    parser.add_argument(
        "--cluster-key", default=None, help="metadata field to cluster standard errors by"
    )
    parser.add_argument(
        "--completion-key",
        default=None,
        metavar="FIELD",
        help="the field that holds the completion (default: completion), or a dotted path "
        "into an object field (sample.output_text); a row with no completion is a data "
        'error. OpenAI Evals rows ({"item": ..., "sample": ...}) are read as they are',
    )
    parser.add_argument(
        "--prompt-key",
        default=None,
        metavar="FIELD",
        help="the field that holds the prompt, a string or a list of messages (default: "
        "prompt; 'messages' reads messages as the prompt of a separate completion field), "
        "or a dotted path (item.question)",
    )
    parser.add_argument(
        "--allow-prompt-only",
        action="store_true",
        help="grade rows that have no completion (graders of the prompt alone)",
    )
    parser.add_argument(
        "--fail-on-error",
        type=parse_fail_on_error,
        default=None,
        metavar="N|FRACTION",
        help="exit 1 when more than N samples (or more than FRACTION of them) had a grader error",
    )
    parser.add_argument(
        "--max-error-rate",
        type=parse_rate,
        default=None,
        metavar="FRACTION",
        help=f"exit {EXIT_GRADER_FAILED} when a grader failed on more than FRACTION of the "
        f"samples it graded (e.g. 0.05). Whatever it is, a grader that scored no sample "
        f"(every one an error or an abstention) exits {EXIT_GRADER_FAILED}. The run folder "
        "is kept as it is; run again with --retry-errors once the cause is fixed",
    )
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="print the traceback of each grader's first error of a kind (by default one "
        "line: the error's type and message)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds one grade may take, for graders whose file sets no timeout; a grade "
        "that takes longer is given up and counted as a timeout (an error of its own kind), "
        "and grading goes on",
    )
    parser.add_argument(
        "--retry-errors",
        action="store_true",
        help="re-grade the outcomes that were errors (timeouts included)",
    )
    parser.add_argument(
        "--labels",
        type=Path,
        default=None,
        metavar="LABELS",
        help="human labels of a random subset of the samples (.jsonl/.csv of id, label): "
        "the judged mean is also given corrected by them (prediction-powered inference), "
        "beside the judge-only interval",
    )
    parser.add_argument(
        "--labels-grader",
        default=None,
        metavar="KEY",
        help="the grader the labels are of (default: the only grader of the file)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no live display")
    parser.add_argument(
        "--force",
        action="store_true",
        help="put the run in a folder that holds other files (never over a file gradewire "
        "did not write), or make a run of one data file the run of another",
    )
    parser.add_argument(
        "--engine",
        default="local",
        help="where the samples are graded: local (this process, the default) or ray "
        "(a Ray actor pool; needs gradewire[ray]); the run folder is the same",
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        help="with --engine ray: the Ray cluster to use (default: the running one, else a "
        "new local instance)",
    )


def sinks_for(names: Sequence[str], folder: Path) -> tuple[list[Any], list[Any]]:
    """(eval trackers, plain sinks) for the ``--sink`` names; trackers fail early if missing."""
    from gradewire.eval.reporting._trackers import eval_tracker
    from gradewire.sinks import ConsoleSink, JsonlSink, Sink

    trackers: list[Any] = []
    sinks: list[Sink] = []
    for name in dict.fromkeys(names):
        if name == "jsonl":
            sinks.append(JsonlSink(folder / "logs.jsonl"))
        elif name == "console":
            sinks.append(ConsoleSink())
        else:
            trackers.append(eval_tracker(name, folder))
    return trackers, sinks


def data_options(args: argparse.Namespace) -> dict[str, Any]:
    """The `DataOptions` that ``--completion-key``, ``--prompt-key``, ``--allow-prompt-only`` ask.

    Only those given, so that the defaults stay in one place.
    """
    options: dict[str, Any] = {}
    if args.completion_key is not None:
        options["completion_key"] = args.completion_key
    if args.prompt_key is not None:
        options["prompt_key"] = args.prompt_key
    if args.allow_prompt_only:
        options["allow_prompt_only"] = True
    return options


def run_eval_command(args: argparse.Namespace) -> int:
    """Run ``gradewire eval``; returns the exit code (see `EXIT_GRADER_FAILED`).

    Everything the run needs (the extras, the data, the run folder, the trackers) is
    checked before the first grade; a tracker that fails afterwards leaves the run folder
    complete, and the exit code says so (3).
    """
    from gradewire.eval import RichDisplay, run_eval
    from gradewire.eval.reporting._terminal import terminal_safe
    from gradewire.eval.reporting._trackers import log_run_to_sink
    from gradewire.specs import load_graders

    out: Path = args.out or Path("gradewire-eval") / (args.data.stem or "run")
    try:
        if args.concurrency < 1:
            raise GradewireError(f"--concurrency must be at least 1, not {args.concurrency}")
        if args.limit is not None and args.limit < 1:
            raise GradewireError(f"--limit must be at least 1, not {args.limit}")
        if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
            raise GradewireError(
                f"--timeout must be a positive number of seconds, not {args.timeout}"
            )
        engine = _engine(args)
        display = None if args.no_progress else RichDisplay()
        graders = load_graders(args.graders)
        labels = _labels(args, graders)
        trackers, sinks = sinks_for(args.sink, out)
        handler = _log_handler(display, traceback=getattr(args, "traceback", False))
        try:
            result = asyncio.run(
                run_eval(
                    args.data,
                    graders,
                    out,
                    concurrency=args.concurrency,
                    limit=args.limit,
                    retry_errors=args.retry_errors,
                    cluster_key=args.cluster_key,
                    display=display,
                    grader_file=str(args.graders),
                    engine=engine,
                    **data_options(args),
                    force=args.force,
                    timeout=args.timeout,
                )
            )
        finally:
            if handler is not None:
                logging.getLogger("gradewire").removeHandler(handler)
    except (GradewireError, OSError) as exc:
        print(f"gradewire eval: {terminal_safe(exc, multiline=True)}", file=sys.stderr)
        return 2
    if display is not None:
        print(file=sys.stderr)
    _print_summary(result)
    note_recorded_agreement(args.data, result)
    failing = failing_graders(result, getattr(args, "max_error_rate", None))
    if labels is not None:
        try:
            added = _print_ppi(result, *labels)
        except GradewireError as exc:
            print(
                f"gradewire eval: --labels: {terminal_safe(exc, multiline=True)}", file=sys.stderr
            )
            return 2
        # The trackers log the corrected mean with the run's other metrics.
        run = dataclasses.replace(result.run, added_metrics=added)
        result = dataclasses.replace(result, run=run)
    names = [name for name in dict.fromkeys(args.sink) if name not in ("jsonl", "console")]
    notes: list[str] = []
    failed: list[str] = []
    # The run folder (results, summary, report) is complete here: a tracker that fails
    # now loses nothing, and running the command again logs it without grading again.
    for name, tracker in zip(names, trackers, strict=True):
        try:
            notes.extend(tracker.log_run(result.run, result.summaries))
        except Exception as exc:  # any tracker failure: reported, never a traceback
            failed.append(f"{name} ({type(exc).__name__}: {exc})")
    for sink in sinks:
        try:
            log_run_to_sink(result.run, sink)
            sink.close()
        except Exception as exc:
            failed.append(f"{type(sink).__name__} ({type(exc).__name__}: {exc})")
    for line in notes:
        print(terminal_safe(line))
    report = terminal_safe(result.report.resolve())
    print(f"report: {report} (open it in a browser; it needs no network)")
    return eval_exit_status(
        result, failing=failing, failed_logging=failed, fail_on_error=args.fail_on_error, out=out
    )


def _labels(args: argparse.Namespace, graders: Sequence[Any]) -> tuple[str, Any] | None:
    """The grader ``--labels`` are of, and the labels (read before anything is graded)."""
    from gradewire.eval.auditing._run_agreement import read_labels

    if args.labels is None:
        if args.labels_grader is not None:
            raise GradewireError("--labels-grader goes with --labels")
        return None
    key = labels_grader_key(args.labels_grader, [g.grader_key for g in graders], "the grader file")
    return key, read_labels(args.labels)


def _print_ppi(result: Any, key: str, labels: dict[str, Any]) -> dict[str, float]:
    """The judged mean corrected by the labels, beside the judge-only interval."""
    from gradewire.eval.reporting._terminal import terminal_safe
    from gradewire.stats import ppi_mean_interval

    given = {k: v for k, v in labels.items() if v is not None}
    scores = result.run.scores(key)
    unknown = [k for k in given if k not in scores]
    if unknown:
        raise GradewireError(
            f"{len(unknown)} labelled sample(s) have no score of {key!r} in this run "
            f"({', '.join(map(repr, unknown[:5]))}); PPI needs the judge's score of every "
            "labelled sample (check the ids, or --retry-errors)"
        )
    ppi = ppi_mean_interval(scores, given)
    print()
    print(f"{terminal_safe(key)}, corrected by {ppi.n_labels} human labels:")
    print(terminal_safe(str(ppi), multiline=True))
    return _record_ppi(result, key, ppi)


def _record_ppi(result: Any, key: str, ppi: Any) -> dict[str, float]:
    """Put the labels-corrected mean in summary.json; return its metrics for the trackers.

    ``summary.json`` gets ``ppi`` (per grader: `PPIInterval.to_dict`, the method named);
    the metrics are ``<key>/ppi/mean``, ``/ci_low``, ``/ci_high``, ``/labels``.
    """
    import json

    from gradewire.eval.runs._folder import SUMMARY, write_json

    figures = {key: _finite(value) for key, value in ppi.to_dict().items()}
    figures["method_name"] = (
        f"prediction-powered inference ({ppi.method}, Angelopoulos et al. 2023), "
        f"{ppi.interval_form} interval"
    )
    metrics = {
        f"{key}/ppi/mean": ppi.estimate,
        f"{key}/ppi/ci_low": ppi.low,
        f"{key}/ppi/ci_high": ppi.high,
        f"{key}/ppi/labels": float(ppi.n_labels),
    }
    path = result.run.folder / SUMMARY
    summary = json.loads(path.read_text(encoding="utf-8"))
    summary.setdefault("ppi", {})[key] = figures
    summary.setdefault("metrics", {}).update(metrics)
    write_json(path, summary)
    return metrics


def _finite(value: Any) -> Any:
    """A value as strict JSON holds it: a non-finite float as None (inside lists too)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _engine(args: argparse.Namespace) -> Any:
    """The grading engine of ``--engine`` (None: this process)."""
    from gradewire.eval.grading._engines import eval_engine

    if args.engine == "local":
        if args.ray_address is not None:
            raise GradewireError("--ray-address needs --engine ray")
        return None
    options = {"address": args.ray_address} if args.engine == "ray" else {}
    return eval_engine(args.engine, **options)


def _log_handler(display: Any, *, traceback: bool = False) -> logging.Handler:
    """Grader warnings on standard error (above the live display), control characters escaped.

    A warning can quote a failing sample's text, or a judge's error text. Without
    ``traceback`` a warning is its message alone: a judge server that is down would
    otherwise print a screenful of traceback at its first failure (the message names the
    error; the summary's line per grader counts them).
    """
    from gradewire.eval.reporting._terminal import TerminalSafeFormatter

    handler: logging.Handler
    if display is None:
        handler = logging.StreamHandler(sys.stderr)
    else:
        from rich.logging import RichHandler

        handler = RichHandler(
            console=display._console, show_path=False, rich_tracebacks=False, markup=False
        )
    handler.setFormatter(TerminalSafeFormatter() if traceback else _OneLineFormatter())
    handler.setLevel(logging.WARNING)
    logging.getLogger("gradewire").addHandler(handler)
    return handler


class _OneLineFormatter(logging.Formatter):
    """A log record's message alone (no traceback), control characters escaped."""

    def format(self, record: logging.LogRecord) -> str:
        from gradewire.eval.reporting._terminal import terminal_safe

        text = record.getMessage()
        if record.exc_info:
            text += " (--traceback prints its traceback)"
        return terminal_safe(text, multiline=True)


def _print_summary(result: Any) -> None:
    from gradewire.eval.reporting._terminal import terminal_safe

    summaries = result.summaries
    # Timeouts are among the errors; their column shows when there is one.
    timeouts = any(s.timeouts for s in summaries)
    passes = any(s.passed is not None for s in summaries)
    head: tuple[str, ...] = ("grader", "n", "mean", "std. error", "95% interval", "method")
    if passes:
        head += ("pass rate", "95% interval")
    head += ("errors", "abstained")
    rows: list[tuple[str, ...]] = [(*head, "timeouts") if timeouts else head]
    for s in summaries:
        row: tuple[str, ...] = (
            terminal_safe(s.grader),
            str(s.n),
            _f(s.mean),
            _f(s.stderr),
            f"[{_f(s.ci_low)}, {_f(s.ci_high)}]",
            s.method_name + ("*" if s.caveat else ""),
        )
        if passes:
            if s.passed is None:
                row += ("–", "")
            else:
                row += (
                    f"{_f(s.pass_rate)} ({s.passed}/{s.pass_n})",
                    f"[{_f(s.pass_low)}, {_f(s.pass_high)}]",
                )
        row += (str(s.errors), str(s.abstained))
        rows.append((*row, str(s.timeouts)) if timeouts else row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(
                cell.ljust(w) if i == 0 or rows[0][i] == "method" else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
        )
    for s in summaries:
        if s.caveat:
            print(f"* {terminal_safe(s.grader)}: {terminal_safe(s.caveat)}")
    if passes:
        methods = {s.pass_method for s in summaries if s.pass_method}
        from gradewire.stats._mean_interval import METHOD_NAMES

        named = ", ".join(METHOD_NAMES.get(m, m) for m in sorted(m for m in methods if m))
        print(f"pass rate: the share of scored samples that passed the grader's rule ({named})")
    run = result.run
    if run.samples_in_data is not None and len(run.records) < run.samples_in_data:
        print(
            f"{len(run.records)} of the data's {run.samples_in_data} samples are graded in "
            "this folder; run the same command again (without --limit) to grade the rest"
        )
    clustered = [s for s in summaries if s.n_clusters is not None]
    if clustered:
        print(
            f"standard errors clustered by {terminal_safe(repr(run.cluster_key))} "
            f"({clustered[0].n_clusters} clusters)"
        )


def _f(value: float) -> str:
    return "–" if not math.isfinite(value) else f"{value:.4f}"
