"""A metric over training steps, from logged steps or a DataFrame of them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gradewire.core import InvalidInputError, InvalidTypeError
from gradewire.plot._matplotlib import axes_for
from gradewire.sinks._history_view import plotted_keys
from gradewire.sinks._step_history import StepHistory

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

__all__ = ["plot_steps"]


def plot_steps(
    source: StepHistory | pd.DataFrame,
    keys: str | Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
) -> Axes:
    """Draw metrics over steps: one line with markers per key.

    Args:
        source: Logged steps (a `MemorySink`, a `JsonlRun` from `read_jsonl`) or a
            DataFrame with a ``step`` column and a column per key (what their
            ``to_pandas()`` gives).
        keys: The metrics to draw; None draws the score means (``score/mean`` and every
            ``<grader>/score/mean``), else every ``.../mean``.
        ax: The Axes to draw on; None draws on a new figure.

    Returns:
        The Axes drawn on.

    Raises:
        InvalidInputError: A key was never logged, or there is nothing to draw.
        InvalidTypeError: ``source`` is neither logged steps nor a DataFrame.
        MissingDependencyError: matplotlib is not installed (``gradewire[plot]``).
    """
    chosen = [keys] if isinstance(keys, str) else None if keys is None else list(keys)
    if isinstance(source, StepHistory):
        names = chosen if chosen is not None else plotted_keys(source.steps)
        series = {key: source.metric(key) for key in names}
    elif hasattr(source, "columns") and hasattr(source, "__getitem__"):
        if "step" not in source.columns:
            raise InvalidInputError(
                f"the DataFrame has no 'step' column (columns: {list(source.columns)}); pass "
                "the output of to_pandas() of a MemorySink or JsonlRun"
            )
        names = chosen if chosen is not None else _mean_columns(list(source.columns))
        missing = [k for k in names if k not in source.columns]
        if missing:
            raise InvalidInputError(f"no column {missing}; the columns are {list(source.columns)}")
        series = {
            key: [
                (int(s), float(v))
                for s, v in zip(source["step"], source[key], strict=True)
                if math.isfinite(float(v))
            ]
            for key in names
        }
    else:
        raise InvalidTypeError(
            f"plot_steps takes logged steps (MemorySink, JsonlRun) or a DataFrame, not "
            f"{type(source).__name__}"
        )
    unlogged = [key for key, points in series.items() if not points]
    if unlogged or not series:
        raise InvalidInputError(
            f"nothing to draw for {unlogged or 'the score means'}: pass keys= with metrics "
            "that were logged (e.g. 'score/mean')"
        )
    axes = axes_for(ax, "plot metrics over steps", figsize=(6, 3))
    for key, points in series.items():
        axes.plot([s for s, _ in points], [v for _, v in points], marker="o", label=key)
    axes.set_xlabel("step")
    axes.set_ylabel(names[0] if len(names) == 1 else "value")
    if len(names) > 1:
        axes.legend()
    return axes


def _mean_columns(columns: list[str]) -> list[str]:
    scores = [c for c in columns if c == "score/mean" or c.endswith("/score/mean")]
    return scores or [c for c in columns if c.endswith("/mean")]
