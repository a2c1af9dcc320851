"""Every sentence compare prints agrees with its own figures, at every n (issue 27).

One test (or a few) per item: the verdict's number inside its interval, no point interval
without discordant pairs, few clusters said and corrected (and a way back to independent
pairs), slices of the cluster key, "leans" versus "goes" the other way, huge scores, the
compare page's notes and run names.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from gradewire.core import InvalidInputError
from gradewire.eval import load_run
from gradewire.eval.comparing._compare_runs import compare_runs, display_names
from gradewire.eval.comparing._paired_difference import (
    BINARY,
    CLUSTERED,
    PAIRED_T,
    paired_difference,
)
from gradewire.eval.reporting._compare_page import render_comparison
from gradewire.eval.runs._eval_run import EvalRun
from support.eval_cli import run
from support.eval_helpers import make_run

_NUMBER = r"(−?[\d.]+)"


def _sentence_figures(verdict: str) -> tuple[str, float, float, float]:
    """The direction, the number and the interval a "X is better than Y" sentence states."""
    match = re.search(
        rf"(\w) is better than (\w) on \S+ by {_NUMBER} points \(95% interval of (\w) − (\w): "
        rf"{_NUMBER} to {_NUMBER} points",
        verdict,
    )
    assert match, verdict
    better, worse, number, first, second, low, high = match.groups()
    assert (first, second) == (better, worse), verdict
    value = lambda text: float(text.replace("−", "-"))  # noqa: E731
    return better, value(number), value(low), value(high)


@pytest.mark.parametrize(("right_a", "right_b"), [(40, 30), (30, 40), (12, 19), (19, 12)])
def test_the_verdicts_number_lies_inside_its_own_interval_in_either_direction(
    tmp_path, right_a, right_b
):
    # Issue 27 item 1: A right on 40 of 40, B on 30 of 40 printed "A is better by 25.0
    # points (95% interval −40.2 to −14.0 points)": an interval of B − A.
    n = 40
    a = [1.0] * right_a + [0.0] * (n - right_a)
    b = [1.0] * right_b + [0.0] * (n - right_b)
    (g,) = compare_runs(
        make_run(tmp_path / "a", {"short": a}), make_run(tmp_path / "b", {"short": b})
    ).graders
    better, number, low, high = _sentence_figures(g.verdict)
    assert better == ("A" if right_a > right_b else "B")
    assert 0 < low <= number <= high
    assert number == pytest.approx(abs(g.diff) * 100, abs=0.05)


def test_the_issues_case_reads_a_minus_b_with_its_interval(tmp_path):
    (g,) = compare_runs(
        make_run(tmp_path / "a", {"short": [1.0] * 40}),
        make_run(tmp_path / "b", {"short": [1.0] * 30 + [0.0] * 10}),
    ).graders
    assert g.verdict.startswith(
        "A is better than B on short by 25.0 points (95% interval of A − B: 14.0 to 40.2 "
        "points; n = 40 pairs)"
    )


def test_cli_json_html_show_the_same_figures_in_the_same_units(tmp_path):
    make_run(tmp_path / "a2", {"short": [1.0] * 40})
    make_run(tmp_path / "b2", {"short": [1.0] * 30 + [0.0] * 10})
    html = tmp_path / "c.html"
    args = ("compare", str(tmp_path / "a2"), str(tmp_path / "b2"))
    done = run(*args, "--html", str(html))
    assert done.returncode == 0, done.stderr
    data = json.loads(run(*args, "--json").stdout)["graders"][0]
    page = html.read_text()
    detectable = f"{100 * data['detectable']:.1f} pts"
    interval = f"[{100 * data['ci_low']:.1f} pts, {100 * data['ci_high']:.1f} pts]"
    assert detectable in done.stdout
    assert detectable in page
    assert interval in done.stdout.replace("−", "-")
    assert interval.replace("-", "−") in page
    assert data["points"] is True
    # The page title names A first, as the page and the terminal do.
    assert "<title>gradewire compare: a2 (A) vs b2 (B)</title>" in page
    assert data["method"] == BINARY
    assert BINARY in done.stdout
    assert BINARY in page


def test_no_discordant_pair_in_a_slice_is_not_a_point_interval(tmp_path):
    # Issue 27 item 2, in a --by slice where no pair differs.
    topics = ["same"] * 10 + ["moved"] * 20
    a = [1.0, 0.0] * 5 + [0.0] * 20
    b = [1.0, 0.0] * 5 + [1.0] * 12 + [0.0] * 8
    (g,) = compare_runs(
        make_run(tmp_path / "a", {"c": a}, topics=topics),
        make_run(tmp_path / "b", {"c": b}, topics=topics),
        by="topic",
    ).graders
    same = next(s for s in g.slices if s.value == "same")
    z2 = stats.norm.ppf(0.975) ** 2
    assert (same.ci_low, same.ci_high) == pytest.approx((-z2 / (10 + z2), z2 / (10 + z2)))
    assert same.p_value == 1.0


def _clustered_runs(tmp_path, clusters=3, n=60, cluster_key_in_config=None):
    rng = np.random.default_rng(1)
    topics = [f"t{i % clusters}" for i in range(n)]
    a = (rng.random(n) < 0.5).astype(float)
    b = a.copy()
    b[rng.choice(np.where(a == 0)[0], 15, replace=False)] = 1.0
    runs = []
    for name, scores in (("a", a), ("b", b)):
        folder = tmp_path / name
        make_run(folder, {"c": list(scores)}, topics=topics)
        if cluster_key_in_config:
            config = json.loads((folder / "config.json").read_text())
            config["cluster_key"] = cluster_key_in_config
            (folder / "config.json").write_text(json.dumps(config))
        runs.append(load_run(folder))
    return runs[0], runs[1], a, b, topics


def test_three_clusters_get_a_corrected_finite_interval_and_say_how_many(tmp_path):
    # Issue 27 item 5: 3 topics gave "−100.0 to 100.0 points".
    run_a, run_b, _a, _b, _topics = _clustered_runs(tmp_path)
    (g,) = compare_runs(run_a, run_b, cluster_key="topic").graders
    assert g.method == CLUSTERED
    assert g.n_clusters == 3
    assert -1.0 < g.ci_low < g.diff < g.ci_high < 1.0
    assert g.dof == pytest.approx(2.0, abs=0.3)
    assert "only 3 clusters" in g.verdict
    assert "n = 60 pairs in 3 clusters" in g.verdict
    assert (g.ci_low > 0) == (g.p_value < 0.05)


def test_cluster_key_none_treats_pairs_as_independent_even_when_the_runs_were_clustered(
    tmp_path,
):
    _clustered_runs(tmp_path, cluster_key_in_config="topic")
    args = ("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json")
    default = json.loads(run(*args).stdout)
    assert default["cluster_key"] == "topic"
    assert default["graders"][0]["method"] == CLUSTERED
    for off in ("none", ""):
        data = json.loads(run(*args, "--cluster-key", off).stdout)
        assert data["cluster_key"] is None
        assert data["graders"][0]["method"] == BINARY
        assert data["graders"][0]["n_clusters"] is None


def test_slices_of_the_cluster_key_have_an_interval_and_say_what_it_assumes(tmp_path):
    # Issue 27 item 6: --by the cluster key gave "[–, –] –" with no reason.
    run_a, run_b, a, b, topics = _clustered_runs(tmp_path)
    (g,) = compare_runs(run_a, run_b, cluster_key="topic", by="topic").graders
    for s in g.slices:
        mask = np.array([t == s.value for t in topics])
        reference = paired_difference(a[mask], b[mask])
        assert (s.ci_low, s.ci_high, s.p_value) == (
            reference.low,
            reference.high,
            reference.p_value,
        )
        assert math.isfinite(s.ci_low)
        assert "the slice is one cluster" in s.note
        assert "treated as independent" in s.note
    done = run(
        "compare",
        str(tmp_path / "a"),
        str(tmp_path / "b"),
        "--cluster-key",
        "topic",
        "--by",
        "topic",
    )
    assert done.returncode == 0, done.stderr
    assert "[–, –]" not in done.stdout
    assert "t0: the slice is one cluster ('t0')" in done.stdout


def test_a_slice_whose_interval_includes_zero_only_leans_the_other_way(tmp_path):
    # Issue 27 item 7: "goes the other way" for a slice with interval −45.2 to 4.5.
    topics = ["big"] * 60 + ["small"] * 10
    a = [0.0] * 30 + [1.0] * 30 + [1.0] * 3 + [0.0] * 7
    b = [1.0] * 30 + [1.0] * 30 + [0.0] * 3 + [0.0] * 7
    (g,) = compare_runs(
        make_run(tmp_path / "a", {"c": a}, topics=topics),
        make_run(tmp_path / "b", {"c": b}, topics=topics),
        by="topic",
    ).graders
    small = next(s for s in g.slices if s.value == "small")
    assert g.diff > 0 > small.diff
    assert small.ci_low < 0 < small.ci_high
    assert small.flips
    assert not small.flips_clearly
    assert "1 of 2 slices leans the other way (B − A): small −30.0 points" in g.verdict
    assert "goes the other way" not in g.verdict
    html = render_comparison(
        compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b"), by="topic")
    )
    assert "leans the other way" in html
    assert "goes the other way" not in html


@pytest.mark.parametrize("scale", [1e154, 1e200, 1e300])
def test_huge_finite_scores_compare_correctly(tmp_path, scale):
    # Issue 28 item 12: scores of about 1e154 crashed compare.
    rng = np.random.default_rng(3)
    a = rng.normal(1.0, 0.3, 30)
    b = a + rng.normal(0.2, 0.3, 30)
    (g,) = compare_runs(
        make_run(tmp_path / "a", {"s": list(a * scale)}),
        make_run(tmp_path / "b", {"s": list(b * scale)}),
    ).graders
    reference = stats.ttest_rel(b, a)
    low, high = reference.confidence_interval()
    assert g.method == PAIRED_T
    assert g.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    assert (g.ci_low / scale, g.ci_high / scale) == pytest.approx((low, high), rel=1e-9)
    assert g.mean_a / scale == pytest.approx(a.mean(), rel=1e-12)


def test_differences_beyond_the_float_range_are_refused_clearly(tmp_path):
    make_run(tmp_path / "a", {"s": [-1.5e308, 1e308, 0.0]})
    make_run(tmp_path / "b", {"s": [1.5e308, -1e308, 1.0]})
    with pytest.raises(InvalidInputError, match="too large"):
        compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b"))
    done = run("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert done.returncode == 2
    assert "too large" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_page_mentions_the_bootstrap_only_when_a_judge_used_it(tmp_path):
    rng = np.random.default_rng(0)
    a, b = rng.random(20), rng.random(20)
    comparison = compare_runs(
        make_run(tmp_path / "a", {"g": a}), make_run(tmp_path / "b", {"g": b})
    )
    page = render_comparison(comparison)
    assert "resamples" not in page
    assert "Bootstrap" not in page
    assert PAIRED_T in page


def _inspect_run(name: str, task: str, model: str, log: str) -> EvalRun:
    config = {"source": "inspect", "task": task, "model": model, "log": log}
    return EvalRun(name=name, records=(), spec_hashes={}, config=config)


def test_inspect_runs_get_short_names_unique_between_them():
    log_a = "/logs/2026-12-07T10-00-00+00-00_arith_Xk3v9Qa.eval"
    log_b = "/logs/2026-12-07T11-30-00+00-00_arith_Pm2Lr7B.eval"
    a = _inspect_run(f"arith openai/m1 ({Path(log_a).name})", "arith", "openai/m1", log_a)
    b = _inspect_run(f"arith openai/m2 ({Path(log_b).name})", "arith", "openai/m2", log_b)
    assert display_names(a, b) == ("arith openai/m1", "arith openai/m2")
    same = _inspect_run(f"arith openai/m1 ({Path(log_b).name})", "arith", "openai/m1", log_b)
    assert display_names(a, same) == ("arith openai/m1 (Xk3v9Qa)", "arith openai/m1 (Pm2Lr7B)")
    plain = EvalRun(name="run", records=(), spec_hashes={})
    assert display_names(plain, plain) == ("run (A)", "run (B)")


def test_clusters_of_very_unequal_size_are_said_to_make_the_level_slip():
    # The audit's "unlike clusters" cells: the CR2 interval's level slips a little there.
    rng = np.random.default_rng(8)
    sizes = [2, 3, 40, 25, 6, 30]
    labels = [str(g) for g, size in enumerate(sizes) for _ in range(size)]
    a = rng.random(len(labels))
    b = a + rng.normal(0.05, 0.2, len(labels))
    result = paired_difference(a, b, clusters=labels)
    assert result.method == CLUSTERED
    assert any("very unequal size (2 to 40 pairs)" in w for w in result.warnings)
    alike = [str(i % 6) for i in range(len(labels))]
    assert not any("unequal" in w for w in paired_difference(a, b, clusters=alike).warnings)


def test_the_detectable_difference_with_few_clusters_uses_the_tests_t_quantiles(tmp_path):
    run_a, run_b, _, _, _ = _clustered_runs(tmp_path)
    (g,) = compare_runs(run_a, run_b, cluster_key="topic").graders
    expected = (stats.t.ppf(0.975, g.dof) + stats.t.ppf(0.8, g.dof)) * g.stderr
    assert g.detectable == pytest.approx(expected, rel=1e-9)
    # At least as large as the interval's half-width: a difference the test cannot see is
    # never called detectable.
    assert g.detectable > (g.ci_high - g.ci_low) / 2


def test_clustered_pairs_that_never_differ_still_get_tangos_interval():
    a = [1.0, 0.0] * 10
    labels = [str(i % 4) for i in range(20)]
    result = paired_difference(a, a, clusters=labels)
    z2 = stats.norm.ppf(0.975) ** 2
    assert (result.low, result.high) == pytest.approx((-z2 / (20 + z2), z2 / (20 + z2)))
    assert result.n_clusters == 4
    assert any("treats the pairs as independent" in w for w in result.warnings)


def test_bounded_scores_that_never_differ_get_an_exact_bound_not_a_point():
    # The non-0/1 counterpart of item 2: identical scores in [0, 1] on 10 pairs.
    a = [0.1, 0.35, 0.5, 0.8, 0.0, 0.25, 0.6, 0.9, 0.45, 0.7]
    result = paired_difference(a, a)
    # Clopper–Pearson's upper bound with 0 of 10 differing, at 97.5% one-sided.
    bound = stats.beta.ppf(0.975, 1, 10)
    assert (result.low, result.high) == pytest.approx((-bound, bound), rel=1e-12)
    assert result.p_value == 1.0
    # Outside [0, 1] nothing bounds a pair's difference: no interval, and the reason.
    wide = paired_difference([5.0 * v for v in a], [5.0 * v for v in a])
    assert math.isnan(wide.low)
    assert any("no interval" in w for w in wide.warnings)
