"""Plots with matplotlib: a metric over steps, a grader's histogram, a comparison's intervals.

Each function draws on the Axes it is given (or on a new figure's) and returns that Axes,
so a plot can be styled, combined with others, or saved. matplotlib is imported when a
plot is drawn, not with this package; without it the call says how to install it
(``pip install 'gradewire[plot]'``). The notebook views (``_repr_html_``) need none of
this: they draw inline SVG.

This folder draws what the stages below it hold: logged steps (`gradewire.sinks`), runs
and comparisons (`gradewire.eval`). Each name is imported when first used.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.plot._comparison_plot import plot_comparison as plot_comparison
    from gradewire.plot._histogram_plot import plot_histogram as plot_histogram
    from gradewire.plot._steps_plot import plot_steps as plot_steps

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
