"""Simulated coverage of the one-run mean intervals `gradewire eval` prints.

For each cell of a grid (score distribution x n, or x number of clusters), many data sets
are drawn with a known true mean; the coverage is the share of 95% intervals that hold it.
Each cell is run with the method eval uses now (`gradewire.stats._mean_interval`) and with
the one it used before (Wilson for 0/1 scores, else t; clustered 0/1 by Wilson over the
design-effect sample size, with no degrees-of-freedom correction).

Run: ``python bench/stats_audit_means.py [--reps 4000] [--out docs/methods/audit-means.md]``.
The tests run a few cells of the same grid with fewer draws (tests/eval/test_mean_audit.py).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gradewire.stats._mean_interval import (
    METHOD_NAMES,
    mean_interval,
    wilson,
)

Draw = Callable[[np.random.Generator, int], np.ndarray]
THRESHOLD = 0.93


@dataclass(frozen=True)
class Scenario:
    """A score distribution: its name, its true mean, its draw and its declared range."""

    name: str
    mean: float
    draw: Draw
    score_range: tuple[float, float] | None


def _binary(p: float) -> Scenario:
    return Scenario(
        f"0/1, p = {p}", p, lambda rng, n: (rng.random(n) < p).astype(float), (0.0, 1.0)
    )


def _zeros(share: float, declared: bool) -> Scenario:
    # A bleu-like score: zero for most samples, else anywhere in (0, 1) (Beta(2, 2)).
    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        return np.where(rng.random(n) < share, 0.0, rng.beta(2.0, 2.0, n))

    known = "declared [0, 1]" if declared else "range not declared"
    return Scenario(
        f"{share:.0%} zeros, else Beta(2,2); {known}",
        (1 - share) * 0.5,
        draw,
        (0.0, 1.0) if declared else None,
    )


def _ones(share: float) -> Scenario:
    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        return np.where(rng.random(n) < share, 1.0, rng.beta(2.0, 2.0, n))

    return Scenario(
        f"{share:.0%} ones, else Beta(2,2); declared [0, 1]",
        share + (1 - share) * 0.5,
        draw,
        (0.0, 1.0),
    )


SCENARIOS: list[Scenario] = [
    _binary(0.02),
    _binary(0.1),
    _binary(0.5),
    _binary(0.9),
    _binary(0.98),
    _zeros(0.7, True),
    _zeros(0.9, True),
    _ones(0.7),
    Scenario("Beta(5,5); declared [0, 1]", 0.5, lambda rng, n: rng.beta(5.0, 5.0, n), (0.0, 1.0)),
    Scenario("normal; range not declared", 0.0, lambda rng, n: rng.normal(size=n), None),
    _zeros(0.7, False),
]
SIZES = (5, 10, 20, 50, 200)


@dataclass(frozen=True)
class ClusterScenario:
    """Clustered scores: each cluster draws its own parameter, then its samples."""

    name: str
    mean: float
    draw: Callable[[np.random.Generator, int, int], np.ndarray]
    score_range: tuple[float, float] | None


def _clustered_binary(p: float, icc: float) -> ClusterScenario:
    # Cluster proportions from a Beta with mean p and intra-cluster correlation icc.
    a, b = p * (1 - icc) / icc, (1 - p) * (1 - icc) / icc

    def draw(rng: np.random.Generator, clusters: int, size: int) -> np.ndarray:
        rates = np.repeat(rng.beta(a, b, clusters), size)
        return (rng.random(clusters * size) < rates).astype(float)

    return ClusterScenario(f"0/1, p = {p}, ICC {icc}", p, draw, (0.0, 1.0))


def _clustered_zeros(declared: bool) -> ClusterScenario:
    # The share of zeros varies by cluster around 0.7 (Beta(7, 3)).
    def draw(rng: np.random.Generator, clusters: int, size: int) -> np.ndarray:
        shares = np.repeat(rng.beta(7.0, 3.0, clusters), size)
        n = clusters * size
        return np.where(rng.random(n) < shares, 0.0, rng.beta(2.0, 2.0, n))

    known = "declared [0, 1]" if declared else "range not declared"
    return ClusterScenario(
        f"~70% zeros by cluster; {known}", 0.3 * 0.5, draw, (0.0, 1.0) if declared else None
    )


def _clustered_normal(clusters: int, size: int, rng: np.random.Generator) -> np.ndarray:
    return np.repeat(rng.normal(size=clusters), size) + rng.normal(size=clusters * size)


def unequal_sizes(clusters: int) -> list[int]:
    """Cluster sizes from 2 to 28 (one large cluster and many small ones), summing to 10 G."""
    sizes = [2] * clusters
    sizes[0] += 10 * clusters - sum(sizes)
    # Spread the surplus of the first cluster so that no cluster holds more than 28.
    for i in range(1, clusters):
        move = min(sizes[0] - 28, 26) if sizes[0] > 28 else 0
        sizes[0] -= move
        sizes[i] += move
    return sizes


def _unequal_normal(clusters: int, size: int, rng: np.random.Generator) -> np.ndarray:
    sizes = unequal_sizes(clusters)
    return np.repeat(rng.normal(size=clusters), sizes) + rng.normal(size=sum(sizes))


CLUSTER_SCENARIOS: list[ClusterScenario] = [
    _clustered_binary(0.5, 0.1),
    _clustered_binary(0.1, 0.1),
    _clustered_zeros(True),
    ClusterScenario(
        "normal, ICC 0.5; range not declared",
        0.0,
        lambda rng, g, m: _clustered_normal(g, m, rng),
        None,
    ),
    ClusterScenario(
        "normal, ICC 0.5, unequal cluster sizes (2 to 28); range not declared",
        0.0,
        lambda rng, g, m: _unequal_normal(g, m, rng),
        None,
    ),
]
CLUSTER_COUNTS = (3, 5, 10, 30)
CLUSTER_SIZE = 10


def _cr1_stderr(values: np.ndarray, clusters: Sequence[str]) -> tuple[float, int]:
    """The CR1 cluster-robust standard error of the mean (G/(G-1) factor), and G: what main
    used before the audit (gradewire now uses CR2 with Bell-McCaffrey degrees of freedom)."""
    _, group = np.unique(np.asarray(clusters, dtype=str), return_inverse=True)
    g = int(group.max()) + 1 if values.size else 0
    if g < 2:
        return math.nan, g
    sums = np.bincount(group, weights=values - values.mean(), minlength=g)
    return math.sqrt(float(np.dot(sums, sums)) / values.size**2 * g / (g - 1)), g


def before(
    x: np.ndarray, score_range: object, clusters: Sequence[str] | None
) -> tuple[float, float, str]:
    """The interval main computed before this audit (Wilson for 0/1 scores, else t)."""
    from scipy import stats

    n = x.size
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if n > 1 else math.nan
    naive = std / math.sqrt(n) if n > 1 else math.nan
    se, df = naive, n - 1
    if clusters is not None:
        se, g = _cr1_stderr(x, clusters)
        df = g - 1
    if bool(np.all((x == 0.0) | (x == 1.0))):
        effective = float(n)
        if clusters is not None and se > 0.0 and naive > 0.0:
            effective = n * (naive / se) ** 2
        low, high = wilson(mean, effective)
        return low, high, "wilson"
    if df < 1 or not math.isfinite(se):
        return math.nan, math.nan, "t"
    half = float(stats.t.ppf(0.975, df)) * se
    return mean - half, mean + half, "t" if clusters is None else "t_clustered"


@dataclass
class Cell:
    """One cell's figures."""

    scenario: str
    size: str
    method: str
    coverage: float
    width: float
    before_method: str
    before_coverage: float
    caveat: bool
    before_width: float


def _run_cell(
    draws: Callable[[np.random.Generator], np.ndarray],
    truth: float,
    score_range: tuple[float, float] | None,
    clusters: Sequence[str] | None,
    reps: int,
    seed: int,
) -> tuple[str, float, float, str, float, bool, float]:
    rng = np.random.default_rng(seed)
    hits = old_hits = 0
    widths = old_widths = 0.0
    methods: dict[str, int] = {}
    old_methods: dict[str, int] = {}
    caveats = 0
    for _ in range(reps):
        x = draws(rng)
        found = mean_interval(x, score_range=score_range, clusters=clusters)
        hits += bool(found.low <= truth <= found.high)
        widths += found.high - found.low if math.isfinite(found.high - found.low) else 1.0
        methods[found.method] = methods.get(found.method, 0) + 1
        caveats += found.caveat is not None
        low, high, old = before(x, score_range, clusters)
        old_hits += bool(low <= truth <= high)
        old_widths += high - low if math.isfinite(high - low) else 1.0
        old_methods[old] = old_methods.get(old, 0) + 1
    main = max(methods, key=methods.__getitem__)
    old_main = max(old_methods, key=old_methods.__getitem__)
    return (
        main,
        hits / reps,
        widths / reps,
        old_main,
        old_hits / reps,
        caveats > reps // 2,
        old_widths / reps,
    )


def audit(reps: int, seed: int = 2027) -> list[Cell]:
    """Every cell of the grid."""
    cells: list[Cell] = []
    for index, scenario in enumerate(SCENARIOS):
        for n in SIZES:
            result = _run_cell(
                lambda rng, s=scenario, n=n: s.draw(rng, n),
                scenario.mean,
                scenario.score_range,
                None,
                reps,
                seed + 1000 * index + n,
            )
            cells.append(Cell(scenario.name, f"n = {n}", *result))
    for index, cluster in enumerate(CLUSTER_SCENARIOS):
        for g in CLUSTER_COUNTS:
            sizes = unequal_sizes(g) if "unequal" in cluster.name else [CLUSTER_SIZE] * g
            labels = [str(c) for c, size in enumerate(sizes) for _ in range(size)]
            result = _run_cell(
                lambda rng, c=cluster, g=g: c.draw(rng, g, CLUSTER_SIZE),
                cluster.mean,
                cluster.score_range,
                labels,
                reps,
                seed + 50_000 + 1000 * index + g,
            )
            cells.append(Cell(cluster.name, f"{g} clusters, n = {len(labels)}", *result))
    return cells


def table(cells: Sequence[Cell], reps: int) -> str:
    """The grid as a Markdown page."""
    out = [
        "# Coverage of the one-run mean intervals of `gradewire eval`",
        "",
        "Generated by `bench/stats_audit_means.py` (do not edit by hand): "
        f"{reps} simulated data sets per cell, seeded, nominal level 95%. Coverage is the "
        "share of intervals that hold the true mean; its simulation error is about "
        f"±{200 * math.sqrt(0.95 * 0.05 / reps):.1f} points. A cell under "
        f"{THRESHOLD:.0%} is marked **low**; `caveat` says the interval is printed with a "
        "warning that it cannot be trusted at this n (and why).",
        "",
        "Methods (in words in `src/gradewire/stats/_mean_interval.py`):",
        "",
    ]
    out += [f"- `{key}`: {name}" for key, name in METHOD_NAMES.items() if key != "none"]
    out += [
        "",
        "`before` is the method eval used before issue 27 (Wilson for 0/1 scores, else t; "
        "clustered 0/1 by Wilson over the design-effect sample size without a degrees-of-"
        "freedom correction), on the same data sets.",
        "",
        "What the table shows. 0/1 scores: Wilson's interval, narrower, covered 89-92% at "
        "n = 5 and near rates of 0.02 or 0.98; Clopper-Pearson's exact interval holds 95% "
        "in every cell, at the price of width at small n. Scores in a declared range with "
        "many zeros (a bleu-like score): the t interval covered 90-92% at n = 10 to 50 and "
        "went outside [0, 1]; the effective-n Wilson interval holds 94-98% and stays "
        "inside. Clusters: Wilson over the design-effect sample size, with no degrees-of-"
        "freedom correction, covered 82% with 3 clusters; CR1's t interval covered 66% with "
        "3 clusters of unequal sizes. CR2 with Bell-McCaffrey degrees of freedom holds "
        "93-95% there, and the figure is printed with a caveat below 10 clusters (or 9 "
        "degrees of freedom), where a cell (10 unequal clusters) stays under 93%. A t "
        "interval of skewed scores whose range is not declared covers 92% at n = 10 to 20: "
        "it is printed with a caveat (n < 50 and skewness of 1 or more).",
        "",
        "| scores | n | method | coverage | mean width | caveat | before | before coverage "
        "| before width |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        low = " **low**" if c.coverage < THRESHOLD else ""
        old_low = " **low**" if c.before_coverage < THRESHOLD else ""
        out.append(
            f"| {c.scenario} | {c.size} | {c.method} | {c.coverage:.1%}{low} | "
            f"{c.width:.3f} | {'yes' if c.caveat else ''} | {c.before_method} | "
            f"{c.before_coverage:.1%}{old_low} | {c.before_width:.3f} |"
        )
    out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=4000)
    parser.add_argument("--out", type=Path, default=Path("docs/methods/audit-means.md"))
    args = parser.parse_args(argv)
    start = time.perf_counter()
    cells = audit(args.reps)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table(cells, args.reps), encoding="utf-8")
    for c in cells:
        moved = (
            ""
            if c.method == c.before_method and abs(c.coverage - c.before_coverage) < 1e-9
            else " *"
        )
        print(
            f"{c.scenario:45s} {c.size:20s} {c.method:12s} {c.coverage:6.1%} "
            f"(before {c.before_method:12s} {c.before_coverage:6.1%}){moved}"
            f"{' caveat' if c.caveat else ''}"
        )
    print(f"{time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
