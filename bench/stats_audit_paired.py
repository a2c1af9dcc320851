"""Simulation audit of every paired interval and test `gradewire compare` prints.

Each cell of a grid draws many pairs of runs from a known truth, compares them with the
method compare uses (`paired_difference`, which picks it: the mid-p McNemar test with
Tango's interval for 0/1 scores, the paired t otherwise, the cluster-robust CR2 t with a
cluster key) and counts:

- coverage: how often the 95% interval holds the true difference (target 95%; the
  audit's floor is 93%);
- type I error: in cells with no true difference, how often p < 0.05 (target 5%; the
  audit's ceiling is 6.5%);
- refused: how often no interval was given (with its reason in the output);
- agree: whether "the interval excludes 0" and "p < 0.05" always said the same.

The grid holds the small and awkward cases: n in {5, 10, 20, 50, 200}; 0/1 scores near 0,
near 1, with rare discordance (so most draws have no pair that differs) and identical
runs; bounded scores in [0, 1] with many zeros; 3, 5, 10 and 30 clusters of unequal size.

Run: ``python bench/stats_audit_paired.py [--reps 2000] [--out docs/methods/audit-paired.md]``.
The tests run a few cells with few repetitions (tests/eval/test_compare_audit.py).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gradewire.eval.comparing._paired_difference import paired_difference

Draw = Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray, list[str] | None, float]]

COVERAGE_FLOOR = 0.93
TYPE_I_CEILING = 0.065
SIZES = (5, 10, 20, 50, 200)
CLUSTERS = (3, 5, 10, 30)


@dataclass(frozen=True)
class Cell:
    """One case of the grid: a name, the method family, n (or clusters) and its draw."""

    family: str
    case: str
    n: str
    draw: Draw


def _binary(n: int, p11: float, p10: float, p01: float) -> Draw:
    probabilities = np.array([p11, p10, p01, 1.0 - p11 - p10 - p01])
    a_of = np.array([1.0, 1.0, 0.0, 0.0])
    b_of = np.array([1.0, 0.0, 1.0, 0.0])

    def draw(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, None, float]:
        kind = rng.choice(4, size=n, p=probabilities)
        return a_of[kind], b_of[kind], None, p01 - p10

    return draw


def _bounded(n: int, zeros_a: float, zeros_b: float, shared: float = 0.5) -> Draw:
    """Scores 0 with probability ``zeros_*``, else Beta(2, 2); pairs share draws."""

    def draw(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, None, float]:
        ua = rng.random(n)
        ub = np.where(rng.random(n) < shared, ua, rng.random(n))
        va = rng.beta(2, 2, n)
        vb = np.where(rng.random(n) < shared, va, rng.beta(2, 2, n))
        a = np.where(ua < zeros_a, 0.0, va)
        b = np.where(ub < zeros_b, 0.0, vb)
        return a, b, None, 0.5 * (zeros_a - zeros_b)

    return draw


def _clustered(
    g: int, binary: bool, effect: float, spread: float = 0.1, sizes: tuple[int, int] = (4, 16)
) -> Draw:
    """G clusters of 4 to 16 pairs; each cluster has its own level and its own effect.

    ``spread`` is how far a cluster's effect strays from ``effect`` (uniform); ``sizes``
    the range of cluster sizes (uniform).

    0/1: A is right with a cluster probability in [0.3, 0.6], B with that plus the
    cluster's effect (``effect`` ± 0.1). Bounded: scores are 0 with a cluster probability
    in [0.4, 0.8] for A, that minus the cluster's effect for B, else Beta(2, 2). The true
    difference is the mean over clusters of the pairs' expected difference, weighted by
    the expected cluster size (all sizes are equally likely: ``effect`` for 0/1, half of
    it for bounded scores).
    """

    def draw(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, list[str], float]:
        counts = rng.integers(sizes[0], sizes[1] + 1, size=g)
        labels = np.repeat(np.arange(g), counts)
        n = int(counts.sum())
        level = rng.uniform(0.3, 0.6, g) if binary else rng.uniform(0.4, 0.8, g)
        moved = effect + rng.uniform(-spread, spread, g)
        u = rng.random(n)
        ub = np.where(rng.random(n) < 0.5, u, rng.random(n))
        if binary:
            a = (u < level[labels]).astype(float)
            b = (ub < (level + moved)[labels]).astype(float)
            truth = effect
        else:
            va = rng.beta(2, 2, n)
            vb = np.where(rng.random(n) < 0.5, va, rng.beta(2, 2, n))
            a = np.where(u < level[labels], 0.0, va)
            b = np.where(ub < (level - moved)[labels], 0.0, vb)
            truth = 0.5 * effect
        return a, b, [str(c) for c in labels], truth

    return draw


def grid(sizes: Sequence[int] = SIZES, clusters: Sequence[int] = CLUSTERS) -> list[Cell]:
    """Every cell of the audit."""
    cells = []
    binary_cases = [
        ("0/1 near 0.5, no difference", (0.35, 0.15, 0.15)),
        ("0/1 near 0.5, +10 points", (0.35, 0.10, 0.20)),
        ("0/1 near 1, no difference", (0.90, 0.03, 0.03)),
        ("0/1 near 0, +2 points", (0.04, 0.02, 0.04)),
        ("0/1 rare discordance, +2 points", (0.95, 0.00, 0.02)),
        ("0/1 identical runs", (0.5, 0.0, 0.0)),
    ]
    for case, (p11, p10, p01) in binary_cases:
        for n in sizes:
            cells.append(Cell("0/1 pairs", case, str(n), _binary(n, p11, p10, p01)))
    bounded_cases = [
        ("bounded, 60% zeros, no difference", (0.6, 0.6)),
        ("bounded, 60% zeros in A, 45% in B", (0.6, 0.45)),
        ("bounded, 90% zeros, no difference", (0.9, 0.9)),
    ]
    for case, (za, zb) in bounded_cases:
        for n in sizes:
            cells.append(Cell("bounded scores", case, str(n), _bounded(n, za, zb)))
    for binary in (True, False):
        family = "0/1 clustered" if binary else "bounded clustered"
        for effect, label in ((0.0, "no difference"), (0.1, "an effect")):
            for g in clusters:
                cells.append(Cell(family, label, f"{g} clusters", _clustered(g, binary, effect)))
        for effect, label in (
            (0.0, "no difference, unlike clusters"),
            (0.1, "an effect, unlike clusters"),
        ):
            for g in clusters:
                draw = _clustered(g, binary, effect, spread=0.3, sizes=(2, 40))
                cells.append(Cell(family, label, f"{g} clusters", draw))
    return cells


@dataclass(frozen=True)
class Figures:
    """What the audit measured in one cell."""

    cell: Cell
    method: str
    coverage: float
    type_i: float | None
    refused: float
    agree: bool


def run_cell(cell: Cell, reps: int, seed: int) -> Figures:
    """Draw ``reps`` comparisons of one cell and measure them."""
    rng = np.random.default_rng(seed)
    covered = given = rejected = refused = disagreements = 0
    null = True
    methods: set[str] = set()
    for rep in range(reps):
        a, b, clusters, truth = cell.draw(rng)
        null = null and truth == 0.0
        result = paired_difference(a, b, clusters=clusters, n_resamples=1000, seed=rep)
        methods.add(result.method)
        if not math.isfinite(result.low):
            refused += 1
            continue
        given += 1
        covered += result.low <= truth <= result.high
        rejected += result.p_value < 0.05
        disagreements += (result.low > 0 or result.high < 0) != (result.p_value < 0.05)
    return Figures(
        cell,
        " / ".join(sorted(methods)),
        covered / given if given else math.nan,
        rejected / reps if null else None,
        refused / reps,
        disagreements == 0,
    )


def audit(cells: Sequence[Cell], reps: int, seed: int = 2026) -> list[Figures]:
    """Every cell measured, each from its own seed."""
    return [run_cell(cell, reps, seed + i) for i, cell in enumerate(cells)]


def flagged(figures: Figures) -> bool:
    """Whether the cell breaks the audit's floor (coverage) or ceiling (type I error)."""
    low = math.isfinite(figures.coverage) and figures.coverage < COVERAGE_FLOOR
    high = figures.type_i is not None and figures.type_i > TYPE_I_CEILING
    return low or high


def markdown(rows: Sequence[Figures], reps: int, seconds: float) -> str:
    """The audit as a Markdown table, a row per cell."""
    lines = [
        "# Audit of the paired intervals and tests of `gradewire compare`",
        "",
        "Generated by `python bench/stats_audit_paired.py` "
        f"({reps} simulated comparisons per cell, {seconds:.0f} s); do not edit by hand.",
        "",
        "Each row draws pairs of runs from a known truth and compares them with the method "
        "compare uses. *Coverage*: how often the 95% interval held the true difference "
        f"(floor {COVERAGE_FLOOR:.0%}). *Type I*: in cells with no true difference, how "
        f"often p < 0.05 (ceiling {TYPE_I_CEILING:.1%}). *Refused*: how often no interval "
        "was given (every pair had the same difference; the output says so). *Agree*: the "
        "interval excluded 0 exactly when p < 0.05, in every draw. Cells marked ⚠ break "
        "the floor or the ceiling; the output warns there (see the notes below).",
        "",
        "Methods: **mid-p McNemar test, Tango score interval** (0/1 scores); **paired t "
        "test and interval** (other scores); **cluster-robust t (CR2, Bell–McCaffrey "
        "degrees of freedom)** with a cluster key. 0/1 clustered cells: A right with a "
        "cluster probability in [0.3, 0.6], B that plus 0.1 ± 0.1 per cluster; bounded "
        "clustered: scores 0 with a cluster probability in [0.4, 0.8], else Beta(2, 2); 4 "
        "to 16 pairs per cluster. *Unlike clusters*: each cluster's effect strays ± 0.3 "
        "(not ± 0.1) and clusters hold 2 to 40 pairs.",
        "",
        "| family | case | n | method | coverage | type I | refused | agree | |",
        "|---|---|---|---|---:|---:|---:|---|---|",
    ]
    for f in rows:
        type_i = "–" if f.type_i is None else f"{f.type_i:.1%}"
        coverage = "–" if not math.isfinite(f.coverage) else f"{f.coverage:.1%}"
        lines.append(
            f"| {f.cell.family} | {f.cell.case} | {f.cell.n} | {f.method} | {coverage} | "
            f"{type_i} | {f.refused:.1%} | {'yes' if f.agree else 'NO'} | "
            f"{'⚠' if flagged(f) else ''} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, default=None, help="write the Markdown table here")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = audit(grid(), args.reps, args.seed)
    text = markdown(rows, args.reps, time.perf_counter() - start)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
