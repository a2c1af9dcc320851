"""The eval runner: grade samples concurrently, append each result as it lands, resume.

Each sample runs the graders it still needs concurrently; at most ``concurrency`` samples
are in flight. A result line is written as soon as a sample's graders are done, so an
interrupted or killed run keeps everything graded so far. The first SIGINT (Ctrl-C) stops
starting samples and lets those in flight finish (their judge calls are paid for); a
second one abandons them.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

from gradewire.core import BaseGrader, InvalidInputError
from gradewire.eval.grading._outcomes import grade_outcome, spec_hash
from gradewire.eval.runs._folder import ResultsWriter, read_lines
from gradewire.eval.runs._records import GradeOutcome
from gradewire.eval.runs._samples import EvalSample

__all__ = ["EvalDisplay", "GradingReport", "GradingStep", "grade_samples", "plan", "start_grading"]


class EvalDisplay(Protocol):
    """What the runner tells a progress display (`RichDisplay` is the built-in one)."""

    def start(self, total: int, graders: Sequence[str], skipped: int) -> None:
        """Grading starts: ``total`` samples need grading, ``skipped`` were already done."""

    def outcome(self, grader: str, outcome: GradeOutcome) -> None:
        """One grader finished one sample."""

    def sample_done(self) -> None:
        """One sample's line was written."""

    def stopping(self, in_flight: int) -> None:
        """Ctrl-C was pressed: no new samples start; ``in_flight`` are finishing."""

    def stop(self) -> None:
        """Grading is over (finished or interrupted)."""


@dataclass(frozen=True)
class GradingReport:
    """What one invocation of the runner did.

    Attributes:
        graded: Samples graded now (by at least one grader).
        skipped: Samples every grader had already graded with its current spec.
        interrupted: Ctrl-C (or cancellation) stopped the run before the end.
        abandoned: Samples in flight that a second Ctrl-C abandoned (not written).
    """

    graded: int
    skipped: int
    interrupted: bool
    abandoned: int


def plan(
    samples: Sequence[EvalSample],
    hashes: Mapping[str, str],
    folder: Path,
    *,
    retry_errors: bool,
) -> list[tuple[EvalSample, tuple[str, ...]]]:
    """Which graders each sample still needs, from the folder's results.

    A grader is re-run on a sample when it has no outcome there, when its latest
    outcome's spec or the input that outcome graded differs from now (whatever other
    graders did since), or (with ``retry_errors``) when that outcome was an error. Only
    the graders done are kept per sample while the results are read, not the results.
    """
    position = {sample.id: index for index, sample in enumerate(samples)}
    # The graders done per sample; samples in the same state share one tuple of keys.
    done: list[tuple[str, ...]] = [()] * len(samples)
    shared: dict[tuple[str, ...], tuple[str, ...]] = {(): ()}
    for line in read_lines(folder):
        index = position.get(line.id)
        if index is None:
            continue
        wanted = samples[index].input_hash
        fresh = set(done[index])
        for key, outcome in line.outcomes.items():
            if (
                hashes.get(key) == outcome.spec_hash
                and outcome.input_hash == wanted
                and not (retry_errors and outcome.status == "error")
            ):
                fresh.add(key)
            else:
                fresh.discard(key)
        state = tuple(key for key in hashes if key in fresh)
        done[index] = shared.setdefault(state, state)
    del position
    todo = []
    for sample, graded in zip(samples, done, strict=True):
        needed = tuple(key for key in hashes if key not in graded)
        if needed:
            todo.append((sample, shared.setdefault(needed, needed)))
    return todo


class GradingStep(NamedTuple):
    """What a grading step starts from (`start_grading`), whichever engine grades.

    Attributes:
        graders: The graders by key.
        hashes: Each grader's spec hash, written beside its outcomes for resumption.
        todo: The samples still to grade, each with the keys of the graders it needs.
        skipped: Samples every grader had already graded with its current spec.
        writer: The run folder's results file, open for appending.
    """

    graders: dict[str, BaseGrader]
    hashes: dict[str, str]
    todo: list[tuple[EvalSample, tuple[str, ...]]]
    skipped: int
    writer: ResultsWriter


def start_grading(
    samples: Sequence[EvalSample],
    graders: Sequence[BaseGrader],
    folder: Path,
    *,
    concurrency: int,
    retry_errors: bool,
    display: EvalDisplay | None,
) -> GradingStep:
    """Check the options, plan what the folder lacks, tell the display, open the results."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise InvalidInputError(f"concurrency must be a positive int, not {concurrency!r}")
    by_key = {grader.grader_key: grader for grader in graders}
    hashes = {key: spec_hash(grader) for key, grader in by_key.items()}
    todo = plan(samples, hashes, folder, retry_errors=retry_errors)
    skipped = len(samples) - len(todo)
    if display is not None:
        display.start(len(todo), list(by_key), skipped)
    return GradingStep(by_key, hashes, todo, skipped, ResultsWriter(folder))


async def grade_samples(
    samples: Sequence[EvalSample],
    graders: Sequence[BaseGrader],
    folder: Path,
    *,
    concurrency: int = 32,
    retry_errors: bool = False,
    display: EvalDisplay | None = None,
    timeout: float | None = None,
) -> GradingReport:
    """Grade what the folder does not hold yet and append the results to it.

    ``timeout`` is the seconds one grade may take, for graders that set none of their own.
    """
    by_key, hashes, todo, skipped, writer = start_grading(
        samples,
        graders,
        folder,
        concurrency=concurrency,
        retry_errors=retry_errors,
        display=display,
    )
    stop = asyncio.Event()
    pending: Iterator[tuple[EvalSample, tuple[str, ...]]] = iter(todo)
    in_flight = 0
    graded = 0

    async def one(sample: EvalSample, keys: tuple[str, ...]) -> None:
        nonlocal graded
        results = await asyncio.gather(
            *(
                grade_outcome(
                    by_key[key],
                    sample.thread,
                    hashes[key],
                    timeout,
                    input_hash=sample.input_hash,
                )
                for key in keys
            )
        )
        outcomes = dict(zip(keys, results, strict=True))
        writer.write(sample.id, sample.input_hash, sample.thread.to_dict(), outcomes)
        graded += 1
        if display is not None:
            for key, outcome in outcomes.items():
                display.outcome(key, outcome)
            display.sample_done()

    async def worker() -> None:
        nonlocal in_flight
        # Workers share one iterator: at most `concurrency` samples are in flight.
        for sample, keys in pending:
            if stop.is_set():
                return
            in_flight += 1
            try:
                await one(sample, keys)
            finally:
                in_flight -= 1

    workers = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(todo)))]
    presses = 0
    abandoned = 0

    def interrupt() -> None:
        nonlocal presses, abandoned
        presses += 1
        stop.set()
        if presses == 1:
            if display is not None:
                display.stopping(in_flight)
            elif in_flight:
                # Without a display the wait would be silent: a blocked grader looks hung.
                print(
                    f"stopping: finishing the {in_flight} sample(s) in flight, keeping everything "
                    "graded; press Ctrl-C again to abandon them",
                    file=sys.stderr,
                )
        else:
            abandoned = in_flight
            for task in workers:
                task.cancel()

    try:
        with _on_sigint(interrupt):
            for task in workers:
                try:
                    await task
                except asyncio.CancelledError:
                    if not task.cancelled():
                        raise
    except asyncio.CancelledError:
        stop.set()
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        presses += 1
        raise
    finally:
        writer.close()
        if display is not None:
            display.stop()
    return GradingReport(graded, skipped, presses > 0, abandoned)


@contextlib.contextmanager
def _on_sigint(handler: object) -> Iterator[None]:
    """Route SIGINT to ``handler`` on the running loop while grading (main thread only)."""
    loop = asyncio.get_running_loop()
    installed = False
    if threading.current_thread() is threading.main_thread():
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, handler)  # type: ignore[arg-type]
            installed = True
    try:
        yield
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)
