"""Power: the minimum detectable difference of a run, and the pairs a planned one needs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from gradewire.eval.comparing._paired_binary import mcnemar_tango
from scipy import optimize, stats
from statsmodels.stats.power import NormalIndPower, TTestPower

from gradewire import InvalidInputError
from gradewire.eval.comparing._planning import plan_comparison
from gradewire.eval.comparing._power import (
    minimum_detectable_difference,
    paired_t_power,
    plan_from_pilot,
    samples_needed,
)
from gradewire.stats._paired import mcnemar_mid_p
from support.eval_cli import run
from support.eval_helpers import make_run


@pytest.mark.parametrize(("effect", "n"), [(0.2, 50), (0.5, 12), (0.05, 3000), (1.3, 4)])
def test_paired_t_power_is_statsmodels(effect, n):
    reference = TTestPower().power(effect_size=effect, nobs=n, alpha=0.05)
    assert paired_t_power(effect, n) == pytest.approx(reference, abs=1e-9)


@pytest.mark.parametrize(
    ("difference", "sd", "power"),
    [(0.03, 0.4, 0.8), (0.1, 0.3, 0.9), (0.5, 1.0, 0.8), (0.01, 0.5, 0.8)],
)
def test_samples_needed_is_statsmodels_rounded_up(difference, sd, power):
    reference = TTestPower().solve_power(effect_size=difference / sd, alpha=0.05, power=power)
    assert samples_needed(difference, sd, power=power) == math.ceil(reference)
    assert samples_needed(difference, sd, power=power, design_effect=2.5) == math.ceil(
        math.ceil(reference) * 2.5
    )


def test_minimum_detectable_difference_is_the_normal_power_solution():
    se = 0.02
    n = 400
    effect = NormalIndPower().solve_power(nobs1=n, alpha=0.05, power=0.8, ratio=0)
    # statsmodels counts the far tail too (~1e-6 of power): the same to 1e-5.
    assert minimum_detectable_difference(se) == pytest.approx(effect * se * math.sqrt(n), rel=1e-5)
    assert math.isnan(minimum_detectable_difference(0.0))


def test_a_true_difference_at_the_detectable_size_is_found_about_80_percent_of_the_time():
    # 0/1 pairs: a difference of exactly the minimum detectable one, compared by the
    # method compare uses (the mid-p McNemar test); it should be found 8 times in 10.
    n, p_lost = 400, 0.1

    def gap(p_gained):
        delta = p_gained - p_lost
        se = math.sqrt((p_gained + p_lost - delta**2) / n)
        return delta - minimum_detectable_difference(se)

    p_gained = optimize.brentq(gap, p_lost + 1e-6, 0.6)
    rng = np.random.default_rng(7)
    found = 0
    reps = 4000
    for _ in range(reps):
        gained, lost, _ = rng.multinomial(n, [p_gained, p_lost, 1 - p_gained - p_lost])
        found += mcnemar_mid_p(int(gained), int(lost)) < 0.05
    assert 0.77 <= found / reps <= 0.83


def test_plan_from_pilot_uses_spread_and_pairing_correlation():
    rng = np.random.default_rng(1)
    a = rng.normal(0.5, 0.2, 300)
    b = 0.8 * a + rng.normal(0.1, 0.1, 300)
    plan = plan_from_pilot(a, b, 0.02)
    assert plan.correlation == pytest.approx(stats.pearsonr(a, b).statistic, abs=1e-12)
    sd_d = math.sqrt(plan.sd_a**2 + plan.sd_b**2 - 2 * plan.correlation * plan.sd_a * plan.sd_b)
    assert plan.sd_difference == pytest.approx(sd_d, rel=1e-9)
    assert plan.n_pairs == samples_needed(0.02, sd_d)
    # Unpaired, the same spread would need many more samples.
    unpaired = math.sqrt(plan.sd_a**2 + plan.sd_b**2)
    assert samples_needed(0.02, unpaired) > 2 * plan.n_pairs


def test_a_pilot_that_never_disagrees_or_a_zero_difference_is_refused():
    with pytest.raises(InvalidInputError, match="never disagree"):
        plan_from_pilot([1, 0, 1, 1], [1, 0, 1, 1], 0.05)
    with pytest.raises(InvalidInputError, match="non-zero"):
        samples_needed(0.0, 0.3)
    with pytest.raises(InvalidInputError, match="at least 3 pairs"):
        plan_from_pilot([1, 0], [0, 1], 0.05)


def test_clusters_multiply_the_pairs_by_the_design_effect(tmp_path):
    rng = np.random.default_rng(3)
    topics = np.repeat(np.arange(30), 8)
    a = rng.normal(0.5, 0.1, 240)
    b = a + rng.normal(0, 0.1, 30)[topics] + rng.normal(0, 0.05, 240)
    run_a = make_run(tmp_path / "a", {"g": a}, topics=[str(t) for t in topics])
    run_b = make_run(tmp_path / "b", {"g": b}, topics=[str(t) for t in topics])
    flat = plan_comparison(run_a, run_b, 0.02)[0]["g"]
    clustered = plan_comparison(run_a, run_b, 0.02, cluster_key="topic")[0]["g"]
    assert clustered.design_effect > 3
    assert clustered.n_pairs == math.ceil(flat.n_pairs * clustered.design_effect)


def test_power_command(tmp_path):
    rng = np.random.default_rng(2)
    a = (rng.random(200) < 0.6).astype(float)
    b = np.where(rng.random(200) < 0.8, a, 1 - a)
    make_run(tmp_path / "a", {"correct": a})
    make_run(tmp_path / "b", {"correct": b})
    done = run("power", str(tmp_path / "a"), str(tmp_path / "b"), "--difference", "0.03")
    assert done.returncode == 0, done.stderr
    sd = float(np.std(b - a, ddof=1))
    expected = samples_needed(0.03, sd)
    assert done.stdout.startswith(f"correct: {expected:,} pairs find a difference of 0.03 80%")
    data = json.loads(
        run(
            "power", str(tmp_path / "a"), str(tmp_path / "b"), "--difference", "0.03", "--json"
        ).stdout
    )
    assert data["correct"]["n_pairs"] == expected
    bad = run("power", str(tmp_path / "a"), str(tmp_path / "b"), "--difference", "0")
    assert bad.returncode == 2
    assert "non-zero" in bad.stderr


def test_a_grader_the_pilot_cannot_plan_is_named_and_the_others_are_planned(tmp_path, capsys):
    from gradewire.cli import main

    def power(*extra):
        code = main([*argv, *extra])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    rng = np.random.default_rng(5)
    a = (rng.random(100) < 0.6).astype(float)
    b = np.where(rng.random(100) < 0.8, a, 1 - a)
    same = np.ones(100)
    make_run(tmp_path / "a", {"correct": a, "flat": same, "rare": [1.0, 0.0] + [None] * 98})
    make_run(tmp_path / "b", {"correct": b, "flat": same, "rare": [1.0, 1.0] + [None] * 98})
    argv = ["power", str(tmp_path / "a"), str(tmp_path / "b"), "--difference", "0.05"]
    code, out, err = power()
    assert code == 1, err
    assert out.startswith(f"correct: {samples_needed(0.05, np.std(b - a, ddof=1)):,}")
    assert "flat: no plan: the differences' standard deviation must be positive" in err
    assert "rare: no plan: a pilot needs at least 3 pairs" in err
    code, out, _ = power("--json")
    data = json.loads(out)
    assert set(data) == {"correct", "flat", "rare"}
    assert "never disagree" in data["flat"]["refused"]
    code, out, err = power("--grader", "correct")
    assert code == 0, err
    assert out.startswith("correct: ")
    assert "flat" not in out + err
    assert power("--grader", "flat")[0] == 2
    code, _, err = power("--grader", "nope")
    assert code == 2
    assert "do not both have the grader(s) 'nope'" in err
