"""Runs kept elsewhere than a run folder, found through entry points.

An integration may offer a reader as an ``eval_source`` (`gradewire.core._integrations`):
``reader(ref)`` returns the `EvalRun` that ``ref`` names (an MLflow run id, an Inspect AI
log), or None when ``ref`` is not one of its runs. The core never imports an integration
by name.

A reader whose extra is not installed (its entry point's module, or the reader itself,
raises `ImportError`) is skipped while a reference is being guessed, and remembered:
`open_run` names it (with its ``pip install``) only when nothing else reads the reference.

A reader makes grader keys out of the names a log uses (an Inspect scorer and the keys of
its dict values, an lm-eval metric and filter); two different names can make one key
(a scorer ``x/y`` and the key ``y`` of a scorer ``x``). `GraderKeys` refuses that, naming
both, where a dict would keep one grader silently.
"""

from __future__ import annotations

from collections.abc import Callable

from gradewire.core import InvalidInputError, MissingDependencyError
from gradewire.core._integrations import integrations
from gradewire.eval.runs._eval_run import EvalRun

__all__ = ["GraderKeys", "find_run", "find_run_or_missing"]


def find_run(ref: str) -> EvalRun | None:
    """The run an installed integration knows by ``ref`` (an MLflow run id), or None."""
    return find_run_or_missing(ref)[0]


def find_run_or_missing(ref: str) -> tuple[EvalRun | None, list[MissingDependencyError]]:
    """The run a reader knows by ``ref`` (or None), and the readers that could not run.

    A reader that cannot be imported, or that needs a package that is missing, is skipped
    (the second item says which, as `MissingDependencyError`s naming each extra), so one
    missing extra never stops another source from reading ``ref``.
    """
    missing: list[MissingDependencyError] = []
    for name, entry in integrations("eval_source").items():
        try:
            reader: Callable[[str], EvalRun | None] = entry.load()
            run = reader(ref)
        except MissingDependencyError as exc:
            missing.append(exc)
            continue
        except ImportError as exc:
            package = exc.name or name
            missing.append(MissingDependencyError(package, extra=name, purpose=f"read {name} runs"))
            continue
        if run is not None:
            return run, missing
    return None, missing


class GraderKeys:
    """The grader keys a reader made, each with the one source it was made from.

    Args:
        where: The log, for messages.
    """

    def __init__(self, where: str) -> None:
        self.where = where
        self._sources: dict[str, str] = {}

    def claim(self, key: str, source: str) -> str:
        """Record that ``source`` (in words, e.g. "scorer 'x/y'") makes ``key``; returns it.

        Raises:
            InvalidInputError: Another source already made ``key``.
        """
        other = self._sources.setdefault(key, source)
        if other != source:
            raise InvalidInputError(
                f"{self.where}: {other} and {source} both make the grader key {key!r}, so "
                "their scores would be mixed as one grader's; rename one of them in the log"
            )
        return key

    def source(self, key: str) -> str | None:
        """What made ``key``, or None."""
        return self._sources.get(key)
