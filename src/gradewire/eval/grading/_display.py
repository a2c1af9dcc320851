"""The live progress display of `gradewire eval`, drawn with rich.

One bar for the samples (done/total, rate, ETA) and a line per grader with its running
mean and its error and abstention counts. rich redraws from its own thread a few times a
second; the runner only bumps counters, so the display costs the grading loop nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gradewire.core import MissingDependencyError
from gradewire.eval.reporting._terminal import terminal_safe
from gradewire.eval.runs._records import GradeOutcome

__all__ = ["RichDisplay"]


@dataclass
class _Tally:
    scored: int = 0
    total: float = 0.0
    errors: int = 0
    abstained: int = 0


class RichDisplay:
    """A rich live display of an eval's progress (needs ``gradewire[eval]``)."""

    def __init__(self, *, console: Any = None, refresh_per_second: float = 4.0) -> None:
        """Set up the display.

        Args:
            console: A ``rich.console.Console`` to draw on (default: standard error).
            refresh_per_second: How often rich redraws.

        Raises:
            MissingDependencyError: rich is not installed.
        """
        try:
            from rich.console import Console
        except ImportError:
            raise MissingDependencyError(
                "rich", extra="eval", purpose="show the progress of gradewire eval"
            ) from None
        self._console = console if console is not None else Console(stderr=True)
        self._refresh = refresh_per_second
        self._tallies: dict[str, _Tally] = {}
        self._live: Any = None
        self._progress: Any = None
        self._task: Any = None
        self._note = ""

    def start(self, total: int, graders: Sequence[str], skipped: int) -> None:
        """Start drawing."""
        from rich.live import Live
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._tallies = {key: _Tally() for key in graders}
        self._progress = Progress(
            TextColumn("grading"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self._console,
        )
        self._task = self._progress.add_task("grading", total=total, rate="")
        if skipped:
            self._note = f"{skipped} sample(s) already graded in this folder: skipped"
        self._live = Live(
            _Renderable(self),
            console=self._console,
            refresh_per_second=self._refresh,
            transient=False,
        )
        self._live.start()

    def outcome(self, grader: str, outcome: GradeOutcome) -> None:
        """Count one grader's outcome."""
        tally = self._tallies.setdefault(grader, _Tally())
        if outcome.status == "ok" and outcome.value is not None:
            tally.scored += 1
            tally.total += outcome.value
        elif outcome.status == "error":
            tally.errors += 1
        else:
            tally.abstained += 1

    def sample_done(self) -> None:
        """Advance the bar by one sample."""
        self._progress.advance(self._task)

    def stopping(self, in_flight: int) -> None:
        """Say that Ctrl-C was seen."""
        self._note = (
            f"stopping: finishing the {in_flight} sample(s) in flight, keeping everything "
            "graded; press Ctrl-C again to abandon them"
        )

    def stop(self) -> None:
        """Draw the final state and stop."""
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None

    def _table(self) -> Any:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        task = self._progress.tasks[0]
        speed = task.finished_speed or task.speed
        self._progress.update(self._task, rate=f"{speed:.1f}/s" if speed else "")
        table = Table(box=None, pad_edge=False, show_edge=False)
        for name, justify in (
            ("grader", "left"),
            ("scored", "right"),
            ("mean", "right"),
            ("errors", "right"),
            ("abstained", "right"),
        ):
            table.add_column(name, justify=justify)  # type: ignore[arg-type]
        for key, tally in self._tallies.items():
            mean = tally.total / tally.scored if tally.scored else math.nan
            table.add_row(
                # Plain text, control characters escaped: a key is not rich markup.
                Text(terminal_safe(key)),
                str(tally.scored),
                "–" if math.isnan(mean) else f"{mean:.4f}",
                f"[red]{tally.errors}[/red]" if tally.errors else "0",
                str(tally.abstained),
            )
        parts: list[Any] = [self._progress, table]
        if self._note:
            parts.append(Text(self._note))
        return Group(*parts)


class _Renderable:
    """Rebuilt on every refresh, so the table always shows the current counters."""

    def __init__(self, display: RichDisplay) -> None:
        self._display = display

    def __rich__(self) -> Any:
        return self._display._table()
