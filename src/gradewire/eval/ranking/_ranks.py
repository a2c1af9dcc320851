"""One grader's leaderboard from a matrix of scores: means, pairs, rank intervals, tiers.

Every pair of runs is compared on the same samples with compare's method for the scores'
kind (`paired_difference`: mid-p McNemar with Tango's interval for 0/1 scores, the paired
t otherwise, CR2 t with clusters), and the family of p-values is adjusted for the number
of pairs with statsmodels' ``multipletests`` (Holm by default, Benjamini–Hochberg on
request). A pair is *separable* when its adjusted p-value is below ``1 - confidence``.

Holm's adjustment holds the family-wise error whatever the pairs' dependence, and so is
conservative for pairs of many runs, whose tests share runs and are correlated (8 runs
from one distribution: about 4% of simulations call some pair separable, not 5%;
``bench/leaderboard.py``). ``adjust="maxt"`` takes that correlation into account: each raw
p-value, turned into a normal score, is compared with the largest of the pairs' scores
drawn jointly from the normal law of the runs' means, whose covariance is estimated from
the scores (clustered by cluster sums), step-down (Westfall and Young 1993; the
asymptotic max-T of Hothorn, Bretz and Westfall 2008). It is exact for large n only:
the bench measured 5.1% (0/1) and 5.5% (continuous) at n = 100, but 6.8% with 20
clusters, where each pair's variance rests on few clusters and the normal law of the
largest score is too light; with few clusters keep Holm's. (Drawing from a multivariate t
with one shared variance was worse, 7.9%: the pairs' variances are estimated apart.)

The ranks a run could hold follow from the separable pairs alone (the simultaneous rank
intervals of pairwise tests): its best rank is one more than the runs separably better
than it, its worst the number of runs minus those separably worse. With Holm's
adjustment, every interval holds the run's true rank at once whenever no separable
claim is false, so at least ``confidence`` of the time (the family-wise error is
controlled); Benjamini–Hochberg controls the false discovery rate only, and its rank
intervals carry no such level (the board says so).

A run's tier is 1 when no run is separably better than it, else one more than the highest
tier of the runs that are: no two runs of one tier are separable, and two runs with the
same scores always share their tier and their rank interval (they have the same separable
pairs, and a pair of equal scores is never separable).
"""

from __future__ import annotations

import gc
import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from gradewire.core import InvalidInputError, MissingDependencyError
from gradewire.eval.comparing._paired_difference import NONE, paired_difference
from gradewire.eval.ranking._standings import GraderBoard, PairResult, RunStanding
from gradewire.stats._mean_interval import mean_interval

__all__ = ["ADJUSTMENTS", "RANK_METHOD", "Adjustment", "adjusted", "maxt_adjusted", "rank_board"]

Adjustment = Literal["holm", "bh", "maxt"]

ADJUSTMENTS: dict[str, tuple[str, str]] = {
    "holm": ("holm", "Holm (statsmodels multipletests, method='holm')"),
    "bh": ("fdr_bh", "Benjamini–Hochberg (statsmodels multipletests, method='fdr_bh')"),
    "maxt": (
        "maxt",
        "step-down max-T (Westfall–Young; the pairs' correlation estimated from the scores, "
        "10,000 seeded normal draws)",
    ),
}
"""Each ``adjust`` choice: statsmodels' method name and the words the output prints."""

RANK_METHOD = (
    "simultaneous rank intervals from the adjusted pairwise tests: best rank = 1 + runs "
    "separably better, worst rank = runs - runs separably worse"
)
_BH_RANKS = (
    "p-values adjusted by Benjamini–Hochberg control the share of false separable claims, "
    "not their chance: the rank intervals and tiers carry no confidence level (use the "
    "default Holm adjustment for that)"
)
_IDENTICAL = "the two runs scored every sample alike: no difference to test (p = 1)"


def _multipletests() -> Any:
    try:
        from statsmodels.stats.multitest import multipletests  # type: ignore[import-untyped]
    except ImportError:
        raise MissingDependencyError(
            "statsmodels", extra="eval", purpose="adjust a leaderboard's p-values"
        ) from None
    return multipletests


def adjusted(p_values: Sequence[float], adjust: Adjustment) -> list[float]:
    """``p_values`` adjusted for their number by statsmodels' ``multipletests``.

    A pair with no p-value (NaN: no test could be made) counts in the family as a pair
    that shows nothing (p = 1), so it never makes another pair look more significant;
    its own adjusted p-value stays NaN.

    Raises:
        InvalidInputError: An unknown adjustment.
    """
    if adjust not in ("holm", "bh"):
        raise InvalidInputError(f"adjust={adjust!r}: pass 'holm' or 'bh'")
    if not p_values:
        return []
    filled = [1.0 if math.isnan(p) else p for p in p_values]
    multipletests = _multipletests()
    # statsmodels' Holm branch calls gc.collect(), which walks every live object: about a
    # second per board beside 50 runs of 10,000 samples. Objects frozen for the call are
    # skipped and then given back (unless the caller froze them first).
    frozen = gc.get_freeze_count() == 0
    if frozen:
        gc.freeze()
    try:
        _, corrected, _, _ = multipletests(filled, method=ADJUSTMENTS[adjust][0])
    finally:
        if frozen:
            gc.unfreeze()
    return [
        math.nan if math.isnan(p) else float(q) for p, q in zip(p_values, corrected, strict=True)
    ]


_DRAWS = 10_000
_CHUNK = 1_000


def maxt_adjusted(
    scores: npt.NDArray[np.float64],
    pairs: Sequence[tuple[int, int]],
    p_values: Sequence[float],
    clusters: Sequence[str] | None = None,
    *,
    draws: int = _DRAWS,
    seed: int = 0,
) -> list[float]:
    """Step-down max-T adjusted p-values of the pairs ``(i, j)`` of the rows of ``scores``.

    A pair with no p-value stays NaN; a pair whose runs' scores never differ (no
    variance) keeps its p-value, which is 1.
    """
    k = scores.shape[0]
    if scores.shape[1] < 2:
        return [float(v) for v in p_values]  # no test was made: every p-value is NaN
    residual = scores - scores.mean(axis=1, keepdims=True)
    if clusters is not None:
        _, group = np.unique(np.asarray(clusters, dtype=str), return_inverse=True)
        residual = np.vstack(
            [np.bincount(group, weights=row, minlength=int(group.max()) + 1) for row in residual]
        )
    cov = residual @ residual.T
    first = np.array([i for i, _ in pairs], dtype=int)
    second = np.array([j for _, j in pairs], dtype=int)
    variance = cov[first, first] + cov[second, second] - 2.0 * cov[first, second]
    p = np.array(p_values, dtype=np.float64)
    scale = float(np.max(np.diag(cov))) if k else 0.0
    tested = np.isfinite(p) & (variance > 1e-12 * max(scale, 1e-300))
    out = [
        float(v) if not math.isfinite(v) or not t else math.nan
        for v, t in zip(p, tested, strict=True)
    ]
    if not np.any(tested):
        return out
    stats = _scipy_stats()
    index = np.flatnonzero(tested)
    observed = stats.norm.isf(np.clip(p[index], 1e-300, 1.0) / 2.0)
    order = np.argsort(-observed, kind="stable")
    index, observed = index[order], observed[order]
    sd = np.sqrt(variance[index])
    eigen, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.clip(eigen, 0.0, None))
    rng = np.random.default_rng(seed)
    exceed = np.zeros(index.size)
    done = 0
    while done < draws:
        size = min(_CHUNK, draws - done)
        z = rng.standard_normal((size, k)) @ root.T
        w = np.abs(z[:, first[index]] - z[:, second[index]]) / sd
        # The largest score among each hypothesis and those less significant than it.
        tail = np.maximum.accumulate(w[:, ::-1], axis=1)[:, ::-1]
        exceed += np.count_nonzero(tail >= observed, axis=0)
        done += size
    adjusted = np.maximum.accumulate(exceed / draws)
    for position, value in zip(index, adjusted, strict=True):
        out[int(position)] = float(max(value, p[position]))
    return out


def _scipy_stats() -> Any:
    try:
        from scipy import stats
    except ImportError:
        raise MissingDependencyError(
            "scipy", extra="eval", purpose="adjust a leaderboard's p-values"
        ) from None
    return stats


def _pair(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    clusters: Sequence[str] | None,
    confidence: float,
) -> tuple[float, float, float, float, str, str]:
    """``mean(x - y)`` with its interval, p-value, method and note."""
    d = x - y
    estimate = float(d.mean()) if d.size else math.nan
    if not np.any(d) and d.size:
        return 0.0, math.nan, math.nan, 1.0, NONE, _IDENTICAL
    try:
        # paired_difference gives b - a: pass y as a, x as b.
        result = paired_difference(y, x, clusters=clusters, confidence=confidence)
    except InvalidInputError as exc:
        return estimate, math.nan, math.nan, math.nan, NONE, str(exc)
    note = "; ".join(result.warnings)
    return result.estimate, result.low, result.high, result.p_value, result.method, note


def rank_board(
    grader: str,
    names: Sequence[str],
    scores: npt.ArrayLike,
    *,
    clusters: Sequence[str] | None = None,
    confidence: float = 0.95,
    adjust: Adjustment = "holm",
    score_ranges: Sequence[Sequence[float] | None] | None = None,
    passes: Sequence[npt.ArrayLike | None] | None = None,
    slice_value: str | None = None,
) -> GraderBoard:
    """The leaderboard of one grader from each run's scores on the same samples.

    Args:
        grader: The grader key.
        names: The runs' names, unique, one per row of ``scores``.
        scores: A (runs × samples) array: row i holds run i's score on each sample, the
            samples in one order for every run (finite numbers).
        clusters: A cluster label per sample (None: independent samples).
        confidence: Level of the intervals; pairs are separable below ``1 - confidence``.
        adjust: ``"holm"`` (family-wise error) or ``"bh"`` (false discovery rate).
        score_ranges: Per run, the range its grader declared, or None.
        passes: Per run, a 0/1 pass verdict per sample, or None (no pass rule).
        slice_value: The slice this board is of, for its label.

    Raises:
        InvalidInputError: Names not one per row or not unique, scores that are not
            finite, or an unknown adjustment.
    """
    matrix = np.asarray(scores, dtype=np.float64)
    k = len(names)
    if matrix.ndim != 2 or matrix.shape[0] != k:
        raise InvalidInputError(f"scores must be a (runs × samples) array with {k} rows")
    if len(set(names)) != k:
        raise InvalidInputError("run names must be unique in a leaderboard")
    if not np.all(np.isfinite(matrix)):
        raise InvalidInputError("scores must be finite; leave unscored samples out")
    if adjust not in ADJUSTMENTS:
        raise InvalidInputError(f"adjust={adjust!r}: pass one of {sorted(ADJUSTMENTS)}")
    n = int(matrix.shape[1])
    labels = list(clusters) if clusters is not None else None
    if labels is not None and len(labels) != n:
        raise InvalidInputError(f"clusters must hold one label per sample ({n})")
    n_clusters = len(set(labels)) if labels is not None else None
    alpha = 1.0 - confidence
    with np.errstate(invalid="ignore"):
        means = matrix.mean(axis=1) if n else np.full(k, math.nan)
    # Best mean first; a tie keeps the order the runs were given in.
    order = sorted(range(k), key=lambda i: (-means[i] if n else 0.0, i))
    figures = []
    for pos, i in enumerate(order):
        for j in order[pos + 1 :]:
            figures.append((i, j, *_pair(matrix[i], matrix[j], labels, confidence)))
    raw = [f[5] for f in figures]
    if adjust == "maxt":
        corrected = maxt_adjusted(matrix, [(f[0], f[1]) for f in figures], raw, labels)
    else:
        corrected = adjusted(raw, adjust)
    pairs = []
    better: dict[int, set[int]] = {i: set() for i in range(k)}
    worse: dict[int, set[int]] = {i: set() for i in range(k)}
    for (i, j, diff, low, high, p, method, note), q in zip(figures, corrected, strict=True):
        separable = bool(q < alpha) and diff != 0.0
        if separable:
            top, bottom = (i, j) if diff > 0 else (j, i)
            better[bottom].add(top)
            worse[top].add(bottom)
        pairs.append(PairResult(names[i], names[j], diff, low, high, p, q, separable, method, note))
    tiers: dict[int, int] = {}
    # Separably better means a higher mean: walking best mean first, each run's betters
    # already have their tier.
    for i in sorted(range(k), key=lambda i: (-means[i] if n else 0.0, i)):
        tiers[i] = 1 + max((tiers[j] for j in better[i]), default=0)
    standings = []
    for i in order:
        ranges = score_ranges[i] if score_ranges is not None else None
        estimate = mean_interval(
            matrix[i], score_range=ranges, clusters=labels, confidence=confidence
        )
        rate = None
        if passes is not None and passes[i] is not None:
            verdicts = np.asarray(passes[i], dtype=np.float64)
            rate = float(verdicts.mean()) if verdicts.size else math.nan
        standings.append(
            RunStanding(
                run=names[i],
                mean=estimate.mean,
                low=estimate.low,
                high=estimate.high,
                method=estimate.method_name,
                rank_low=1 + len(better[i]),
                rank_high=k - len(worse[i]),
                tier=tiers[i],
                caveat=estimate.caveat,
                pass_rate=rate,
            )
        )
    notes = []
    if adjust == "bh" and k > 2:
        notes.append(_BH_RANKS)
    if n < 2:
        notes.append(f"{n} sample(s) scored by every run: nothing to rank")
    return GraderBoard(
        grader=grader,
        n_samples=n,
        runs=tuple(standings),
        pairs=tuple(pairs),
        confidence=confidence,
        adjustment=ADJUSTMENTS[adjust][1],
        rank_method=RANK_METHOD,
        n_clusters=n_clusters,
        slice=slice_value,
        notes=tuple(notes),
    )
