"""Reward health: the gold reference, the mergeable health figures, RewardMonitor, the CLI."""

import math

import numpy as np
import pytest

from gradewire import BaseGrader, CombinedGrader, Histogram, JsonlSink, MemorySink, StringThread
from gradewire.cli._main import main
from gradewire.train import (
    FailurePolicy,
    RewardHealthError,
    RewardLogger,
    RewardMonitor,
    StepWindow,
)
from gradewire.train._gold import in_gold_share
from gradewire.train._health_window import LATENCY_EDGES, histogram_quantile
from gradewire.train._replays import simulate


def thread(prompt: str, completion: str, **metadata: object) -> StringThread:
    return StringThread([("user", prompt), ("assistant", completion)], metadata)


def proxy_score(sample: StringThread) -> float:
    return min(len(sample.completion() or "") / 40, 1.0)


def gold_score(sample: StringThread) -> float:
    return float((sample.completion() or "").count("x") % 3 == 0)


def samples(n: int, seed: int = 0) -> list[StringThread]:
    rng = np.random.default_rng(seed)
    return [
        thread(f"prompt {i % 7}", "x" * int(rng.integers(1, 30)) + "y" * int(rng.integers(0, 9)))
        for i in range(n)
    ]


async def test_gold_grades_a_stable_share_and_logs_the_exact_pairs():
    batch = samples(400)
    gold = BaseGrader.from_function("gold", gold_score)
    reward_logger = RewardLogger(
        BaseGrader.from_function("proxy", proxy_score), gold=gold, gold_fraction=0.3
    )
    await reward_logger.grade(batch)
    logs = reward_logger.step(1)
    chosen = [s for s in batch if in_gold_share(s, 0.3)]
    # the same samples on a rebuilt logger (another rank, a restart): a hash, not a draw
    assert chosen == [s for s in samples(400) if in_gold_share(s, 0.3)]
    assert 0.2 < len(chosen) / len(batch) < 0.4
    x = np.array([proxy_score(s) for s in chosen])
    y = np.array([gold_score(s) for s in chosen])
    assert logs["rewards/proxy/health/gold/pairs"] == len(chosen)
    assert logs["rewards/proxy/health/gold/gold_mean"] == pytest.approx(y.mean())
    assert logs["rewards/proxy/health/gold/proxy_std"] == pytest.approx(x.std(ddof=1))
    assert logs["rewards/proxy/health/gold/corr"] == pytest.approx(np.corrcoef(x, y)[0, 1])
    # the gold's own statistics, under its own key, over its share only
    assert logs["rewards/gold/score/count"] == len(chosen)
    assert logs["rewards/proxy/health/latency_count"] == len(batch)
    assert logs["rewards/proxy/health/latency_p99"] >= logs["rewards/proxy/health/latency_p50"]


async def test_the_gold_figures_of_slices_merge_into_those_of_the_whole():
    batch = samples(300, seed=3)
    windows = []
    for part in (batch[:90], batch[90:200], batch[200:]):
        reward_logger = RewardLogger(
            BaseGrader.from_function("proxy", proxy_score),
            gold=BaseGrader.from_function("gold", gold_score),
            gold_fraction=0.5,
        )
        await reward_logger.grade(part)
        windows.append(reward_logger.collect())
    whole_logger = RewardLogger(
        BaseGrader.from_function("proxy", proxy_score),
        gold=BaseGrader.from_function("gold", gold_score),
        gold_fraction=0.5,
    )
    await whole_logger.grade(batch)
    whole = whole_logger.collect().to_logs("r")
    merged = StepWindow.merge_all(StepWindow.from_dict(w.to_dict()) for w in windows)
    logs = merged.to_logs("r")
    for key, value in whole.items():
        if "/health/gold/" in key:
            assert math.isclose(logs[key], value, rel_tol=1e-12, abs_tol=1e-12), key


async def test_dominance_is_each_components_share_of_the_totals_variance():
    combo = CombinedGrader(
        "combo",
        [BaseGrader.from_function("a", proxy_score), BaseGrader.from_function("b", gold_score)],
        weights=[1.0, 3.0],
    )
    batch = samples(200, seed=5)
    reward_logger = RewardLogger(combo)
    await reward_logger.grade(batch)
    logs = reward_logger.step(0)
    a = np.array([proxy_score(s) for s in batch]) * 1 / 4
    b = np.array([gold_score(s) for s in batch]) * 3 / 4
    total = a + b
    var = total.var(ddof=1)
    share_a = np.cov(a, total)[0, 1] / var
    share_b = np.cov(b, total)[0, 1] / var
    assert logs["rewards/combo/health/dominance/a"] == pytest.approx(share_a)
    assert logs["rewards/combo/health/dominance/b"] == pytest.approx(share_b)
    assert share_a + share_b == pytest.approx(1.0)


def test_latency_quantiles_fall_within_one_bin_of_numpys():
    rng = np.random.default_rng(1)
    seconds = rng.lognormal(mean=-3.0, sigma=1.2, size=5000)
    histogram = Histogram.of(seconds, LATENCY_EDGES)
    ratio = LATENCY_EDGES[1] / LATENCY_EDGES[0]
    for q in (0.5, 0.99):
        approx = histogram_quantile(histogram, q)
        exact = float(np.quantile(seconds, q))
        assert approx is not None
        assert exact / ratio <= approx <= exact * ratio


@pytest.mark.parametrize("kind", ["hack", "hack_length", "hack_dominant"])
def test_a_hacked_replay_alerts_after_the_golds_peak_and_never_before(kind):
    for seed in (11, 12):
        replay = simulate(kind, seed, steps=240)
        monitor = RewardMonitor()
        alerts = monitor.replay(replay.steps)
        assert replay.gold_peak is not None
        gold = [a for a in alerts if a.signal == "gold_gap"]
        assert all(a.step >= replay.gold_peak for a in gold), (seed, gold)
        if kind == "hack_length":
            assert any(a.signal == "length_drift" for a in alerts), seed
        if kind == "hack_dominant":
            assert any(a.signal == "dominance" for a in alerts), seed
        assert gold, (seed, alerts)


def test_clean_replays_raise_no_alert():
    for seed in (21, 22, 23, 24):
        replay = simulate("clean", seed, steps=240)
        assert RewardMonitor().replay(replay.steps) == [], seed


def failing_half(sample: StringThread) -> float:
    if (sample.completion() or "").endswith("y"):
        raise ValueError("judge down")
    return 0.5


async def test_on_alert_raise_logs_the_step_then_stops():
    sink = MemorySink()
    reward_logger = RewardLogger(
        BaseGrader.from_function("judge", failing_half),
        sinks=sink,
        failure=FailurePolicy(max_error_rate=None),
        on_alert="raise",
    )

    async def train() -> None:
        for step in range(5):
            await reward_logger.grade(samples(200, seed=step))
            reward_logger.step(step)

    with pytest.raises(RewardHealthError) as caught:
        await train()
    assert caught.value.alerts[0].signal == "unscored"
    assert reward_logger.alerts == caught.value.alerts
    last_step, last_logs = sink.steps[-1]
    assert last_logs["rewards/health/alerts"] == 1
    assert last_step == caught.value.alerts[0].step


async def test_the_health_command_replays_a_logged_run_as_the_live_monitor_saw_it(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    replay = simulate("hack", 11, steps=240, key="ju\x1b[31mdge")
    sink = JsonlSink(path)
    live = RewardMonitor()
    for step, logs in replay.steps:
        live.observe(step, logs)
        sink.log(logs, step)
    sink.close()
    assert live.alerts
    assert main(["health", str(path)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert out.count("\n- step ") == len(live.alerts)
    assert f"step {live.alerts[0].step} [gold_gap]" in out

    clean = tmp_path / "clean.jsonl"
    sink = JsonlSink(clean)
    for step, logs in simulate("clean", 21, steps=120).steps:
        sink.log(logs, step)
    sink.close()
    assert main(["health", str(clean)]) == 0
    assert "no alert" in capsys.readouterr().out


def _ar1(rng: np.random.Generator, steps: int, rho: float, sd: float) -> np.ndarray:
    noise = np.empty(steps)
    noise[0] = rng.normal(0, sd)
    for t in range(1, steps):
        noise[t] = rho * noise[t - 1] + rng.normal(0, sd * np.sqrt(1 - rho * rho))
    return noise


@pytest.mark.parametrize("rho", [0.0, 0.6])
def test_the_gold_lag_statistic_is_the_ols_prediction_error_statsmodels_gives(rho):
    sm = pytest.importorskip("statsmodels.api")
    from gradewire.train._gold_lag import GoldLag

    rng = np.random.default_rng(4)
    steps = 50
    proxy = np.linspace(0.2, 0.8, steps) + rng.normal(0, 0.01, steps)
    gold = 0.1 + 0.5 * proxy + _ar1(rng, steps, rho, 0.02)
    gold[-10:] = gold[-10:].mean() - 0.05 - np.linspace(0, 0.02, 10)  # flat, then falling
    lag = GoldLag(shortest=10, longest=10, reference=30, least_reference=20)
    for g, p in zip(gold, proxy, strict=True):
        lag.add(float(g), float(p))
    result = lag.test()
    assert result is not None
    a = steps - 10
    fit = sm.OLS(gold[a - 30 : a], sm.add_constant(proxy[a - 30 : a])).fit()
    ps = proxy[a:].mean()
    prediction = fit.get_prediction(np.array([[1.0, ps]]))
    # the noise: half the mean squared successive difference of gold - b * proxy
    resid = gold - fit.params[1] * proxy
    noise = np.mean(np.diff(resid) ** 2) / 2
    # made long-run: the lag-1 autocorrelation of the reference's residuals, from their
    # variance (statsmodels' scale) against their own mean squared successive difference
    r = float(np.clip(1 - np.mean(np.diff(resid[a - 30 : a]) ** 2) / 2 / fit.scale, 0, 0.9))
    noise *= (1 + r) / (1 - r) ** 2
    se = np.sqrt(noise * (1 / 10 + prediction.se_mean[0] ** 2 / fit.scale))
    assert result.expected == pytest.approx(prediction.predicted_mean[0])
    assert result.z == pytest.approx((gold[a:].mean() - prediction.predicted_mean[0]) / se)
    assert result.z < (-3 if not rho else -2)
    if rho:
        assert r > 0.2  # the correction is at work on autocorrelated noise


def test_the_gold_lag_holds_its_level_under_autocorrelated_noise():
    # Null runs (the gold follows the training reward along a line, with AR(1) noise of
    # lag-1 correlation 0.6): the statistic of the one segment tested (the last 10 steps
    # against the 60 before them) falls below -2 about as often as a standard normal
    # does (2.3%), among the runs whose segment is tested (its gold not rising). With
    # independent-noise standard errors (before the long-run factor) it was 22% of them.
    from scipy import stats

    from gradewire.train._gold_lag import GoldLag

    rng = np.random.default_rng(9)
    tested = below = 0
    for _ in range(600):
        proxy = 0.5 + rng.normal(0, 0.05, 70)
        gold = 0.1 + 0.5 * proxy + _ar1(rng, 70, 0.6, 0.02)
        lag = GoldLag(shortest=10, longest=10, reference=60, least_reference=60)
        for g, p in zip(gold, proxy, strict=True):
            lag.add(float(g), float(p))
        result = lag.test()
        tested += result is not None
        below += result is not None and result.z < -2
    nominal = float(stats.norm.cdf(-2))
    assert tested > 200
    assert below / tested <= nominal + 3 * np.sqrt(nominal * (1 - nominal) / tested)


def test_a_grader_that_scored_nothing_is_still_watched():
    monitor = RewardMonitor()
    logs = {"rewards/judge/score/count": 0, "rewards/judge/score/error_count": 64}
    (alert,) = monitor.observe(1, logs)
    assert (alert.step, alert.grader, alert.signal) == (1, "rewards/judge", "unscored")
    assert "64 errors" in alert.message
    assert monitor.signals["rewards/judge/health/error_rate"] == 1.0


def test_the_gap_is_each_rewards_rise_in_its_own_early_standard_deviations():
    monitor = RewardMonitor(warmup=3)
    root = "rewards/judge"
    rows = [(0.50, 0.40), (0.52, 0.42), (0.48, 0.38), (0.70, 0.45)]
    for step, (proxy, gold) in enumerate(rows):
        monitor.observe(
            step,
            {
                f"{root}/score/count": 100,
                f"{root}/score/mean": proxy,
                f"{root}/health/gold/pairs": 25,
                f"{root}/health/gold/proxy_mean": proxy,
                f"{root}/health/gold/gold_mean": gold,
                f"{root}/health/gold/proxy_std": 0.2,
                f"{root}/health/gold/gold_std": 0.5,
            },
        )
    # early means 0.50 and 0.40; the proxy rose 0.20 (1 sd), the gold 0.05 (0.1 sd)
    assert monitor.signals[f"{root}/health/gold_gap"] == pytest.approx(1.0 - 0.1)


def test_the_health_command_says_what_it_cannot_read_and_prints_json(tmp_path, capsys):
    assert main(["health", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    path = tmp_path / "run.jsonl"
    sink = JsonlSink(path)
    for step, logs in simulate("hack", 11, steps=240).steps:
        sink.log(logs, step)
    sink.close()
    assert main(["health", str(path), "--json"]) == 1
    import json

    (alert,) = json.loads(capsys.readouterr().out)
    assert alert["signal"] == "gold_gap"
    assert alert["grader"] == "rewards/judge"


async def test_an_undefined_gold_correlation_is_said_not_left_out():
    # every gold grade the same (a verifier that passes all): no correlation exists
    constant = [True]

    def gold(sample: StringThread) -> float:
        return 1.0 if constant[0] else gold_score(sample)

    reward_logger = RewardLogger(
        BaseGrader.from_function("proxy", proxy_score),
        gold=BaseGrader.from_function("gold", gold),
        gold_fraction=1.0,
    )
    await reward_logger.grade(samples(40))
    logs = reward_logger.step(1)
    assert logs["rewards/proxy/health/gold/pairs"] == 40
    assert "rewards/proxy/health/gold/corr" not in logs
    assert logs["rewards/proxy/health/gold/corr_undefined"] == 1.0
    # one pair only: no correlation either, and said so
    await reward_logger.grade(samples(1))
    logs = reward_logger.step(2)
    assert logs["rewards/proxy/health/gold/pairs"] == 1
    assert logs["rewards/proxy/health/gold/corr_undefined"] == 1.0
    # defined: 0.0 beside the figure
    constant[0] = False
    await reward_logger.grade(samples(60, seed=4))
    logs = reward_logger.step(3)
    assert logs["rewards/proxy/health/gold/corr_undefined"] == 0.0
    assert math.isfinite(logs["rewards/proxy/health/gold/corr"])
    # no pair at all (nothing graded): neither key
    assert reward_logger.step(4) == {}


async def test_an_alert_marks_the_run_on_the_sinks_that_can_and_never_stops_training(
    tmp_path, caplog
):
    class Failing(MemorySink):
        def _write_alert(self, title: str, text: str, tags: dict[str, str]) -> None:
            raise RuntimeError("tracker down")

    memory, plain = MemorySink(), JsonlSink(tmp_path / "run.jsonl")
    reward_logger = RewardLogger(
        BaseGrader.from_function("judge", lambda s: None if "x" in s.completion() else 1.0),
        sinks=[memory, plain],
        failure=FailurePolicy(max_error_rate=None),
        monitor=RewardMonitor(window=2, warmup=2),
    )
    for step in range(3):
        await reward_logger.grade([thread("p", "x" * 3)] * 20 + [thread("p", "y")])
        reward_logger.step(step)
    assert [a.signal for a in reward_logger.alerts] == ["unscored"]
    [(title, text, tags)] = memory.alerts
    alert = reward_logger.alerts[0]
    assert title == f"reward health: unscored on rewards/judge at step {alert.step}"
    assert text == alert.message
    assert tags == {
        "gradewire/health/alert_count": "1",
        "rewards/judge/health/alert/unscored": f"step {alert.step}: {alert.message}",
    }
    plain.close()
    assert (tmp_path / "run.jsonl").read_text()  # the JSONL sink took the steps, not the alert
    # a sink that fails to mark the run: a warning, the step logged, training goes on
    failing = Failing()
    reward_logger = RewardLogger(
        BaseGrader.from_function("judge", lambda s: None if "x" in s.completion() else 1.0),
        sinks=failing,
        failure=FailurePolicy(max_error_rate=None),
        monitor=RewardMonitor(window=2, warmup=2),
    )
    for step in range(3):
        await reward_logger.grade([thread("p", "x" * 3)] * 20 + [thread("p", "y")])
        reward_logger.step(step)
    assert len(failing.steps) == 3
    assert "could not mark the run" in caplog.text


def test_the_health_command_names_the_runs_it_reads_when_none_takes_the_reference(tmp_path, capsys):
    assert main(["health", "mlflow:not-a-run-id"]) == 2
    err = capsys.readouterr().err
    assert "mlflow:<run id>" in err
    assert "offline W&B run folder" in err
    (tmp_path / "folder").mkdir()
    assert main(["health", str(tmp_path / "folder")]) == 2
    assert "is not a run any reader takes" in capsys.readouterr().err


def test_the_gold_lag_bar_holds_up_to_the_tuned_length_and_grows_as_a_scan_after():
    monitor = RewardMonitor(threshold=3.5)
    assert monitor._bar(50) == monitor._bar(300) == 3.5
    assert monitor._bar(600) == pytest.approx(3.5 * math.sqrt(math.log(600) / math.log(300)))
    assert monitor._bar(600) < monitor._bar(3000)
