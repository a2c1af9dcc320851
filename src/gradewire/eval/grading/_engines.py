"""Grading engines for eval runs: where the samples are graded, found through entry points.

The default is this process (`grade_samples`). An integration offers another engine under
the ``eval_engine`` kind of `gradewire.core._integrations` (``ray``): ``factory(**options)``
returns a `GradingEngine`, which `run_eval` calls in place of the local runner. The
run folder, resumption, statistics and report stay the runner's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from gradewire.core import BaseGrader, MissingDependencyError
from gradewire.core._integrations import integrations
from gradewire.eval.grading._grading_loop import EvalDisplay, GradingReport
from gradewire.eval.runs._samples import EvalSample

__all__ = ["GradingEngine", "eval_engine"]


class GradingEngine(Protocol):
    """Grades what a run folder lacks and appends the results, as `grade_samples` does.

    It reads the folder's results to skip what is graded (`plan`), appends one results
    line per sample as it lands (`ResultsWriter`), and reports what it did.
    """

    async def __call__(
        self,
        samples: Sequence[EvalSample],
        graders: Sequence[BaseGrader],
        folder: Path,
        *,
        concurrency: int = 32,
        retry_errors: bool = False,
        display: EvalDisplay | None = None,
        timeout: float | None = None,
    ) -> GradingReport:
        """Grade the samples into the folder.

        ``timeout`` (the default for graders that set none) is passed only when set, so
        an engine written before it existed still runs the rest.
        """


def eval_engine(name: str, **options: Any) -> GradingEngine:
    """The engine an installed integration offers under ``name``, built with ``options``.

    Raises:
        MissingDependencyError: No installed integration offers it (the message has the
            pip command of the extra of that name).
    """
    entry = integrations("eval_engine").get(name)
    if entry is not None:
        factory: Callable[..., GradingEngine] = entry.load()
        return factory(**options)
    raise MissingDependencyError(
        f"gradewire[{name}]", extra=name, purpose=f"grade evals with the {name} engine"
    )
