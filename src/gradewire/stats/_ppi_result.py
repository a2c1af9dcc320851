"""The results of prediction-powered inference: the corrected mean beside the classical ones."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gradewire.stats._text import cell_html, format_number

__all__ = ["MeanInterval", "PPIInterval"]

# Below this many labels even the small-sample (t) interval is flagged as approximate: in
# the simulations of tests/stats/test_ppi.py it covered about 90% from 10 labels.
_FEW_LABELS = 30


@dataclass(frozen=True)
class MeanInterval:
    """A classical normal (CLT) interval of a mean: ``mean ± z · sd / √n``.

    ``sd`` divides by n, as ``ppi_py.classical_mean_ci`` does.

    Attributes:
        estimate: The mean.
        low: Lower end of the interval.
        high: Upper end of the interval.
        standard_error: ``sd / √n``.
        n: How many values the mean is over.
    """

    estimate: float
    low: float
    high: float
    standard_error: float
    n: int

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low


@dataclass(frozen=True)
class PPIInterval:
    """A judged mean corrected by human labels, with an interval that includes the judge's error.

    Prediction-powered inference (Angelopoulos et al., Science 2023): the judge's mean over
    the samples without labels, corrected by the mean difference between people and judge
    on the labelled ones. ``judge_only`` and ``human_only`` are the two classical
    intervals it stands between: the judge's over every judged sample (narrow, but blind to
    the judge's bias) and the labels' alone (honest, but wide).

    Attributes:
        estimate: The prediction-powered estimate of the mean human label.
        low: Lower end of the interval.
        high: Upper end of the interval.
        standard_error: Its standard error.
        confidence: The interval's level (0.95 for 95%).
        lam: The weight λ given to the judge: 1 is the original PPI, 0 ignores the judge
            (the labels' mean), between them PPI++'s power tuning.
        method: ``"PPI++"`` (λ tuned from the data), or ``"PPI"`` (λ given).
        interval_form: How the interval's half-width is made: ``"normal"`` (``ppi_py``'s,
            from 100 labels on) or, below 100, its small-sample form such as
            ``"Student t, 19 df"`` (n - 1 degrees of freedom, variances that divide by
            n - 1); ``human_only`` takes the same form.
        estimand: What is estimated: ``"mean"``, or ``"mean difference b - a"``.
        n_labels: Samples with a human label (and a judge score).
        n_judged: Samples with a judge score, labelled or not.
        n_unscored: Ids left out because the judge gave them no score (none labelled).
        judge_bias: How far the judge's mean is above people's on the labelled samples
            (``mean(judge - label)``); the correction applied is ``λ`` times a
            version of it.
        judge_only: The judge's classical interval over every judged sample.
        human_only: The classical interval of the human labels alone.
    """

    estimate: float
    low: float
    high: float
    standard_error: float
    confidence: float
    lam: float
    method: str
    estimand: str
    n_labels: int
    n_judged: int
    n_unscored: int
    judge_bias: float
    judge_only: MeanInterval
    human_only: MeanInterval
    interval_form: str = "normal"

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low

    @property
    def effective_labels(self) -> float:
        """Human labels alone would need this many to be as narrow (``n · SE_human² / SE²``).

        NaN when the interval has no width to compare (never infinite).
        """
        if self.standard_error == 0.0:
            return math.nan
        return self.n_labels * (self.human_only.standard_error / self.standard_error) ** 2

    def to_dict(self) -> dict[str, Any]:
        """Plain values for a tracker or ``json.dumps``; intervals as ``[low, high]``."""
        return {
            "estimand": self.estimand,
            "method": self.method,
            "interval_form": self.interval_form,
            "estimate": self.estimate,
            "ci": [self.low, self.high],
            "standard_error": self.standard_error,
            "confidence": self.confidence,
            "lam": self.lam,
            "n_labels": self.n_labels,
            "n_judged": self.n_judged,
            "n_unscored": self.n_unscored,
            "judge_bias": self.judge_bias,
            "effective_labels": self.effective_labels,
            "judge_only": self.judge_only.estimate,
            "judge_only_ci": [self.judge_only.low, self.judge_only.high],
            "human_only": self.human_only.estimate,
            "human_only_ci": [self.human_only.low, self.human_only.high],
        }

    def describe(self) -> str:
        """In words: what the labels changed, and what the judge saved."""
        level = f"{self.confidence:.0%}"
        shift = self.estimate - self.judge_only.estimate
        effective = self.effective_labels
        worth = (
            f": the judge is worth as much as {effective:,.0f} human labels alone"
            if math.isfinite(effective)
            else ""
        )
        lines = [
            f"{self.n_labels} human labels on {self.n_judged} judged samples move the judged "
            f"{self.estimand} from {format_number(self.judge_only.estimate)} to "
            f"{format_number(self.estimate)} ({'+' if shift >= 0 else ''}{format_number(shift)}); "
            f"on the labelled samples the judge scores {format_number(abs(self.judge_bias))} "
            f"{'above' if self.judge_bias >= 0 else 'below'} people.",
            f"The {level} interval is {_ratio(self.width, self.judge_only.width)} the "
            "judge-only one, which leaves the judge's error out, and "
            f"{_ratio(self.width, self.human_only.width)} the labels-only one{worth}.",
        ]
        if self.interval_form != "normal":
            lines.append(
                f"With {self.n_labels} labels (fewer than 100) the interval is the small-sample "
                f"form, {self.interval_form}, as the labels-only one."
            )
        if self.n_labels < _FEW_LABELS:
            lines.append(
                f"With fewer than {_FEW_LABELS} labels even that is approximate (in "
                "simulations about 90% of 95% intervals from 10 labels held the truth), the "
                "more so when the judge's errors are rare: label more samples before relying "
                "on its ends."
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        rows = self._rows()
        lines = [f"{self.estimand} with {self.confidence:.0%} intervals"]
        width = max(len(row[0]) for row in rows)
        for name, estimate, low, high, over in rows:
            lines.append(
                f"  {name:<{width}}  {format_number(estimate):>7}  "
                f"[{format_number(low)}, {format_number(high)}]  {over}"
            )
        return "\n".join([*lines, self.describe()])

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><th align='left'>{cell_html(name)}</th>"
            f"<td>{format_number(estimate)}</td>"
            f"<td>[{format_number(low)}, {format_number(high)}]</td>"
            f"<td>{cell_html(over)}</td></tr>"
            for name, estimate, low, high, over in self._rows()
        )
        return (
            f"<div class='gradewire-ppi'><table><caption>{cell_html(self.estimand)}</caption>"
            f"<thead><tr><th></th><th>estimate</th><th>{self.confidence:.0%} interval</th>"
            f"<th>over</th></tr></thead><tbody>{body}</tbody></table>"
            f"<p>{cell_html(self.describe())}</p></div>"
        )

    def _rows(self) -> list[tuple[str, float, float, float, str]]:
        judge, human = self.judge_only, self.human_only
        return [
            (
                f"{self.method} (λ = {self.lam:.3f})",
                self.estimate,
                self.low,
                self.high,
                f"{self.n_labels} labels + judge on {self.n_judged} samples",
            ),
            ("judge only", judge.estimate, judge.low, judge.high, f"{judge.n} judged samples"),
            ("labels only", human.estimate, human.low, human.high, f"{human.n} labels"),
        ]


def _ratio(width: float, other: float) -> str:
    if other == 0.0 or width == 0.0 or math.isnan(other) or math.isnan(width):
        return "not comparable with"
    ratio = width / other
    if ratio >= 1.0:
        return f"{ratio:.2f}× as wide as"
    return f"{1.0 - ratio:.0%} narrower than"
