"""Statistics of judges: agreement with people, and intervals that include the judge's error.

`agreement` measures how far raters (a judge and people, or two judges) agree on the same
items: raw agreement, Cohen's κ (weighted for ordered labels), Krippendorff's α,
correlations, each with a bootstrap interval, the confusion matrix and the disagreements.
`ppi_mean_interval` estimates a judged grader's mean with prediction-powered inference: the
judge's mean over every sample, corrected by how the judge differs from people on a small
labelled subset, with an interval that includes the judge's error; `ppi_mean_difference`
does the same for the difference of two runs on the same samples.

This folder imports only `gradewire.core` and numpy.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.stats._agreement import agreement as agreement
    from gradewire.stats._agreement_result import Agreement as Agreement
    from gradewire.stats._ppi import ppi_mean_difference as ppi_mean_difference
    from gradewire.stats._ppi import ppi_mean_interval as ppi_mean_interval
    from gradewire.stats._ppi_result import MeanInterval as MeanInterval
    from gradewire.stats._ppi_result import PPIInterval as PPIInterval

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
