"""The result of `agreement`: its statistics, intervals, confusion matrix and disagreements."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from gradewire.stats._coding import Scale
from gradewire.stats._keyed import Label
from gradewire.stats._legend import LABELS, LEGEND
from gradewire.stats._text import cell_html, format_id, format_number, printable

__all__ = ["Agreement"]

# Ids shown by the terminal text and the notebook view; to_dict() keeps them all.
_SHOWN_IDS = 10
# Categories up to which the text and the notebook view draw the confusion matrix.
_SHOWN_CATEGORIES = 12


@dataclass(frozen=True)
class Agreement:
    """How far two (or more) raters agree on the same items, with intervals.

    Every statistic that applies to the scale and the number of raters is in
    ``statistics`` (NaN when it is undefined on these labels, with the reason in
    ``notes``); ``describe()`` says in words what each one means.

    Attributes:
        scale: The level of measurement: ``"nominal"``, ``"ordinal"`` or ``"interval"``.
        raters: How many raters were compared.
        n: Items that at least two raters labelled (for two raters: both).
        n_left_out: Ids with fewer than two labels, left out of every statistic.
        statistics: Name → value, in display order: ``raw_agreement``, ``cohen_kappa``,
            ``weighted_kappa_linear``, ``weighted_kappa_quadratic``,
            ``krippendorff_alpha``, ``pearson``, ``spearman``,
            ``mean_absolute_difference``, those that apply.
        intervals: Name → ``(low, high)``, the bootstrap interval (NaN, NaN when there is
            none, with the reason in ``notes`` under ``<name>_ci``).
        notes: Why a value (key ``<name>``) or an interval (key ``<name>_ci``) is missing,
            or how it was obtained when that differs from ``method``.
        method: How the intervals were obtained.
        confidence: The intervals' level (0.95 for 95%).
        n_resamples: Bootstrap resamples.
        n_clusters: Clusters resampled whole (None: items were resampled).
        tolerance: Largest difference that still counts as agreement (interval scale).
        categories: The categories in their order (nominal, ordinal), the confusion
            matrix's rows and columns; None on an interval scale.
        confusion: For two raters on a nominal or ordinal scale, item counts with rows the
            first rater's label and columns the second's (read-only); else None, and None
            beyond 1,000 categories (``notes["confusion"]`` says so).
        disagreements: Ids of the items the raters labelled differently: on an ordinal or
            interval scale the largest difference first, else in the order of the ids.
        rater_names: What to call each rater (``agreement(names=...)``): the confusion
            matrix names its rows and columns by them. None: "first rater", "second rater".
        category_text: How each of two raters wrote each category, in ``categories``'
            order, when that differs from the category itself (a labels file's "pass"
            for 1): the confusion matrix's row and column headings. None: the categories.
    """

    scale: Scale
    raters: int
    n: int
    n_left_out: int
    statistics: Mapping[str, float]
    intervals: Mapping[str, tuple[float, float]]
    notes: Mapping[str, str]
    method: str
    confidence: float
    n_resamples: int
    n_clusters: int | None
    tolerance: float | None
    categories: tuple[Label, ...] | None
    confusion: npt.NDArray[np.int64] | None = field(compare=False, repr=False)
    disagreements: tuple[Hashable, ...] = field(repr=False)
    rater_names: tuple[str, ...] | None = None
    category_text: tuple[tuple[str, ...], tuple[str, ...]] | None = field(
        default=None, compare=False, repr=False
    )

    legend: ClassVar[Mapping[str, str]] = LEGEND
    """Statistic name → what it means, in plain words (for a report's legend)."""

    display_names: ClassVar[Mapping[str, str]] = LABELS
    """Statistic name → its short display name (``"Cohen's κ"``)."""

    @property
    def raw_agreement(self) -> float:
        """Share of items with the same label (within ``tolerance`` on an interval scale)."""
        return self.statistics["raw_agreement"]

    @property
    def cohen_kappa(self) -> float | None:
        """Cohen's κ (nominal and ordinal scales, two raters); None where it does not apply."""
        return self.statistics.get("cohen_kappa")

    @property
    def weighted_kappa_linear(self) -> float | None:
        """Linearly weighted κ (ordinal, two raters); None where it does not apply."""
        return self.statistics.get("weighted_kappa_linear")

    @property
    def weighted_kappa_quadratic(self) -> float | None:
        """Quadratically weighted κ (ordinal, two raters); None where it does not apply."""
        return self.statistics.get("weighted_kappa_quadratic")

    @property
    def krippendorff_alpha(self) -> float:
        """Krippendorff's α at the scale's level of measurement."""
        return self.statistics["krippendorff_alpha"]

    @property
    def pearson(self) -> float | None:
        """Pearson's r (interval scale, two raters); None where it does not apply."""
        return self.statistics.get("pearson")

    @property
    def spearman(self) -> float | None:
        """Spearman's ρ (ordinal and interval scales, two raters); None where it does not apply."""
        return self.statistics.get("spearman")

    @property
    def mean_absolute_difference(self) -> float | None:
        """Mean of ``|a - b|`` (interval scale, two raters); None where it does not apply."""
        return self.statistics.get("mean_absolute_difference")

    def ci(self, name: str) -> tuple[float, float]:
        """The interval of statistic ``name`` as ``(low, high)`` (NaN, NaN when there is none).

        Raises:
            KeyError: ``name`` is not one of ``statistics``.
        """
        return self.intervals[name]

    def to_dict(self) -> dict[str, Any]:
        """``n``, each statistic, its interval as ``<name>_ci: [low, high]``, ``disagreements``.

        Values are plain Python (floats, lists), undefined ones NaN, ready for a tracker or
        ``json.dumps``.
        """
        out: dict[str, Any] = {"n": self.n}
        for name, value in self.statistics.items():
            out[name] = value
            out[f"{name}_ci"] = list(self.intervals[name])
        out["disagreements"] = list(self.disagreements)
        return out

    def describe(self) -> str:
        """Each statistic with its interval and, in plain words, what it means."""
        lines = [self._heading(), LEGEND["n"], ""]
        level = f"{self.confidence:.0%}"
        for name, value in self.statistics.items():
            low, high = self.intervals[name]
            interval = (
                f" ({level} interval {format_number(low)} to {format_number(high)})"
                if not math.isnan(low)
                else ""
            )
            lines.append(f"{LABELS[name]} = {format_number(value)}{interval}: {LEGEND[name]}")
            for key in (name, f"{name}_ci"):
                if key in self.notes:
                    lines.append(f"  ({self.notes[key]})")
        lines += ["", f"Intervals: {self.method}."]
        return "\n".join(lines)

    def __str__(self) -> str:
        lines = [self._heading(), f"{self.confidence:.0%} intervals: {self.method}"]
        width = max(len(LABELS[name]) for name in self.statistics)
        for name, value in self.statistics.items():
            low, high = self.intervals[name]
            interval = (
                f"[{format_number(low)}, {format_number(high)}]" if not math.isnan(low) else ""
            )
            note = self.notes.get(name) or self.notes.get(f"{name}_ci")
            line = f"  {LABELS[name]:<{width}}  {format_number(value):>7}  {interval}"
            lines.append(f"{line}  ({note})" if note else line.rstrip())
        if self.confusion is not None and len(self.confusion) > _SHOWN_CATEGORIES:
            lines.append(f"confusion: {len(self.confusion)} × {len(self.confusion)} (.confusion)")
        elif self.confusion is not None and self.categories is not None:
            rows, columns = self._axes()
            lines.append(f"confusion (rows: {printable(rows)}, columns: {printable(columns)})")
            row_names, names = ([format_id(c) for c in axis] for axis in self._category_headings())
            count = len(str(int(self.confusion.max(initial=0))))
            cell = max([len(n) for n in names] + [count])
            side = max([len(n) for n in row_names] + [count])
            lines.append("  " + " " * side + "".join(f"  {n:>{cell}}" for n in names))
            for name, row in zip(row_names, self.confusion, strict=True):
                lines.append(f"  {name:>{side}}" + "".join(f"  {int(c):>{cell}}" for c in row))
        lines.append(self._disagreement_line(format_id))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        level = f"{self.confidence:.0%}"
        rows = []
        for name, value in self.statistics.items():
            low, high = self.intervals[name]
            interval = (
                f"[{format_number(low)}, {format_number(high)}]" if not math.isnan(low) else ""
            )
            note = self.notes.get(name) or self.notes.get(f"{name}_ci") or ""
            rows.append(
                f"<tr><th align='left' title='{cell_html(LEGEND[name])}'>"
                f"{cell_html(LABELS[name])}</th><td>{format_number(value)}</td>"
                f"<td>{interval}</td><td>{cell_html(note)}</td></tr>"
            )
        parts = [
            "<div class='gradewire-agreement'>",
            f"<p><b>{cell_html(self._heading())}</b><br>{level} intervals: "
            f"{cell_html(self.method)}</p>",
            f"<table><thead><tr><th></th><th>value</th><th>{level} interval</th><th></th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>",
        ]
        if (
            self.confusion is not None
            and self.categories is not None
            and len(self.confusion) <= _SHOWN_CATEGORIES
        ):
            row_names, names = (
                [cell_html(format_id(c)) for c in axis] for axis in self._category_headings()
            )
            head = "".join(f"<th>{n}</th>" for n in names)
            body = "".join(
                f"<tr><th>{n}</th>" + "".join(f"<td>{int(c)}</td>" for c in row) + "</tr>"
                for n, row in zip(row_names, self.confusion, strict=True)
            )
            first, second = (cell_html(name) for name in self._axes())
            parts.append(
                f"<table><caption>confusion: rows {first}, columns {second}</caption>"
                f"<thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>"
            )
        parts.append(f"<p>{cell_html(self._disagreement_line(format_id))}</p></div>")
        return "".join(parts)

    def _axes(self) -> tuple[str, str]:
        """The confusion matrix's rows and columns: the two raters, by name if named."""
        names = self.rater_names
        if names is not None and len(names) >= 2:
            return names[0], names[1]
        return "first rater", "second rater"

    def _category_headings(self) -> tuple[tuple[Label, ...], tuple[Label, ...]]:
        categories = self.categories or ()
        if self.category_text is not None:
            return self.category_text
        return categories, categories

    def _heading(self) -> str:
        raters = "two raters" if self.raters == 2 else f"{self.raters} raters"
        order = ""
        if self.categories is not None:
            sep = " < " if self.scale == "ordinal" else ", "
            shown = [format_id(c) for c in self.categories[:12]]
            more = ", …" if len(self.categories) > 12 else ""
            order = f": {sep.join(shown)}{more}"
        tolerance = (
            f", tolerance {self.tolerance:g}"
            if self.tolerance is not None and self.tolerance > 0
            else ""
        )
        k = self.n_left_out
        left = f"; {k} id{'s' if k != 1 else ''} with fewer than two labels left out" if k else ""
        return (
            f"Agreement of {raters} on {self.n} items ({self.scale} scale{order}{tolerance}){left}"
        )

    def _disagreement_line(self, show: Any) -> str:
        count = len(self.disagreements)
        if not count:
            return "no disagreements"
        order = "largest first" if self.scale != "nominal" else "in id order"
        shown = ", ".join(show(i) for i in self.disagreements[:_SHOWN_IDS])
        more = f", … ({count - _SHOWN_IDS} more)" if count > _SHOWN_IDS else ""
        return f"{count} disagreement{'s' if count != 1 else ''} ({order}): {shown}{more}"
