"""Threshold calibration of a score-based judge: held-out folds, a paired interval, no claim
of an improvement the interval cannot tell from 0."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from gradewire.core import BaseGrader, InvalidInputError, StringThread
from gradewire.eval import EvalSample, run_eval
from gradewire.eval.auditing._calibration import binary_kappa, calibrate_threshold


def test_binary_kappa_is_scikit_learns() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(5, 60))
        a = rng.integers(0, 2, n)
        b = np.where(rng.random(n) < 0.7, a, 1 - a)
        if len(set(a)) == 1 and len(set(b)) == 1:
            continue
        assert binary_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    assert np.isnan(binary_kappa(np.ones(4), np.ones(4)))


def miscalibrated(n: int, seed: int) -> tuple[dict[str, float], dict[str, float]]:
    """A judge whose scores rank well but all sit above 0.5: its own threshold passes all."""
    rng = np.random.default_rng(seed)
    truth = rng.random(n) < 0.5
    latent = truth + rng.normal(0, 0.35, n)
    scores = 0.6 + 0.3 * (latent - latent.min()) / (latent.max() - latent.min())
    ids = [f"s{i}" for i in range(n)]
    return dict(zip(ids, scores.tolist(), strict=True)), dict(
        zip(ids, truth.astype(float).tolist(), strict=True)
    )


def test_a_miscalibrated_judge_is_improved_on_held_out_labels() -> None:
    scores, labels = miscalibrated(80, 0)
    result = calibrate_threshold(scores, labels, folds=5, n_resamples=300, seed=1)
    ids = list(scores)
    truth = [labels[k] for k in ids]
    before = [float(scores[k] >= 0.5) for k in ids]
    after = [result.held_out[k] for k in ids]
    assert result.kappa_before == pytest.approx(cohen_kappa_score(truth, before))
    assert result.kappa_after == pytest.approx(cohen_kappa_score(truth, after))
    assert result.kappa_after > 0.6
    assert result.improved
    assert result.ci_low > 0
    assert 0.6 < result.threshold < 0.9
    assert result.threshold == result.fitted_threshold
    # The interval is scipy's paired bootstrap of the κ difference (sklearn's κ).
    t, a, b = np.array(truth), np.array(after), np.array(before)
    reference = stats.bootstrap(
        (np.arange(len(ids)),),
        lambda i: cohen_kappa_score(t[i], a[i]) - cohen_kappa_score(t[i], b[i]),
        vectorized=False,
        n_resamples=300,
        method="BCa",
        random_state=np.random.default_rng(1),
    ).confidence_interval
    assert (result.ci_low, result.ci_high) == pytest.approx((reference.low, reference.high))
    assert "use" in str(result)


def test_uninformative_scores_claim_nothing() -> None:
    rng = np.random.default_rng(5)
    ids = [f"s{i}" for i in range(80)]
    scores = dict(zip(ids, rng.random(80).tolist(), strict=True))
    labels = dict(zip(ids, (rng.random(80) < 0.5).astype(float).tolist(), strict=True))
    result = calibrate_threshold(scores, labels, n_resamples=500)
    assert not result.improved
    assert result.threshold == 0.5
    assert result.ci_low <= 0
    assert "keep the judge's threshold" in str(result) or "worse" in str(result)


def test_a_well_calibrated_judge_rarely_gets_a_false_improvement() -> None:
    # Its own threshold (0.5) is already the best: any claimed improvement is false.
    claims = 0
    runs = 40
    for seed in range(runs):
        rng = np.random.default_rng(100 + seed)
        truth = rng.random(60) < 0.5
        scores = np.clip(0.5 + np.where(truth, 0.15, -0.15) + rng.normal(0, 0.15, 60), 0, 1)
        ids = [f"s{i}" for i in range(60)]
        result = calibrate_threshold(
            dict(zip(ids, scores.tolist(), strict=True)),
            dict(zip(ids, truth.astype(float).tolist(), strict=True)),
            n_resamples=300,
            seed=seed,
        )
        claims += result.improved
    assert claims / runs <= 0.1


def test_too_few_labels_per_class_are_refused() -> None:
    scores = {f"s{i}": i / 10 for i in range(10)}
    labels = {f"s{i}": float(i == 9) for i in range(10)}
    with pytest.raises(InvalidInputError, match="at least 5"):
        calibrate_threshold(scores, labels)
    with pytest.raises(InvalidInputError, match="pass/fail"):
        calibrate_threshold(scores, dict.fromkeys(scores, 2.0))


def test_the_align_command_reads_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gradewire.cli._main import main

    scores, labels = miscalibrated(60, 2)
    # A real run folder, written by run_eval with a grader that gives the judge's scores.
    samples = [
        EvalSample(key, StringThread([("user", key), ("assistant", "a")]), key, key)
        for key in scores
    ]
    grader = BaseGrader.from_function("j", lambda t: scores[t.last_user_content()])
    run = tmp_path / "run"
    asyncio.run(run_eval(samples, [grader], run))
    labels_file = tmp_path / "labels.jsonl"
    labels_file.write_text(
        "".join(json.dumps({"id": k, "label": v}) + "\n" for k, v in labels.items())
    )
    code = main(["judge", "align", str(run), "--labels", str(labels_file), "--grader", "j"])
    assert code == 0
    out = capsys.readouterr().out
    assert "held out" in out
    assert (
        main(["judge", "align", str(run), "--labels", str(labels_file), "--grader", "j", "--json"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["n"] == 60
    assert data["improved"] == (data["ci_low"] is not None and data["ci_low"] > 0)
