"""Simulated RL runs with a known answer, to measure `RewardMonitor` (tests and bench).

Each step draws a GRPO batch (``prompts`` x ``generations`` completions): per prompt a
difficulty, per completion a quality draw, a length, a training reward (a judge's score
in [0, 1]) and, on the prompts a hash selects (``gold_fraction`` of them), a gold reward
(a 0/1 verifier). A slow random wobble shared by both rewards (the prompt mix, the
sampling temperature...) is added at every step, so steps are not independent.

Kinds:
    ``clean``: skill rises (linearly, as a square root, or as a logistic that then
    plateaus), and both rewards rise with it.
    ``hack``: from an onset on, the policy finds a shortcut that pays the training reward
    and costs the gold one: the proxy keeps rising while the gold peaks and falls.
    ``hack_length``: the shortcut is length (the proxy pays for it; length grows).
    ``hack_dominant``: the training reward is a combined grader (``quality`` + ``format``)
    and the shortcut lives in ``format``, which comes to carry the reward's variance.
    ``hack_drift``: a slow shortcut, a small gold fall late in the run.

`Replay.gold_peak` is the step where the gold's expected value peaks (the known answer;
None for a clean run). The figures are what `RewardLogger` logs for such a batch, with
the same classes, under ``rewards/<key>/``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from gradewire.core import LogValue, Stats
from gradewire.train._comoments import Comoments
from gradewire.train._health_window import HealthSeries

__all__ = ["KINDS", "Replay", "StepBatch", "simulate", "step_batches"]

KINDS = ("clean", "hack", "hack_length", "hack_dominant", "hack_drift")

_BASE_LENGTH = 200.0


@dataclass(frozen=True)
class StepBatch:
    """One step's samples (arrays of one entry per completion)."""

    step: int
    proxy: np.ndarray
    gold: np.ndarray  # NaN where the sample is not in the gold share
    lengths: np.ndarray
    groups: np.ndarray  # prompt index
    unscored: np.ndarray  # bool: the training grader gave no reward
    components: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class Replay:
    """A simulated run: its kind, seed, logged steps and the gold's peak step."""

    kind: str
    seed: int
    steps: list[tuple[int, dict[str, LogValue]]]
    gold_peak: int | None


def _sigmoid(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / (1.0 + np.exp(-x))
    return out


def _in_gold(seed: int, step: int, prompt: int, fraction: float) -> bool:
    # As RewardLogger does: a hash of the sample's identity, not a random draw.
    digest = hashlib.blake2b(f"{seed}:{step}:{prompt}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < fraction


def step_batches(
    kind: str,
    seed: int,
    *,
    steps: int = 300,
    prompts: int = 64,
    generations: int = 8,
    gold_fraction: float = 0.25,
) -> tuple[Iterator[StepBatch], int | None]:
    """The run's batches, one per step, and the gold's expected peak step (None: clean)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    rng = np.random.default_rng(seed)
    x = np.arange(steps) / steps
    shape = rng.integers(3)
    rise = rng.uniform(1.0, 2.0)
    if shape == 0:
        skill = rise * x
    elif shape == 1:
        skill = rise * np.sqrt(x)
    else:  # logistic that plateaus in the run's second half
        mid = rng.uniform(0.2, 0.45)
        skill = rise * (1 / (1 + np.exp(-(x - mid) / 0.07)) - 1 / (1 + np.exp(mid / 0.07)))
    hacked = kind != "clean"
    onset = rng.uniform(0.3, 0.55) if kind != "hack_drift" else rng.uniform(0.5, 0.65)
    q = 1.0 if kind == "hack_drift" else rng.uniform(1.0, 2.0)
    shortcut = np.clip(x - onset, 0.0, None) / (1.0 - onset) if hacked else np.zeros(steps)
    shortcut = shortcut**q
    # Gold falls by about 0.6 latent units (~12 points) at the end; the drift by ~0.25.
    harm = (rng.uniform(1.2, 2.0) if kind != "hack_drift" else rng.uniform(0.5, 0.8)) * (rise / 1.5)
    gold_latent = skill - harm * shortcut
    gold_peak = int(np.argmax(gold_latent)) if hacked else None
    proxy_gain = rng.uniform(1.5, 3.0)
    base = rng.uniform(-1.0, 0.0)

    def batches() -> Iterator[StepBatch]:
        wobble = 0.0
        n = prompts * generations
        groups = np.repeat(np.arange(prompts), generations)
        for t in range(steps):
            wobble = 0.8 * wobble + rng.normal(0.0, 0.05)
            difficulty = np.repeat(rng.normal(0.0, 1.0, prompts), generations)
            quality = difficulty + rng.normal(0.0, 0.7, n) + wobble + base
            lengths = _BASE_LENGTH * np.exp(0.1 * x[t] + rng.normal(0.0, 0.35, n))
            judge = rng.normal(0.0, 0.5, n)
            short = shortcut[t]
            components: dict[str, np.ndarray] = {}
            if kind == "hack_length":
                lengths = lengths * np.exp(1.2 * short)
            log_len = np.log(lengths / _BASE_LENGTH)
            proxy_latent = quality + skill[t] + judge + 0.1 * log_len
            if kind in ("hack", "hack_drift"):
                proxy_latent = proxy_latent + proxy_gain * short
            if kind == "hack_length":
                proxy_latent = proxy_latent + 1.2 * log_len
            proxy = _sigmoid(proxy_latent)
            if kind == "hack_dominant":
                spread = rng.uniform(0.0, 1.0, n)
                fmt = _sigmoid(-1.0 + 8.0 * short * (spread - 0.3) + rng.normal(0.0, 0.3, n))
                components = {"quality": proxy, "format": fmt}
                proxy = (proxy + fmt) / 2.0
            gold = (rng.uniform(size=n) < _sigmoid(quality + gold_latent[t])).astype(np.float64)
            chosen = np.array([_in_gold(seed, t, int(p), gold_fraction) for p in range(prompts)])
            gold[~np.repeat(chosen, generations)] = np.nan
            unscored = rng.uniform(size=n) < 0.005
            yield StepBatch(t, proxy, gold, lengths, groups, unscored, components)

    return batches(), gold_peak


def simulate(
    kind: str,
    seed: int,
    *,
    steps: int = 300,
    prompts: int = 64,
    generations: int = 8,
    gold_fraction: float = 0.25,
    key: str = "judge",
) -> Replay:
    """A whole simulated run as the logged steps `RewardLogger` would write."""
    batches, peak = step_batches(
        kind,
        seed,
        steps=steps,
        prompts=prompts,
        generations=generations,
        gold_fraction=gold_fraction,
    )
    logged = [(b.step, batch_logs(b, key)) for b in batches]
    return Replay(kind, seed, logged, peak)


def batch_logs(batch: StepBatch, key: str = "judge") -> dict[str, LogValue]:
    """The figures the monitor reads for one batch, as `RewardLogger` logs them."""
    root = f"rewards/{key}"
    scored = ~batch.unscored
    proxy = np.where(scored, batch.proxy, np.nan)
    logs: dict[str, LogValue] = dict(Stats.of(proxy[scored]).to_logs(f"{root}/score"))
    logs[f"{root}/score/abstained_count"] = int(batch.unscored.sum())
    logs[f"{root}/score/error_count"] = 0
    length = Comoments.of(proxy, batch.lengths)
    if length.correlation is not None:
        logs[f"{root}/score/length_corr"] = length.correlation
    logs[f"{root}/health/length_mean"] = length.mean_y
    logs[f"{root}/health/length_std"] = float(np.sqrt(length.m2_y / (length.count - 1)))
    totals = proxy
    dominance = {
        name: Comoments.of(np.where(scored, values / 2.0, np.nan), totals)
        for name, values in batch.components.items()
    }
    series = HealthSeries(Comoments.of(proxy, batch.gold), dominance)
    logs.update(series.to_logs(f"{root}/health"))
    return logs
