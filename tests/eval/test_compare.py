import numpy as np
import pytest
from scipy import stats

from gradewire.eval.comparing._compare_runs import compare_runs
from gradewire.eval.comparing._paired_difference import BINARY, CLUSTERED, PAIRED_T
from gradewire.eval.comparing._results import holm
from support.eval_helpers import make_run


def _continuous(tmp_path, shift, n=300, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(0.5, 0.2, n)
    b = a + shift + rng.normal(0, 0.1, n)
    return make_run(tmp_path / "a", {"g": a}), make_run(tmp_path / "b", {"g": b})


def test_a_known_difference_has_an_interval_that_excludes_zero(tmp_path):
    a, b = _continuous(tmp_path, 0.05)
    (g,) = compare_runs(a, b).graders
    assert g.n_pairs == 300
    assert g.ci_low > 0
    assert g.ci_low < 0.05 < g.ci_high
    assert g.p_value < 1e-3
    assert g.method == PAIRED_T
    reference = stats.ttest_rel(
        np.array(list(b.scores("g").values())), np.array(list(a.scores("g").values()))
    )
    assert g.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    low, high = reference.confidence_interval(0.95)
    assert (g.ci_low, g.ci_high) == pytest.approx((low, high), rel=1e-9)
    assert g.wins + g.ties + g.losses == 300
    assert g.wins > g.losses


def test_no_difference_has_an_interval_that_covers_zero(tmp_path):
    a, b = _continuous(tmp_path, 0.0)
    (g,) = compare_runs(a, b).graders
    assert g.ci_low < 0 < g.ci_high
    assert g.p_value > 0.05


def test_binary_graders_get_mcnemar(tmp_path):
    a = make_run(tmp_path / "a", {"acc": [1, 1, 0, 0, 1, 0, 0, 0, 1, 0]})
    b = make_run(tmp_path / "b", {"acc": [1, 1, 1, 1, 1, 1, 0, 1, 1, 0]})
    (g,) = compare_runs(a, b).graders
    assert g.method == BINARY
    assert (g.wins, g.ties, g.losses) == (4, 6, 0)
    # The mid-p McNemar test: 2 P(X < 0) + P(X = 0) for X ~ Binomial(4, 1/2) = 1/16.
    assert g.p_value == pytest.approx(1 / 16, abs=1e-12)
    assert g.diff == pytest.approx(0.4)
    # Tango's interval alone excludes 0, the mid-p test does not reject: the interval is
    # extended to 0 and the output says so, so the verdict and the interval agree.
    assert g.ci_low == 0.0 < g.ci_high <= 1.0
    assert any("extended to 0" in w for w in g.warnings)
    assert g.verdict.startswith("no detectable difference on acc")


def test_unpaired_samples_are_counted_and_listed(tmp_path):
    a = make_run(tmp_path / "a", {"g": [1, 0, 1, 1]}, ids=["x", "y", "z", "only-a"])
    b = make_run(tmp_path / "b", {"g": [1, 1, 0, 0, 1]}, ids=["x", "y", "z", "only-b1", "only-b2"])
    comparison = compare_runs(a, b)
    assert comparison.only_a == ("only-a",)
    assert comparison.only_b == ("only-b1", "only-b2")
    assert comparison.graders[0].n_pairs == 3
    data = comparison.to_dict()
    assert data["unpaired"]["count_only_b"] == 2


def test_errored_pairs_are_left_out_and_counted(tmp_path):
    a = make_run(tmp_path / "a", {"g": [1, None, 0, 1]})
    b = make_run(tmp_path / "b", {"g": [1, 1, None, 0]})
    (g,) = compare_runs(a, b).graders
    assert (g.n_pairs, g.not_scored) == (2, 2)


def test_clustered_comparison(tmp_path):
    rng = np.random.default_rng(1)
    topics = np.repeat(np.arange(20), 10)
    a = rng.normal(0.5, 0.2, 200)
    b = a + 0.02 + rng.normal(0, 0.2, 20)[topics] + rng.normal(0, 0.05, 200)
    run_a = make_run(tmp_path / "a", {"g": a}, topics=[str(t) for t in topics])
    run_b = make_run(tmp_path / "b", {"g": b}, topics=[str(t) for t in topics])
    naive = compare_runs(run_a, run_b).graders[0]
    clustered = compare_runs(run_a, run_b, cluster_key="topic").graders[0]
    assert clustered.n_clusters == 20
    assert clustered.stderr > 2 * naive.stderr
    assert clustered.ci_high - clustered.ci_low > 2 * (naive.ci_high - naive.ci_low)
    assert clustered.method == CLUSTERED
    assert clustered.warnings == ()


def test_most_changed_samples(tmp_path):
    a = make_run(
        tmp_path / "a", {"g": [0.5, 0.5, 0.5]}, completions=["x", "y", "<script>z</script>"]
    )
    b = make_run(tmp_path / "b", {"g": [0.6, 0.5, 0.0]})
    (g,) = compare_runs(a, b).graders
    assert [s.id for s in g.most_changed] == ["s2", "s0"]
    assert g.most_changed[0].completion_a == "<script>z</script>"


def test_holm():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5]


def test_runs_without_a_shared_grader(tmp_path):
    a = make_run(tmp_path / "a", {"g": [1, 0]})
    b = make_run(tmp_path / "b", {"h": [1, 0]})
    with pytest.raises(ValueError, match="share no grader"):
        compare_runs(a, b)
