"""A comparison in words: the verdict per grader, and what each statistic means.

The verdict comes first in every compare output (terminal, JSON, HTML, trackers), for a
reader who is not a statistician: which run is better on which grader and by how much,
with the interval and the number of pairs, and whether chance explains it; or, when it
does not tell, which differences the run was too small to see. The words are plain
text holding a grader key: each output escapes it as it renders.
"""

from __future__ import annotations

import math

from gradewire.eval.comparing._paired_difference import (
    BINARY,
    CLUSTERED,
    FEW_CLUSTERS,
    NO_PAIR_DIFFERS,
    PAIRED_T,
)
from gradewire.eval.comparing._results import GraderComparison

__all__ = ["EXPLANATIONS", "explain", "format_difference", "format_p", "method_label", "verdict"]

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
        "the one method behind both the interval and p: for 0/1 graders the mid-p "
        "McNemar test (on the pairs where the runs differ) with Tango's score interval; "
        "for other graders the paired t test and interval; with a cluster key, a t "
        "interval with the cluster-robust CR2 standard error and Bell–McCaffrey degrees "
        "of freedom, which treats samples sharing a source (a document, an epoch) as "
        "one unit and stays honest with few clusters by being wide"
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
    if abs(shown) >= 1e6:
        # Scores of any magnitude are allowed: huge ones in scientific notation.
        text = f"{shown:+.4g}" if signed else f"{shown:.4g}"
        return text.replace("-", "−")
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


def method_label(result: GraderComparison) -> str:
    """The method of a grader's p-value in a few words: ``mid-p McNemar test``, ``paired t``."""
    if result.method == BINARY:
        return "mid-p McNemar test"
    if result.method == PAIRED_T:
        return f"paired t test, {result.dof:.0f} df"
    if result.method == CLUSTERED:
        return f"cluster-robust CR2 t test, {result.dof:.1f} df"
    if result.method == NO_PAIR_DIFFERS:
        return "no pair differs"
    return result.method


def _span(low: float, high: float, points: bool, unit: str, sign: float) -> str:
    """An interval of B − A (``sign`` 1) or of A − B (``sign`` -1), lower end first."""
    ends = sorted((sign * low, sign * high))
    return f"{format_difference(ends[0], points)} to {format_difference(ends[1], points)}{unit}"


def verdict(result: GraderComparison, n_graders: int = 1) -> str:
    """The grader's comparison in one or two plain sentences.

    Each sentence reads in one direction: "A is better than B by 25 points" gives the
    interval of A − B; otherwise differences and intervals are B − A, signed.

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
    if r.n_pairs < 2:
        reason = r.warnings[0] if r.warnings else f"{r.n_pairs} pair(s)"
        return f"not compared on {name}: {reason}."
    pairs = f"n = {r.n_pairs} pairs" + (
        f" in {r.n_clusters} clusters" if r.n_clusters is not None else ""
    )
    test = f"{method_label(r)}, {format_p(r.p_value, alpha)}"
    sign = 1.0
    if r.wins == 0 and r.losses == 0:
        text = (
            f"no difference on {name}: A and B gave every one of the {r.n_pairs} pairs the "
            "same score"
        )
        if math.isfinite(r.ci_low):
            text += (
                f"; still, {r.n_pairs} pairs cannot rule out a true difference B − A anywhere "
                f"in the {level} interval {_span(r.ci_low, r.ci_high, r.points, unit, 1.0)} "
                f"({pairs}; {test})"
            )
        text += "."
    elif not math.isfinite(r.p_value):
        reason = r.warnings[0] if r.warnings else "no interval"
        return f"not compared on {name}: {reason}."
    elif r.p_value < alpha:
        better, worse = ("B", "A") if r.diff > 0 else ("A", "B")
        sign = 1.0 if r.diff > 0 else -1.0
        text = (
            f"{better} is better than {worse} on {name} by "
            f"{format_difference(abs(r.diff), r.points)}{unit} ({level} interval of "
            f"{better} − {worse}: {_span(r.ci_low, r.ci_high, r.points, unit, sign)}; "
            f"{pairs}); this is unlikely to be chance ({test})"
        )
        if n_graders > 1 and r.p_value_holm >= alpha:
            text += (
                f", though not once corrected for comparing {n_graders} graders "
                f"(Holm {format_p(r.p_value_holm, alpha)})"
            )
        text += "."
    else:
        text = (
            f"no detectable difference on {name}: B − A is "
            f"{format_difference(r.diff, r.points, signed=True)}{unit}, its {level} interval "
            f"{_span(r.ci_low, r.ci_high, r.points, unit, 1.0)} includes 0 ({pairs}; {test})"
        )
        if math.isfinite(r.detectable):
            text += (
                f"; with this n a difference under ~"
                f"{format_difference(r.detectable, r.points)}{unit} would go unseen"
            )
        text += "."
    if math.isfinite(r.diff) and r.diff != 0.0:
        for clearly, verb in ((True, ("goes", "go")), (False, ("leans", "lean"))):
            flipped = [s for s in r.slices if s.flips and s.flips_clearly == clearly]
            if not flipped:
                continue
            shown = "; ".join(
                f"{s.value} {format_difference(s.diff, r.points, signed=True)}{unit}"
                + (
                    f" ({level} interval {_span(s.ci_low, s.ci_high, r.points, '', 1.0)})"
                    if math.isfinite(s.ci_low)
                    else " (no interval)"
                )
                for s in flipped
            )
            text += (
                f" {len(flipped)} of {len(r.slices)} slices "
                f"{verb[0] if len(flipped) == 1 else verb[1]} the other way (B − A): {shown}"
                + ("" if clearly else "; their intervals include 0, so this may be chance")
                + "."
            )
    for warning in r.warnings:
        text += f" Caution: {warning}."
    if r.n_clusters is not None and r.n_clusters < FEW_CLUSTERS and math.isfinite(r.naive_ci_low):
        frame = "B − A" if sign > 0 else "A − B"
        text += (
            f" Treating the pairs as independent, the interval of {frame} would be "
            f"{_span(r.naive_ci_low, r.naive_ci_high, r.points, unit, sign)}: too narrow if "
            "samples of a cluster move together."
        )
    return text
