import numpy as np
import pytest
from scipy import stats

from support.eval_helpers import make_run


def test_summary_mean_stderr_and_t_interval(tmp_path):
    values = [0.1, 0.4, 0.35, 0.8, 0.9, None, 0.2]
    run = make_run(tmp_path, {"g": values})
    (summary,) = run.summaries()
    x = np.array([v for v in values if v is not None])
    assert summary.n == 6
    assert summary.errors == 1
    assert summary.mean == pytest.approx(x.mean())
    assert summary.stderr == pytest.approx(stats.sem(x))
    low, high = stats.t.interval(0.95, 5, loc=x.mean(), scale=stats.sem(x))
    assert (summary.ci_low, summary.ci_high) == (pytest.approx(low), pytest.approx(high))


def test_summary_clusters_by_metadata(tmp_path):
    run = make_run(tmp_path, {"g": [1, 1, 0, 0, 1, 0]}, topics=list("aabbcc"))
    (summary,) = run.summaries(cluster_key="topic")
    assert summary.n_clusters == 3
    assert summary.naive_stderr == pytest.approx(stats.sem([1, 1, 0, 0, 1, 0]))
    with pytest.raises(ValueError, match="have no such field"):
        run.summaries(cluster_key="nope")


def test_metrics_use_get_logs_names(tmp_path):
    run = make_run(tmp_path, {"acc": [1, 0, None, 1]})
    metrics = run.metrics()
    assert metrics["acc/score/mean"] == pytest.approx(2 / 3)
    assert metrics["acc/score/count"] == 3
    assert metrics["acc/score/error_count"] == 1
    assert metrics["acc/score/ci_low"] < metrics["acc/score/mean"] < metrics["acc/score/ci_high"]
    tables = run.tables()
    assert len(tables["acc/score/scored_samples"]) == 3
    assert len(tables["acc/score/unscored_samples"]) == 1


def test_a_clustered_0_1_grader_gets_wilson_over_the_korn_graubard_effective_n(tmp_path):
    from statsmodels.stats.proportion import proportion_confint

    values = [1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1]
    topics = [str(i // 4) for i in range(20)]
    run = make_run(tmp_path, {"acc": values}, topics=topics)
    (summary,) = run.summaries(cluster_key="topic")
    p = sum(values) / 20
    # Equal clusters: CR2 is CR1 and its degrees of freedom G - 1 = 4.
    effective = p * (1 - p) / summary.stderr**2
    effective *= (stats.norm.ppf(0.975) / stats.t.ppf(0.975, 4)) ** 2
    low, high = proportion_confint(p * effective, effective, alpha=0.05, method="wilson")
    assert (summary.ci_low, summary.ci_high) == (
        pytest.approx(low, abs=1e-9),
        pytest.approx(high, abs=1e-9),
    )
    assert summary.method == "bounded_clustered"
    assert summary.ci_low >= 0.0
    assert summary.ci_high <= 1.0
