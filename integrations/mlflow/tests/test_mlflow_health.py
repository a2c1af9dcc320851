"""Reward health on MLflow (a real server on loopback): an alert becomes run tags, the run
says which keys are gradewire's, and ``gradewire health mlflow:RUN_ID`` replays the run's
metric history as the live monitor saw it."""

from __future__ import annotations

import json
import uuid

import pytest
from mlflow import MlflowClient

from gradewire import BaseGrader, StringThread
from gradewire.cli._main import main
from gradewire.train import FailurePolicy, RewardLogger, RewardMonitor
from gradewire.train._replays import simulate
from gradewire_mlflow import MlflowSink
from mlflow_support import MlflowServer


def thread(completion: str) -> StringThread:
    return StringThread([("user", "p"), ("assistant", completion)])


def _sink(server: MlflowServer) -> MlflowSink:
    return MlflowSink(
        tracking_uri=server.url, experiment_name="health", run_name=uuid.uuid4().hex[:12]
    )


async def test_an_alert_becomes_run_tags(
    mlflow_server: MlflowServer,
) -> None:
    sink = _sink(mlflow_server)
    reward_logger = RewardLogger(
        BaseGrader.from_function("judge", lambda s: None if "x" in s.completion() else 1.0),
        sinks=sink,
        failure=FailurePolicy(max_error_rate=None),
        monitor=RewardMonitor(window=2, warmup=2),
    )
    for step in range(3):
        await reward_logger.grade([thread("x")] * 20 + [thread("y")])
        reward_logger.step(step)
    reward_logger.close()
    [alert] = reward_logger.alerts
    assert sink.run_id is not None
    run = MlflowClient(mlflow_server.url).get_run(sink.run_id)
    tags = run.data.tags
    assert tags["gradewire/health/alert_count"] == "1"
    assert tags["rewards/judge/health/alert/unscored"] == f"step {alert.step}: {alert.message}"
    assert run.data.metrics["rewards/health/alerts_total"] == 1


def test_health_replays_an_mlflow_run_as_the_live_monitor_saw_it(
    mlflow_server: MlflowServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    replay = simulate("hack", 5, steps=160, prompts=32)
    live = RewardMonitor()
    sink = _sink(mlflow_server)
    for step, logs in replay.steps:
        live.observe(step, logs)
    sink.log_many(replay.steps)
    sink.close()
    assert live.alerts, "the replay must raise an alert for this test to mean anything"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)
    assert main(["health", f"mlflow:{sink.run_id}", "--json"]) == 1
    replayed = json.loads(capsys.readouterr().out)
    assert replayed == [a.to_dict() for a in live.alerts]
    # a run the store does not hold is refused, saying where it looked
    assert main(["health", f"mlflow:{'0' * 32}"]) == 2
    assert "holds no run" in capsys.readouterr().err
