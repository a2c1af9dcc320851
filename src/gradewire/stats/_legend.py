"""What each agreement statistic means, in words a non-statistician follows.

One place for the names and explanations that the terminal text, the notebook view and
(later) the command line and HTML report show beside the numbers.
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["LABELS", "LEGEND"]

LABELS = MappingProxyType(
    {
        "n": "items compared",
        "raw_agreement": "raw agreement",
        "mean_absolute_difference": "mean |a − b|",
        "cohen_kappa": "Cohen's κ",
        "weighted_kappa_linear": "κ, linear weights",
        "weighted_kappa_quadratic": "κ, quadratic weights",
        "krippendorff_alpha": "Krippendorff's α",
        "pearson": "Pearson's r",
        "spearman": "Spearman's ρ",
    }
)
"""Short display names of the statistics."""

LEGEND = MappingProxyType(
    {
        "n": "Items that at least two raters labelled; only these are compared.",
        "raw_agreement": (
            "Share of items where the raters gave the same label (on an interval scale: "
            "within the tolerance). Easy to read, but flattered by chance: two raters who "
            "each say 'yes' 90% of the time agree on 82% of items by luck alone."
        ),
        "mean_absolute_difference": (
            "Average distance between the two scores of an item, in the scale's own units; "
            "0 means identical scores."
        ),
        "cohen_kappa": (
            "Agreement beyond what chance alone would give: 1 is perfect, 0 is what two "
            "raters labelling at random at their own rates would reach, below 0 is worse "
            "than chance. Every disagreement counts the same."
        ),
        "weighted_kappa_linear": (
            "κ for ordered labels, where a near miss counts as partial agreement: a "
            "disagreement costs as many points as the labels are steps apart."
        ),
        "weighted_kappa_quadratic": (
            "κ for ordered labels where a disagreement costs the square of the steps "
            "between the labels, so large disagreements weigh most; close to a correlation."
        ),
        "krippendorff_alpha": (
            "Agreement beyond chance for any number of raters, with missing labels allowed, "
            "at the scale's level of measurement: 1 is perfect, 0 is chance. A common rule "
            "of thumb (Krippendorff 2004): 0.8 or more is reliable, 0.667 to 0.8 tentative."
        ),
        "pearson": (
            "How closely one rater's scores follow the other's along a straight line: 1 is "
            "perfect, 0 is no linear relation. Blind to a constant offset or scale: a judge "
            "that adds 1 to every score still gets 1."
        ),
        "spearman": (
            "Whether the raters put the items in the same order (Pearson's r of the ranks): "
            "1 is the same order, 0 is unrelated, -1 reversed."
        ),
    }
)
"""Plain-words explanation of each statistic."""
