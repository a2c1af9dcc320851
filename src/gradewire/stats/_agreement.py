"""`agreement`: how far raters (a judge and people, or two judges) agree on the same items."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import partial
from types import MappingProxyType
from typing import Literal

import numpy as np
import numpy.typing as npt

from gradewire.core import InvalidInputError, InvalidTypeError
from gradewire.stats._agreement_result import Agreement
from gradewire.stats._alpha import alpha
from gradewire.stats._coding import CodedItems, Scale, code_items
from gradewire.stats._correlation import pearson, spearman
from gradewire.stats._kappa import kappa
from gradewire.stats._keyed import Label, LabelSource, is_mapping, read_keyed
from gradewire.stats._resample import Interval, ItemTypes, Statistic, bootstrap_intervals
from gradewire.stats._text import format_id

__all__ = ["agreement"]

_Array = npt.NDArray[np.float64]
_NAMES = "abcdefghijklmnopqrstuvwxyz"
_ORDER = (
    "raw_agreement",
    "mean_absolute_difference",
    "cohen_kappa",
    "weighted_kappa_linear",
    "weighted_kappa_quadratic",
    "krippendorff_alpha",
    "pearson",
    "spearman",
)
# Categories beyond which no confusion matrix is built (it would be mostly zeros).
_CONFUSION_LIMIT = 1_000
# What one item already gives; every other statistic needs two items or more.
_DEFINED_ON_ONE = frozenset({"raw_agreement", "mean_absolute_difference"})
# Floating-point slack of the interval tolerance: 1.3 - 1.1 is 0.20000000000000018.
_SLACK = 1e-9


def agreement(
    a: LabelSource,
    b: LabelSource,
    *more: LabelSource,
    scale: Scale = "nominal",
    ids: Sequence[Hashable] | None = None,
    categories: Sequence[Label] | None = None,
    clusters: Mapping[Hashable, Hashable] | Sequence[Hashable] | None = None,
    tolerance: float = 0.0,
    statistics: Sequence[str] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    names: Sequence[str] | None = None,
) -> Agreement:
    """How far raters agree on the same items, each statistic with a bootstrap interval.

    Give each rater's labels keyed by sample id (a judge's grades and human labels, or two
    judges): a mapping id → label such as a dict or a pandas Series, or a sequence aligned
    with ``ids``. A missing id, None or NaN is a missing label. Two raters are compared on
    the items both labelled; with more raters, Krippendorff's α uses every item that at
    least two labelled. Numbers are compared at float32's precision, integers exactly: a
    judge's ``np.float32(0.1)`` and a person's ``0.1`` from JSON are one label (shown as
    0.1), as are any two numbers float32 cannot tell apart.

    What is computed depends on the scale (two raters; more raters give raw agreement and
    α only): raw agreement always; Cohen's κ on nominal and ordinal scales; linearly and
    quadratically weighted κ and Spearman's ρ on ordinal scales; Pearson's r, Spearman's ρ
    and the mean absolute difference on interval scales; Krippendorff's α at the scale's
    level of measurement. `Agreement.describe` says what each means. A statistic that is
    undefined on these labels (κ when both raters give one label throughout, a correlation
    when one rater never varies, anything on fewer than two items) is NaN with the reason
    in `Agreement.notes`, never a made-up 0 or 1.

    The intervals are BCa bootstrap intervals over items (bias-corrected and accelerated:
    these statistics are skewed near their bounds, which BCa corrects and the percentile
    interval does not), over whole clusters when ``clusters`` is given, so that items
    sharing a source do not make an interval too narrow. The same inputs and seed give the
    same intervals.

    Args:
        a: The first rater's labels (the confusion matrix's rows).
        b: The second rater's labels (its columns).
        *more: Further raters, for Krippendorff's α.
        scale: ``"nominal"`` (unordered categories), ``"ordinal"`` (ordered categories)
            or ``"interval"`` (numbers whose differences mean something).
        ids: The sample ids of the labels given as sequences, in order. Without it,
            sequences are keyed by position, and then every rater must be a sequence.
        categories: The categories in order, e.g. ``["bad", "ok", "good"]``: the order of
            an ordinal scale and of the confusion matrix. Without it, the labels seen,
            sorted (numbers by value; ordinal string labels need it). Weighted κ counts the
            steps between categories by their positions in this order, as scikit-learn does.
        clusters: The cluster of each item (a mapping id → cluster, or a sequence aligned
            with ``ids``): whole clusters are resampled. None resamples items.
        tolerance: On an interval scale, the largest difference that still counts as
            agreement, for raw agreement and the disagreements (with a relative slack of
            1e-9 for rounding).
        statistics: Compute only these (names as in `Agreement.statistics`, e.g.
            ``["krippendorff_alpha"]``); None computes every one that applies.
        confidence: The intervals' level, between 0 and 1.
        n_resamples: Bootstrap resamples; 0 computes no intervals.
        seed: Seed of the bootstrap's random generator.
        names: What to call each rater (``["judge", "people"]``), in the order given: the
            confusion matrix names its rows and columns by them. None: "first rater" and
            "second rater".

    Returns:
        The statistics, intervals, confusion matrix and disagreeing ids.

    Raises:
        InvalidInputError: Labels that cannot be compared (strings mixed with numbers,
            ordinal strings without ``categories``, a label outside ``categories``), ids
            that do not line up, or an argument out of range.

    Example:
        >>> import gradewire as gw
        >>> judge = {"q1": "pass", "q2": "fail", "q3": "pass", "q4": "pass"}
        >>> people = {"q1": "pass", "q2": "fail", "q3": "fail", "q4": "pass", "q5": "fail"}
        >>> result = gw.agreement(judge, people, n_resamples=0)
        >>> result.n, result.raw_agreement, round(result.cohen_kappa, 3)
        (4, 0.75, 0.5)
        >>> result.disagreements
        ('q3',)
    """
    _check_arguments(confidence, n_resamples, seed, tolerance, scale)
    raters = 2 + len(more)
    rater_names = _rater_names(names, raters)
    keyed = read_keyed(
        [a, b, *more],
        list(rater_names)
        if rater_names is not None
        else [_NAMES[i] if i < len(_NAMES) else f"rater {i + 1}" for i in range(raters)],
        ids,
    )
    coded = code_items(keyed, scale, categories)
    by_position = ids is None and not any(is_mapping(r) for r in (a, b, *more))
    cluster_codes = _cluster_codes(clusters, coded, ids, by_position)
    types = ItemTypes.of(coded.codes)
    n = len(coded.ids)
    factories, reasons = _statistics(coded, types, raters, tolerance)
    chosen = _chosen(list(factories), statistics, coded.scale, raters)
    estimates: dict[str, float] = {}
    notes: dict[str, str] = {}
    built: dict[str, Statistic] = {}
    observed = types.counts[None, :]
    for name in chosen:
        if n == 0 or (n < 2 and name not in _DEFINED_ON_ONE):
            estimates[name] = math.nan
            notes[name] = f"fewer than 2 items to compare (n = {n})"
            continue
        built[name] = factories[name]()
        estimates[name] = float(built[name](observed)[0])
        if math.isnan(estimates[name]):
            notes[name] = reasons[name]
    n_clusters = None if cluster_codes is None else int(cluster_codes.max(initial=-1)) + 1
    intervals = _intervals(
        built, estimates, types, cluster_codes, n_resamples, confidence, seed, notes
    )
    unit = "items" if cluster_codes is None else f"{n_clusters} clusters of items"
    method = (
        f"BCa bootstrap, {n_resamples:,} resamples of the {unit}, seed {seed}"
        if n_resamples
        else "none (n_resamples=0)"
    )
    table = None
    if raters == 2 and coded.categories is not None:
        k = len(coded.categories)
        if k <= _CONFUSION_LIMIT:
            table = np.zeros((k, k), dtype=np.int64)
            np.add.at(table, (coded.codes[:, 0], coded.codes[:, 1]), 1)
            table.flags.writeable = False
        else:
            notes["confusion"] = f"{k:,} categories: no confusion matrix (see the disagreements)"
    return Agreement(
        scale=scale,
        raters=raters,
        n=n,
        n_left_out=coded.n_left_out,
        statistics=MappingProxyType(estimates),
        intervals=MappingProxyType(
            {
                name: (intervals[name].low, intervals[name].high)
                if name in intervals
                else (math.nan, math.nan)
                for name in estimates
            }
        ),
        notes=MappingProxyType(notes),
        method=method,
        confidence=confidence,
        n_resamples=n_resamples,
        n_clusters=n_clusters,
        tolerance=tolerance if scale == "interval" else None,
        categories=coded.categories,
        confusion=table,
        disagreements=_disagreements(coded, tolerance),
        rater_names=rater_names,
    )


def _rater_names(names: Sequence[str] | None, raters: int) -> tuple[str, ...] | None:
    if names is None:
        return None
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise InvalidTypeError("names must be a sequence of strings, one per rater")
    if len(names) != raters or not all(isinstance(name, str) for name in names):
        raise InvalidInputError(f"names must be {raters} strings, one per rater, not {names!r}")
    return tuple(names)


def _check_arguments(
    confidence: float, n_resamples: int, seed: int, tolerance: float, scale: Scale
) -> None:
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise InvalidTypeError(f"confidence must be a number, not {type(confidence).__name__}")
    if not 0.0 < confidence < 1.0:
        raise InvalidInputError(
            f"confidence must be between 0 and 1 (0.95 for 95%), not {confidence!r}"
        )
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples == 1:
        raise InvalidInputError(
            f"n_resamples must be an int >= 2, or 0 for no intervals, not {n_resamples!r}"
        )
    if n_resamples < 0:
        raise InvalidInputError(
            f"n_resamples must be >= 2, or 0 for no intervals, not {n_resamples}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InvalidTypeError(f"seed must be an int, not {type(seed).__name__}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float):
        raise InvalidTypeError(f"tolerance must be a number, not {type(tolerance).__name__}")
    if not (math.isfinite(tolerance) and tolerance >= 0):
        raise InvalidInputError(f"tolerance must be a finite number >= 0, not {tolerance!r}")
    if tolerance and scale != "interval":
        raise InvalidInputError(
            "tolerance= applies to an interval scale; categories agree only when equal"
        )


def _cluster_codes(
    clusters: Mapping[Hashable, Hashable] | Sequence[Hashable] | None,
    coded: CodedItems,
    ids: Sequence[Hashable] | None,
    keyed_by_position: bool,
) -> npt.NDArray[np.intp] | None:
    if clusters is None:
        return None
    if is_mapping(clusters):
        keyed = read_keyed([clusters], ["clusters"])
    elif ids is None and not keyed_by_position:
        raise InvalidInputError(
            "clusters is a sequence but the labels are keyed by id: give clusters as a "
            "mapping id → cluster, or pass ids= to align the sequence"
        )
    else:
        keyed = read_keyed([clusters], ["clusters"], ids)
    of_id = dict(zip(keyed.ids, keyed.columns[0], strict=True))
    missing = [i for i in coded.ids if of_id.get(i) is None]
    if missing:
        shown = ", ".join(format_id(i) for i in missing[:5])
        raise InvalidInputError(
            f"clusters has no cluster for {len(missing)} compared items ({shown}"
            f"{', …' if len(missing) > 5 else ''}): give every item a cluster"
        )
    index: dict[object, int] = {}
    codes = [index.setdefault(of_id[i], len(index)) for i in coded.ids]
    return np.asarray(codes, dtype=np.intp)


def _chosen(
    applicable: Sequence[str], names: Sequence[str] | None, scale: Scale, raters: int
) -> list[str]:
    if names is None:
        return list(applicable)
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise InvalidTypeError(
            f"statistics must be a list of names, e.g. ['cohen_kappa'], not {names!r}"
        )
    unknown = [name for name in names if name not in applicable]
    if unknown or not names:
        raise InvalidInputError(
            f"statistics={list(names)!r}: on a {scale} scale with {raters} raters choose "
            f"among {', '.join(applicable)}"
        )
    return [name for name in applicable if name in names]


def _statistics(
    coded: CodedItems, types: ItemTypes, raters: int, tolerance: float
) -> tuple[dict[str, Callable[[], Statistic]], dict[str, str]]:
    """Each statistic that applies (built on demand), and why it may be NaN."""
    rows = types.rows
    values = coded.values
    scale = coded.scale
    label = _one_label(coded)
    factories: dict[str, Callable[[], Statistic]] = {
        "raw_agreement": lambda: _share(_agreeing(rows, values, scale, tolerance))
    }
    reasons = {"raw_agreement": "no items to compare"}
    if raters == 2 and scale == "interval":
        factories["mean_absolute_difference"] = lambda: _share(
            np.abs(values[rows[:, 0]] - values[rows[:, 1]])
        )
        reasons["mean_absolute_difference"] = "no items to compare"
    if raters == 2 and scale != "interval":
        k = values.size
        weightings: list[tuple[str, Literal["none", "linear", "quadratic"]]] = [
            ("cohen_kappa", "none")
        ]
        if scale == "ordinal":
            weightings += [
                ("weighted_kappa_linear", "linear"),
                ("weighted_kappa_quadratic", "quadratic"),
            ]
        for name, weighting in weightings:
            factories[name] = partial(kappa, rows[:, 0], rows[:, 1], k, weighting)
            reasons[name] = (
                f"both raters gave every item the same label ({label}): chance alone then "
                "predicts perfect agreement, so κ is 0/0"
            )
    factories["krippendorff_alpha"] = partial(alpha, rows, values, scale)
    reasons["krippendorff_alpha"] = (
        f"every label is the same ({label}): with no variation there is no disagreement to "
        "expect by chance, so α is 0/0"
    )
    if raters == 2 and scale != "nominal":
        constant = _constant_rater(coded)
        if scale == "interval":
            factories["pearson"] = lambda: pearson(
                values[rows[:, 0]], values[rows[:, 1]], rows[:, 0], rows[:, 1]
            )
            reasons["pearson"] = constant
        factories["spearman"] = partial(spearman, rows[:, 0], rows[:, 1])
        reasons["spearman"] = constant
    return {name: factories[name] for name in _ORDER if name in factories}, reasons


def _agreeing(
    rows: npt.NDArray[np.int64], values: _Array, scale: Scale, tolerance: float
) -> _Array:
    """Per type, 1 where every label agrees (within ``tolerance`` on an interval scale)."""
    present = rows >= 0
    lows = np.where(present, rows, np.iinfo(np.int64).max).min(axis=1)
    highs = np.where(present, rows, -1).max(axis=1)
    if scale == "interval" and tolerance > 0:
        agree = values[highs] - values[lows] <= tolerance * (1.0 + _SLACK)
    else:
        agree = lows == highs
    return np.asarray(agree, dtype=np.float64)


def _share(per_type: _Array) -> Statistic:
    def statistic(weights: _Array) -> _Array:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray((weights @ per_type) / weights.sum(axis=1))

    return statistic


def _one_label(coded: CodedItems) -> str:
    present = coded.codes[coded.codes >= 0]
    if present.size == 0:
        return "none"
    first = int(present[0])
    if coded.categories is not None:
        return format_id(repr(coded.categories[first]))
    return f"{coded.values[first]:g}"


def _constant_rater(coded: CodedItems) -> str:
    for column, name in ((0, "a"), (1, "b")):
        codes = coded.codes[:, column]
        if codes.size and codes.min() == codes.max():
            shown = (
                format_id(repr(coded.categories[int(codes[0])]))
                if coded.categories is not None
                else f"{coded.values[int(codes[0])]:g}"
            )
            return (
                f"rater {name} gives every item the same label ({shown}): a correlation "
                "needs both to vary"
            )
    return "a rater's labels do not vary"


def _intervals(
    statistics: Mapping[str, Statistic],
    estimates: Mapping[str, float],
    types: ItemTypes,
    clusters: npt.NDArray[np.intp] | None,
    n_resamples: int,
    confidence: float,
    seed: int,
    notes: dict[str, str],
) -> dict[str, Interval]:
    if n_resamples == 0 or types.of_item.size < 2 or not statistics:
        return {}
    if clusters is not None and int(clusters.max()) + 1 < 2:
        for name in statistics:
            notes[f"{name}_ci"] = (
                "every item is in one cluster: resampling clusters needs 2 or more"
            )
        return {}
    computed = bootstrap_intervals(
        statistics,
        estimates,
        types,
        clusters=clusters,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )
    for name, interval in computed.items():
        if interval.note:
            notes[f"{name}_ci"] = interval.note
    return computed


def _disagreements(coded: CodedItems, tolerance: float) -> tuple[Hashable, ...]:
    codes = coded.codes
    if codes.shape[0] == 0:
        return ()
    present = codes >= 0
    low = np.where(present, codes, np.iinfo(np.int64).max).min(axis=1)
    high = np.where(present, codes, -1).max(axis=1)
    if coded.scale == "interval":
        size = coded.values[high] - coded.values[low]
        differ = size > tolerance * (1.0 + _SLACK) if tolerance > 0 else high != low
    else:
        size = (high - low).astype(np.float64)
        differ = high != low
    chosen = np.flatnonzero(differ)
    if coded.scale != "nominal":
        chosen = chosen[np.argsort(-size[chosen], kind="stable")]
    return tuple(coded.ids[i] for i in chosen)
