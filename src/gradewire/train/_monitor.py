"""RewardMonitor: reward-health signals turned into alerts, step by step, from logged figures.

The monitor reads only the flat dicts a `RewardLogger` logs (the same a JSONL file holds),
so it runs live inside the logger and the callbacks, and again on a finished run's history
(``gradewire health RUN``) with the same result.

The rules, each raised at most once per grader and signal (a rule's later firings would
only repeat the first):

``gold_gap`` (needs a gold reference, ``RewardLogger(gold=...)``)
    The gold reference falls behind what the training reward predicts, and stops
    rising: the test of `gradewire.train._gold_lag` (the gold's mean over each recent
    segment of 8 to 60 steps against the line ``gold = a + b * proxy`` fitted on up to
    200 steps before it, in standard errors from the residual's long-run variance, the
    most negative over the segments whose gold is not rising) at ``-threshold`` or
    below for ``persistence`` steps in a row. On the per-step gold, the share's luck of
    the draw is first taken out with the regression estimator (the gold share's proxy
    mean against the whole batch's). When the training reward rose over that segment,
    the sentence says the reward is being hacked; when it did not, that training is
    degrading. ``threshold`` 3.5 and ``persistence`` 3 were tuned on simulated runs of
    300 steps (``gradewire.train._replays``: 512 completions a step, a quarter of the
    prompts gold-graded; clean seeds 7000-7099, hacked seeds 8000-8039 of each kind)
    for the most hacked runs alerting within 10% of the run's steps after the gold's
    peak at a clean false-alarm rate of at most 5% per run: 1 of those 100 clean runs
    raised it. On fresh seeds (clean 30000-30199, hacked 31000-31039) 1 of 200 clean
    runs raised it (0.5%; one-sided 95% Clopper-Pearson bound 2.3%); of 160 hacked runs
    (40 of each kind) 113 alerted first within 10% of the steps after the gold's peak
    and 18 before it, 9 of those in the 9 slow-drift runs whose expected gold never
    falls within the run (its peak is the last step); the rule it replaced (one step
    past 4.5 with independent-noise errors) gave 98 and 18 on the same seeds.
    ``bench/reward_health.py`` (clean seeds 5000-5199, hacked 6000-6039) gave 2 of 200
    clean runs, and 127 of 160 within 10% and 18 before the peak (11 of those in the
    11 slow-drift runs whose gold never falls). Off the tuned shape it trades the
    other way: on runs of 600 steps (clean seeds 41000-41059, hacked 41500-41519 of
    the plain, length and dominant kinds) 3 of 60 clean runs raised it (the old rule:
    0), and of 60 hacked runs 51 alerted within 10% and 7 before the peak (the old
    rule: 50 and 1); with 32 prompts a step (64 gold samples; seeds 40000-40099 and
    40500-40519) 4 of 100 clean runs (old: 0), and 30 of 60 within 10%, none before
    (old: 24, none). ``threshold=4.0`` gave 1 of 60, 52 and 1 on the long runs, but 18
    of 60 within 10% with the small gold share. The false-alarm rate
    grows with the run's length (a scan over more steps), slowly, as the maximum of a
    scan does. The null hypothesis is "the gold follows the training reward along a
    line", so a run whose gold flattens while the training reward goes on rising (a
    judge that keeps paying for what the verifier no longer rewards) raises it too,
    which is the point, and why such a run can alert before its gold's (late) peak.
``length_drift``
    Completion length has grown by at least ``length_drift_sd`` of its early per-sample
    spread over the last ``window`` steps, the growth is beyond the noise (the largest
    least-squares slope over the segments of 10 to ``scan`` steps that end now, in
    standard errors with von Neumann's noise estimate, passes ``length_threshold``), and the
    reward is correlated with length (mean ``length_corr`` of the last ``window`` steps at
    least ``length_corr``): the reward pays for length.
``dominance`` (a `CombinedGrader`)
    One component's share of the total's variance, averaged over the last ``window``
    steps, reached ``dominance_share`` (default 0.5: the larger part) after having been
    under half of that in the first ``warmup`` steps: a part that carried little of the
    reward's signal now carries most of it.
``unscored``
    The share of samples left without a reward (abstentions, errors, timeouts) over the
    last ``window`` steps is above ``max_unscored_rate`` with a one-sided 99.9% Wilson
    bound (so a few failures in a small window never fire it).

Signals added to each step's logs (under ``<root>/health/``): ``gold_gap`` (the training
reward's rise minus the gold's, each in its own early per-sample standard deviations, on
the samples graded by both), ``gold_gap_trend`` (its least-squares slope per step over
the last ``window`` steps), ``gold_lag_z`` (the gold-lag scan statistic), ``length_drift``,
``unscored_rate``, ``error_rate`` and ``timeout_rate``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradewire.core import GradewireError, InvalidInputError, LogValue
from gradewire.train._gold_lag import GoldLag

__all__ = ["Alert", "RewardHealthError", "RewardMonitor", "check_on_alert"]

_SCORE_MEAN = "/score/mean"
_SCORE_COUNT = "/score/count"
_WILSON_Z = 3.090232306167813  # one-sided 99.9%
_MIN_SEGMENT = 10
_TUNED_STEPS = 300  # the run length the gold-lag threshold was tuned on


@dataclass(frozen=True)
class Alert:
    """One alert: where, what, and the sentence a person acts on.

    Attributes:
        step: The step at which the rule fired.
        grader: The grader's key in the logs (``rewards/judge``).
        signal: The rule: ``gold_gap``, ``length_drift``, ``dominance`` or ``unscored``.
        message: What was seen and what to do.
        value: The statistic that crossed its threshold.
    """

    step: int
    grader: str
    signal: str
    message: str
    value: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "step": self.step,
            "grader": self.grader,
            "signal": self.signal,
            "message": self.message,
            "value": self.value,
        }

    def __str__(self) -> str:
        return f"step {self.step} [{self.signal}] {self.message}"


class RewardHealthError(GradewireError):
    """Raised at a step whose logs raised alerts, when ``on_alert="raise"``.

    The step was logged first (its alert count reaches the trackers). Attributes:
    ``alerts``, the alerts raised at that step.
    """

    def __init__(self, alerts: Sequence[Alert]) -> None:
        self.alerts = list(alerts)
        lines = "\n".join(f"- {alert}" for alert in self.alerts)
        super().__init__(
            f"reward health: {len(self.alerts)} alert(s) raised, and on_alert='raise' stops "
            f"training here:\n{lines}\nPass on_alert='warn' to log alerts and train on."
        )


def check_on_alert(value: object) -> str:
    """``on_alert``: ``"warn"`` or ``"raise"``."""
    if value not in ("warn", "raise"):
        raise InvalidInputError(
            f"on_alert must be 'warn' (log the alert and train on) or 'raise' (stop "
            f"training), not {value!r}"
        )
    return str(value)


@dataclass
class _Track:
    """One grader's history, as the rules need it."""

    steps: list[int] = field(default_factory=list)
    proxy: list[float] = field(default_factory=list)
    gold_steps: list[int] = field(default_factory=list)
    gold: list[float] = field(default_factory=list)
    gold_proxy: list[float] = field(default_factory=list)
    gold_proxy_var: list[float] = field(default_factory=list)
    gold_var: list[float] = field(default_factory=list)
    gold_full_proxy: list[float] = field(default_factory=list)
    lag: GoldLag = field(default_factory=GoldLag)
    lagging: int = 0
    gaps: list[float] = field(default_factory=list)
    length_steps: list[int] = field(default_factory=list)
    lengths: list[float] = field(default_factory=list)
    length_sd: list[float] = field(default_factory=list)
    length_sq_diff: float = 0.0
    length_corr: deque[float] = field(default_factory=lambda: deque(maxlen=1))
    dominance: dict[str, list[float]] = field(default_factory=dict)
    unscored: deque[tuple[int, int, int, int]] = field(default_factory=lambda: deque(maxlen=1))
    fired: set[str] = field(default_factory=set)


class RewardMonitor:
    """Turns reward-health signals into alerts, one logged step at a time.

    Feed it each step's logs in order (what `RewardLogger.step` returns, or a JSONL
    file's steps through `replay`); it returns the alerts raised at that step and keeps
    them all in `alerts`. It finds the graders by their ``<root>/score/count`` keys, so it
    works on any run gradewire logged, under any prefix. The rules and their tuning are
    in this module's docs.

    Args:
        threshold: The alarm level (standard errors) of the gold-lag test (default
            tuned on simulated runs of 300 steps; see the module docs).
        persistence: Steps in a row the gold-lag statistic must stay past ``threshold``
            before ``gold_gap`` fires.
        length_threshold: The alarm level (standard errors) of the length test's slope.
        warmup: Steps that set the references (scales, early length, early dominance)
            before any rule may fire.
        window: Steps of the moving windows (gap trend, length drift, dominance, rates).
        scan: The longest segment (steps) the length test looks back over.
        length_drift_sd: Length growth, in early per-sample standard deviations, that the
            length rule needs.
        length_corr: The reward-length correlation the length rule needs.
        dominance_share: The variance share of one component that raises ``dominance``
            (when it started under half of it).
        max_unscored_rate: The share of samples without a reward that raises ``unscored``.
    """

    def __init__(
        self,
        *,
        threshold: float = 3.5,
        persistence: int = 3,
        length_threshold: float = 4.5,
        warmup: int = 10,
        window: int = 10,
        scan: int = 100,
        length_drift_sd: float = 1.0,
        length_corr: float = 0.3,
        dominance_share: float = 0.5,
        max_unscored_rate: float = 0.05,
    ) -> None:
        for name, value in (
            ("threshold", threshold),
            ("length_threshold", length_threshold),
            ("length_drift_sd", length_drift_sd),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise InvalidInputError(f"{name} must be a number above 0, not {value!r}")
        if isinstance(persistence, bool) or not isinstance(persistence, int) or persistence < 1:
            raise InvalidInputError(f"persistence must be an int >= 1 (steps), not {persistence!r}")
        for name, count in (("warmup", warmup), ("window", window), ("scan", scan)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 2:
                raise InvalidInputError(f"{name} must be an int >= 2 (steps), not {count!r}")
        if scan < _MIN_SEGMENT:
            raise InvalidInputError(f"scan must be at least {_MIN_SEGMENT} steps, not {scan}")
        for name, share in (
            ("length_corr", length_corr),
            ("dominance_share", dominance_share),
            ("max_unscored_rate", max_unscored_rate),
        ):
            if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share < 1:
                raise InvalidInputError(f"{name} must be between 0 and 1, not {share!r}")
        self.threshold = float(threshold)
        self.persistence = persistence
        self.length_threshold = float(length_threshold)
        self.warmup = warmup
        self.window = window
        self.scan = scan
        self.length_drift_sd = float(length_drift_sd)
        self.length_corr = float(length_corr)
        self.dominance_share = float(dominance_share)
        self.max_unscored_rate = float(max_unscored_rate)
        self.alerts: list[Alert] = []
        self.signals: dict[str, float] = {}
        """The signals derived at the last `observe` (flat keys, as logged)."""
        self._tracks: dict[str, _Track] = {}
        self._last_step: int | None = None

    def observe(self, step: int, logs: Mapping[str, LogValue]) -> list[Alert]:
        """Take one step's logs; return the alerts raised at it (also added to `alerts`)."""
        if isinstance(step, bool) or not isinstance(step, int):
            raise InvalidInputError(f"step must be an int, not {step!r}")
        if self._last_step is not None and step < self._last_step:
            raise InvalidInputError(
                f"step {step} comes after step {self._last_step}; feed the steps in order"
            )
        self._last_step = step
        self.signals = {}
        raised: list[Alert] = []
        for root in _roots(logs):
            track = self._tracks.get(root)
            if track is None:
                track = self._tracks[root] = _Track(
                    length_corr=deque(maxlen=self.window),
                    unscored=deque(maxlen=self.window),
                )
            raised.extend(self._observe_root(root, track, step, logs))
        self.alerts.extend(raised)
        return raised

    def replay(self, steps: Iterable[tuple[int, Mapping[str, LogValue]]]) -> list[Alert]:
        """Feed a run's ``(step, logs)`` pairs in order; return every alert raised."""
        before = len(self.alerts)
        for step, logs in steps:
            self.observe(step, logs)
        return self.alerts[before:]

    def _observe_root(
        self, root: str, track: _Track, step: int, logs: Mapping[str, LogValue]
    ) -> list[Alert]:
        out: list[Alert] = []
        health = f"{root}/health"
        proxy = _number(logs, f"{root}{_SCORE_MEAN}")
        if proxy is not None:
            track.steps.append(step)
            track.proxy.append(proxy)
        self._rates(root, track, logs)
        pairs = _number(logs, f"{health}/gold/pairs")
        gold = _number(logs, f"{health}/gold/gold_mean")
        if pairs is not None and gold is not None and pairs >= 2 and proxy is not None:
            # The regression estimator of the whole batch's gold mean: the gold share's
            # luck of the draw (easy or hard prompts) shows in its proxy mean against the
            # batch's, and is taken out (about a fifth of the noise on the replays).
            slope = _number(logs, f"{health}/gold/corr")
            gsd = _number(logs, f"{health}/gold/gold_std")
            psd = _number(logs, f"{health}/gold/proxy_std")
            shared = _number(logs, f"{health}/gold/proxy_mean")
            if slope is not None and gsd is not None and psd and shared is not None:
                gold += slope * gsd / psd * (proxy - shared)
            track.gold_steps.append(step)
            track.gold.append(gold)
            track.gold_full_proxy.append(proxy)
            track.gold_proxy.append(_number(logs, f"{health}/gold/proxy_mean") or 0.0)
            track.gold_proxy_var.append((_number(logs, f"{health}/gold/proxy_std") or 0.0) ** 2)
            track.gold_var.append((_number(logs, f"{health}/gold/gold_std") or 0.0) ** 2)
            track.lag.add(gold, proxy)
            out.extend(self._gold(root, track, step))
        length = _number(logs, f"{health}/length_mean")
        if length is not None:
            if track.lengths:
                track.length_sq_diff += (length - track.lengths[-1]) ** 2
            track.length_steps.append(step)
            track.lengths.append(length)
            track.length_sd.append(_number(logs, f"{health}/length_std") or 0.0)
        corr = _number(logs, f"{root}/score/length_corr")
        if corr is not None:
            track.length_corr.append(corr)
        if length is not None:
            out.extend(self._length(root, track, step))
        prefix = f"{health}/dominance/"
        shares = {k[len(prefix) :]: v for k, v in logs.items() if k.startswith(prefix) and _real(v)}
        if shares:
            for component, share in shares.items():
                track.dominance.setdefault(component, []).append(float(share))  # type: ignore[arg-type]
            out.extend(self._dominance(root, track, step))
        out.extend(self._unscored(root, track, step))
        return out

    def _rates(self, root: str, track: _Track, logs: Mapping[str, LogValue]) -> None:
        scored = _number(logs, f"{root}/score/count")
        if scored is None:
            return
        abstained = int(_number(logs, f"{root}/score/abstained_count") or 0)
        errors = int(_number(logs, f"{root}/score/error_count") or 0)
        timeouts = int(_number(logs, f"{root}/score/timeout_count") or 0)
        total = int(scored) + abstained + errors
        track.unscored.append((abstained + errors, errors, timeouts, total))
        if total:
            health = f"{root}/health"
            self.signals[f"{health}/unscored_rate"] = (abstained + errors) / total
            self.signals[f"{health}/error_rate"] = errors / total
            self.signals[f"{health}/timeout_rate"] = timeouts / total

    def _gold(self, root: str, track: _Track, step: int) -> list[Alert]:
        health = f"{root}/health"
        n = len(track.gold)
        if n < self.warmup:
            return []
        w = self.warmup
        p0 = float(np.mean(track.gold_proxy[:w]))
        g0 = float(np.mean(track.gold[:w]))
        sp = math.sqrt(float(np.mean(track.gold_proxy_var[:w])))
        sg = math.sqrt(float(np.mean(track.gold_var[:w])))
        if sp > 0 and sg > 0:
            gap = (track.gold_proxy[-1] - p0) / sp - (track.gold[-1] - g0) / sg
            track.gaps.append(gap)
            self.signals[f"{health}/gold_gap"] = gap
            recent = track.gaps[-self.window :]
            if len(recent) >= 3:
                xs = np.asarray(track.gold_steps[-len(recent) :], dtype=np.float64)
                self.signals[f"{health}/gold_gap_trend"] = _slope(xs, np.asarray(recent))
        result = track.lag.test()
        if result is None:
            return []
        self.signals[f"{health}/gold_lag_z"] = result.z
        # Persistence: a lag must hold for `persistence` steps in a row, so one step's
        # dip (a hard batch the shared noise did not explain) does not raise it alone.
        track.lagging = track.lagging + 1 if result.z <= -self._bar(n) else 0
        if track.lagging < self.persistence or "gold_gap" in track.fired:
            return []
        track.fired.add("gold_gap")
        i = result.start
        since = track.gold_steps[i]
        best = int(np.argmax(track.gold[: i + 1]))
        peak_step = track.gold_steps[best]
        behind = result.expected - result.observed
        rise = track.gold_full_proxy[-1] - track.gold_full_proxy[i]
        context = self._context(root, track)
        if rise > 0:
            what = (
                f"while the training reward rose {rise:.3g}: the policy is likely exploiting "
                "the training reward."
            )
        else:
            what = (
                f"and the training reward did not rise ({rise:+.3g}): training is degrading "
                "rather than hacking the reward; check the learning rate and the KL term."
            )
        message = (
            f"{root}: since step {since} the gold reference ({result.observed:.3g} on "
            f"average) fell {behind:.3g} behind what the training reward predicts "
            f"({result.expected:.3g}; t = {result.z:.1f}) and stopped rising, {what}{context} "
            f"Read the completions logged since step {since}, and stop or roll back to the "
            f"checkpoint nearest step {peak_step}, where the gold was best."
        )
        return [Alert(step, root, "gold_gap", message, result.z)]

    def _bar(self, steps: int) -> float:
        """The gold-lag alarm level after ``steps`` steps.

        ``threshold`` up to the 300 steps it was tuned on, then grown as the maximum of
        a scan grows, by ``sqrt(log(steps) / log(300))``.
        """
        return self.threshold * math.sqrt(max(1.0, math.log(steps) / math.log(_TUNED_STEPS)))

    def _context(self, root: str, track: _Track) -> str:
        parts: list[str] = []
        drift = self.signals.get(f"{root}/health/length_drift")
        if drift is not None and drift >= 0.5:
            parts.append(f" Completion length grew {drift:.2g} early standard deviations.")
        for component, shares in track.dominance.items():
            recent = shares[-self.window :]
            share = float(np.mean(recent))
            if share >= 0.6:
                parts.append(f" {component} carries {share:.0%} of the reward's variance.")
        return "".join(parts)

    def _length(self, root: str, track: _Track, step: int) -> list[Alert]:
        n = len(track.lengths)
        if n < self.warmup + 1:
            return []
        w = self.warmup
        sd0 = float(np.mean(track.length_sd[:w]))
        if sd0 <= 0:
            return []
        early = float(np.mean(track.lengths[:w]))
        drift = (float(np.mean(track.lengths[-self.window :])) - early) / sd0
        self.signals[f"{root}/health/length_drift"] = drift
        if "length_drift" in track.fired or drift < self.length_drift_sd:
            return []
        if len(track.length_corr) < self.window:
            return []
        corr = float(np.mean(track.length_corr))
        if corr < self.length_corr:
            return []
        sigma2 = track.length_sq_diff / (2 * (n - 1))
        scan = _scan(track.length_steps, track.lengths, sigma2, self.scan, lowest=False)
        if scan is None or scan[0] < self.length_threshold:
            return []
        track.fired.add("length_drift")
        message = (
            f"{root}: completion length grew {drift:.2g} early standard deviations (from "
            f"{early:.4g} to {track.lengths[-1]:.4g}; slope t = {scan[0]:.1f}) and the reward "
            f"follows it (reward-length correlation {corr:.2f}): the reward pays for length. "
            "Read the longest completions; cap or penalise length, or fix the grader, before "
            "it becomes the policy."
        )
        return [Alert(step, root, "length_drift", message, drift)]

    def _dominance(self, root: str, track: _Track, step: int) -> list[Alert]:
        if "dominance" in track.fired:
            return []
        for component, shares in track.dominance.items():
            if len(shares) < self.warmup + self.window:
                continue
            early = float(np.mean(shares[: self.warmup]))
            recent = float(np.mean(shares[-self.window :]))
            if early < self.dominance_share / 2 and recent >= self.dominance_share:
                track.fired.add("dominance")
                message = (
                    f"{root}: the component {component} now carries {recent:.0%} of the "
                    f"reward's variance (it carried {early:.0%} in the first {self.warmup} "
                    "steps): the policy is optimising that part alone. Read completions "
                    f"that score high on {component}; check that part for a shortcut, or "
                    "lower its weight."
                )
                return [Alert(step, root, "dominance", message, recent)]
        return []

    def _unscored(self, root: str, track: _Track, step: int) -> list[Alert]:
        if "unscored" in track.fired or not track.unscored:
            return []
        unscored = sum(u for u, _, _, _ in track.unscored)
        errors = sum(e for _, e, _, _ in track.unscored)
        timeouts = sum(t for _, _, t, _ in track.unscored)
        total = sum(n for _, _, _, n in track.unscored)
        if total == 0 or _wilson_lower(unscored, total) <= self.max_unscored_rate:
            return []
        track.fired.add("unscored")
        rate = unscored / total
        message = (
            f"{root}: {rate:.1%} of the samples of the last {len(track.unscored)} steps got no "
            f"reward ({errors} errors, of them {timeouts} timeouts; {unscored - errors} "
            f"abstentions; more than {self.max_unscored_rate:.0%} at 99.9% confidence). "
            "Those samples train on nothing: read the grader's errors (score/error_count, "
            "its sample table) and fix the grader, its endpoint or the timeout."
        )
        return [Alert(step, root, "unscored", message, rate)]


def _roots(logs: Mapping[str, LogValue]) -> list[str]:
    # score/count is logged even when no sample got a score (score/mean is not then).
    return [
        key[: -len(_SCORE_COUNT)]
        for key in logs
        if key.endswith(_SCORE_COUNT) and "/health/" not in key and key != _SCORE_COUNT[1:]
    ]


def _real(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _number(logs: Mapping[str, LogValue], key: str) -> float | None:
    value = logs.get(key)
    return float(value) if _real(value) else None  # type: ignore[arg-type]


def _slope(xs: np.ndarray[Any, Any], ys: np.ndarray[Any, Any]) -> float:
    dx = xs - xs.mean()
    sxx = float(dx @ dx)
    return float(dx @ (ys - ys.mean())) / sxx if sxx > 0 else 0.0


def _scan(
    steps: list[int], values: list[float], sigma2: float, longest: int, *, lowest: bool
) -> tuple[float, int] | None:
    """The most extreme slope t-statistic over segments ending now, and that segment's length.

    ``lowest``: the most negative (a fall), else the most positive (a rise). Segments are
    ``_MIN_SEGMENT`` to ``longest`` points long; sigma2 is the per-step noise variance.
    """
    if sigma2 <= 0 or len(values) < _MIN_SEGMENT:
        return None
    k = min(longest, len(values))
    x = np.asarray(steps[-k:], dtype=np.float64)[::-1]
    y = np.asarray(values[-k:], dtype=np.float64)[::-1]
    x = x - x[0]
    n = np.arange(1, k + 1, dtype=np.float64)
    sx, sy = np.cumsum(x), np.cumsum(y)
    sxx, sxy = np.cumsum(x * x), np.cumsum(x * y)
    cxx = sxx - sx * sx / n
    cxy = sxy - sx * sy / n
    usable = np.arange(k) >= _MIN_SEGMENT - 1
    usable &= cxx > 0
    if not usable.any():
        return None
    z = np.full(k, np.nan)
    z[usable] = (cxy[usable] / cxx[usable]) / np.sqrt(sigma2 / cxx[usable])
    index = int(np.nanargmin(z) if lowest else np.nanargmax(z))
    return float(z[index]), index + 1


def _wilson_lower(successes: int, n: int) -> float:
    p = successes / n
    z2 = _WILSON_Z * _WILSON_Z
    centre = p + z2 / (2 * n)
    spread = _WILSON_Z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return (centre - spread) / (1 + z2 / n)
