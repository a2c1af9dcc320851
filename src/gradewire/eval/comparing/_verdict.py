"""A comparison in words: the verdict per grader, and what each statistic means.

The verdict comes first in every compare output (terminal, JSON, HTML, trackers), for a
reader who is not a statistician: which run is better on which grader and by how much,
with the interval and the number of pairs, and whether chance explains it; or, when it
does not tell, which differences the run was too small to see. The words are plain
text holding a grader key: each output escapes it as it renders.
"""

from __future__ import annotations

import math

from gradewire.eval.comparing._paired_difference import FEW_CLUSTERS
from gradewire.eval.comparing._results import GraderComparison

__all__ = ["EXPLANATIONS", "explain", "format_difference", "format_p", "verdict"]

# One line per statistic, shown by ``--explain``, as the HTML report's legend and as the
# tooltip of each column.
EXPLANATIONS: dict[str, str] = {
    "verdict": (
        "the comparison in words: which run scored higher on the grader, by how much, "
        "and whether chance is a likely explanation"
    ),
    "pairs": (
        "samples that both runs scored: every statistic compares the two runs on these "
        "same questions"
    ),
    "mean A / mean B": "each run's average score over the pairs",
    "B − A": (
        "how much higher run B scored on average; for graders scoring within 0 to 1 it "
        "is read in points (0.095 = 9.5 points)"
    ),
    "interval": (
        "the range of true differences consistent with the data at the stated level "
        "(95%: such intervals contain the true difference 95 times in 100); an interval "
        "that excludes 0 means B and A really differ"
    ),
    "p": (
        "how often a difference at least this large would appear by chance if the runs "
        "were equally good; below 0.05 exactly when the 95% interval excludes 0"
    ),
    "p (Holm)": (
        "p corrected for comparing several graders at once (Holm's method): the chance "
        "that any of them shows a difference by luck stays below the level"
    ),
    "detectable": (
        "the smallest true difference this many pairs would find 8 times in 10 (80% "
        "power); smaller differences can exist unseen"
    ),
    "method": (
        "the one procedure behind both the interval and p: McNemar's test with Tango's "
        "interval for 0/1 graders, the paired bootstrap (BCa: bias-corrected and "
        "accelerated, resampling the pairs) for others; clustered ones treat samples "
        "sharing a topic as one unit"
    ),
    "W/T/L": (
        "wins/ties/losses: pairs where B scored higher, the same, or lower than A, "
        "whatever the size of the change"
    ),
    "std. error": "the paired standard error of B − A (cluster-robust with clusters)",
}


def explain() -> str:
    """Every statistic's meaning, one per line (``gradewire compare --explain``)."""
    width = max(len(name) for name in EXPLANATIONS)
    return "\n".join(f"{name:<{width}}  {text}" for name, text in EXPLANATIONS.items())


def format_difference(value: float, points: bool, signed: bool = False) -> str:
    """A difference as the verdict writes it: points (one decimal) or score units."""
    if not math.isfinite(value):
        return "–"
    shown = value * 100.0 if points else value
    digits = 1 if points else _digits(shown)
    text = f"{shown:+.{digits}f}" if signed else f"{shown:.{digits}f}"
    return text.replace("-", "−")


def _digits(value: float) -> int:
    magnitude = abs(value)
    if magnitude == 0.0 or magnitude >= 10:
        return 2
    return max(2, 2 - math.floor(math.log10(magnitude)))


def format_p(p: float, alpha: float = 0.05) -> str:
    """``p = 0.032``, ``p < 0.001``: never rounded onto the level from either side."""
    if not math.isfinite(p):
        return "p –"
    if p < 0.001:
        return "p < 0.001"
    for digits in (2, 3, 4, 6) if p >= 0.1 else (3, 4, 6):
        text = f"{p:.{digits}f}"
        if (float(text) < alpha) == (p < alpha) and float(text) != alpha:
            return f"p = {text}"
    return f"p = {p:.6f}"


def verdict(result: GraderComparison, n_graders: int = 1) -> str:
    """The grader's comparison in one or two plain sentences.

    Args:
        result: The grader's comparison.
        n_graders: How many graders were compared (their Holm correction is mentioned
            when it changes the conclusion).
    """
    r = result
    name = r.grader
    unit = " points" if r.points else ""
    level = f"{r.confidence:.0%}"
    alpha = 1.0 - r.confidence
    if r.n_pairs < 2 or not math.isfinite(r.p_value):
        reason = r.warnings[0] if r.warnings else f"{r.n_pairs} pair(s)"
        return f"not compared on {name}: {reason}."
    if r.wins == 0 and r.losses == 0:
        return (
            f"no difference on {name}: A and B gave every one of the {r.n_pairs} pairs "
            "the same score."
        )
    pairs = f"n = {r.n_pairs} pairs" + (
        f" in {r.n_clusters} clusters" if r.n_clusters is not None else ""
    )
    interval = (
        f"{format_difference(r.ci_low, r.points)} to {format_difference(r.ci_high, r.points)}{unit}"
    )
    if r.p_value < alpha:
        better, worse = ("B", "A") if r.diff > 0 else ("A", "B")
        text = (
            f"{better} is better than {worse} on {name} by "
            f"{format_difference(abs(r.diff), r.points)}{unit} ({level} interval {interval}; "
            f"{pairs}); this is unlikely to be chance ({format_p(r.p_value, alpha)})"
        )
        if n_graders > 1 and r.p_value_holm >= alpha:
            text += (
                f", though not once corrected for comparing {n_graders} graders "
                f"(Holm {format_p(r.p_value_holm, alpha)})"
            )
        text += "."
    else:
        text = (
            f"no detectable difference on {name}: the {level} interval {interval} "
            f"includes 0 ({pairs}, {format_p(r.p_value, alpha)})"
        )
        if math.isfinite(r.detectable):
            text += (
                f"; with this n a difference under ~"
                f"{format_difference(r.detectable, r.points)}{unit} would go unseen"
            )
        text += "."
    flipped = [s for s in r.slices if s.flips]
    if flipped and math.isfinite(r.diff) and r.diff != 0.0:
        shown = "; ".join(
            f"{s.value} {format_difference(s.diff, r.points, signed=True)}{unit}"
            + (
                f" ({level} interval {format_difference(s.ci_low, r.points)} to "
                f"{format_difference(s.ci_high, r.points)})"
                if math.isfinite(s.ci_low)
                else ""
            )
            for s in flipped
        )
        verb = "goes" if len(flipped) == 1 else "go"
        text += f" {len(flipped)} of {len(r.slices)} slices {verb} the other way: {shown}."
    for warning in r.warnings:
        text += f" Caution: {warning}."
    if r.n_clusters is not None and r.n_clusters < FEW_CLUSTERS and math.isfinite(r.naive_ci_low):
        text += (
            f" Without clustering the interval would be "
            f"{format_difference(r.naive_ci_low, r.points)} to "
            f"{format_difference(r.naive_ci_high, r.points)}{unit}, too narrow if samples "
            "of a cluster move together."
        )
    return text
