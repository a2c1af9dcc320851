"""How ``gradewire eval`` ends: a line per grader that failed on samples, and the exit status.

The exit status is the command line's contract with scripts and CI (0 done; 1 more
samples with an error than ``--fail-on-error`` allows; 2 nothing graded; 3 logging to a
tracker failed; `EXIT_GRADER_FAILED` a grader failed; 130 interrupted), so it is decided
here, in one place, from the graded run: the grading itself never exits.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["EXIT_GRADER_FAILED", "eval_exit_status", "fail_on_error_status", "failing_graders"]

EXIT_GRADER_FAILED = 4
"""The exit status when a grader scored no sample, or failed on more than --max-error-rate.

The others: 0 done; 1 more samples with an error than --fail-on-error allows; 2 bad
arguments, data, grader file or run folder (nothing graded); 3 logging to a tracker
failed (the run folder is complete); 130 interrupted (Ctrl-C).
"""


def failing_graders(result: Any, max_error_rate: float | None) -> list[str]:
    """Print one line per grader that failed on some sample; return those that fail the run.

    A grader fails the run when it scored no sample although it graded some (every one an
    error or an abstention), or when its errors exceed ``max_error_rate`` of the samples
    it graded.
    """
    from gradewire.eval.reporting._terminal import terminal_safe

    failing: list[str] = []
    for s in result.summaries:
        graded = s.n + s.errors + s.abstained
        if graded == 0 or (s.errors == 0 and s.n > 0):
            continue
        none_scored = s.n == 0
        over = max_error_rate is not None and s.errors / graded > max_error_rate
        kinds = ", ".join(f"{kind} {count}" for kind, count in s.error_kinds.items())
        parts = []
        if s.errors:
            parts.append(f"failed on {s.errors} of {graded} sample(s) ({kinds})")
        if s.abstained:
            parts.append(f"abstained on {s.abstained}")
        first = s.first_error or _first_abstention(result.run, s.grader) or ""
        first = first.strip().splitlines()[0][:300] if first.strip() else ""
        verdict = ""
        if none_scored:
            verdict = "; it scored no sample"
        elif over:
            verdict = f"; more than --max-error-rate {max_error_rate:g} allows"
        print(
            f"gradewire eval: grader {terminal_safe(repr(s.grader))} "
            + " and ".join(parts)
            + verdict
            + (f"; first: {terminal_safe(first)}" if first else ""),
            file=sys.stderr,
        )
        if none_scored or over:
            failing.append(s.grader)
    if failing:
        print(
            f"gradewire eval: exit {EXIT_GRADER_FAILED}: {len(failing)} grader(s) failed "
            f"({terminal_safe(', '.join(failing))}); the run folder is kept as it is: fix the "
            "cause and run the same command again (--retry-errors grades the errors again)",
            file=sys.stderr,
        )
    return failing


def _first_abstention(run: Any, key: str) -> str | None:
    for record in run.records:
        outcome = run.outcome(record, key)
        if outcome is not None and outcome.status == "abstained":
            return f"abstained: {outcome.message or ''}"
    return None


def fail_on_error_status(threshold: tuple[str, float] | None, errors: int, total: int) -> int:
    """1 when more samples had a grader error than ``--fail-on-error`` allows, else 0."""
    if threshold is None or errors == 0:
        return 0
    kind, limit = threshold
    over = errors > limit if kind == "count" else errors / max(total, 1) > limit
    if over:
        allowed = f"{int(limit)} sample(s)" if kind == "count" else f"{limit:.2%} of the samples"
        print(
            f"gradewire eval: {errors} of {total} sample(s) had a grader error, more than "
            f"--fail-on-error allows ({allowed})",
            file=sys.stderr,
        )
        return 1
    return 0


def eval_exit_status(
    result: Any,
    *,
    failing: Sequence[str],
    failed_logging: Sequence[str],
    fail_on_error: tuple[str, float] | None,
    out: Path,
) -> int:
    """The exit status of a graded run, with the line that explains it on standard error.

    In this order: a tracker that failed (3, or `EXIT_GRADER_FAILED` when a grader failed
    too), a grader that failed, an interruption (130), then ``--fail-on-error``.
    """
    from gradewire.eval.reporting._terminal import terminal_safe

    if failed_logging:
        print(
            f"gradewire eval: logging the run failed: {terminal_safe('; '.join(failed_logging))}"
            f". The run folder {terminal_safe(out)} is complete (results, summary, report); run "
            "the same command again to log it (nothing is graded again)",
            file=sys.stderr,
        )
        return EXIT_GRADER_FAILED if failing else 3
    if failing:
        return EXIT_GRADER_FAILED
    if result.outcome.interrupted:
        print(
            f"interrupted: {result.outcome.graded} sample(s) graded and kept; run the same "
            "command again to resume",
            file=sys.stderr,
        )
        return 130
    return fail_on_error_status(fail_on_error, result.error_samples, len(result.run.records))
