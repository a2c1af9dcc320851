"""matplotlib, imported when a plot is drawn: the Axes to draw on, or a clear install hint."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradewire.core import MissingDependencyError

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["axes_for"]


def axes_for(ax: Axes | None, purpose: str, **figure: Any) -> Axes:
    """``ax``, or the Axes of a new figure (``figure`` passed to ``pyplot.subplots``).

    Raises:
        MissingDependencyError: matplotlib is not installed.
    """
    try:
        from matplotlib import pyplot
    except ImportError:
        raise MissingDependencyError("matplotlib", extra="plot", purpose=purpose) from None
    if ax is not None:
        return ax
    new: Axes = pyplot.subplots(**figure)[1]
    return new
