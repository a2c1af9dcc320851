"""Reward health on W&B: an alert marks the run (summary, label, W&B alert), and
``gradewire health`` replays an offline run's history as the live monitor saw it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import wandb

from gradewire import BaseGrader, StringThread
from gradewire.cli._main import main
from gradewire.train import FailurePolicy, RewardLogger, RewardMonitor
from gradewire.train._replays import simulate
from gradewire_wandb import WandbSink, find_offline_runs, read_offline_run
from gradewire_wandb._sink import ALERT_LABEL


def thread(completion: str) -> StringThread:
    return StringThread([("user", "p"), ("assistant", completion)])


async def test_an_alert_marks_the_offline_run(tmp_path: Path) -> None:
    sink = WandbSink(dir=tmp_path, mode="offline", project="health", prefix=None)
    reward_logger = RewardLogger(
        BaseGrader.from_function("judge", lambda s: None if "x" in s.completion() else 1.0),
        sinks=sink,
        failure=FailurePolicy(max_error_rate=None),
        monitor=RewardMonitor(window=2, warmup=2),
    )
    for step in range(4):
        await reward_logger.grade([thread("x")] * 20 + [thread("y")])
        reward_logger.step(step)
    reward_logger.close()
    [alert] = reward_logger.alerts
    (folder,) = find_offline_runs(tmp_path)
    run = read_offline_run(folder)
    assert ALERT_LABEL in run.tags
    [raised] = run.alerts
    assert raised["title"] == f"reward health: unscored on rewards/judge at step {alert.step}"
    assert raised["text"] == alert.message
    assert raised["level"] == "WARN"
    assert run.summary["gradewire/health/alert_count"] == "1"
    assert run.summary["rewards/judge/health/alert/unscored"] == (
        f"step {alert.step}: {alert.message}"
    )
    # the count is a metric too, at every step
    totals = [row["rewards/health/alerts_total"] for row in run.history]
    assert len(totals) == 4
    assert set(totals) == {1}  # the unscored rule needs no warm-up: it fired at once


@pytest.mark.parametrize("step_metric", [None, "train/global_step"])
def test_health_replays_an_offline_run_as_the_live_monitor_saw_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], step_metric: str | None
) -> None:
    replay = simulate("hack_length", 11, steps=160, prompts=32)
    live = RewardMonitor()
    run = wandb.init(dir=tmp_path, mode="offline", project="health")
    if step_metric is not None:
        run.log({"trainer/loss": 1.0})  # W&B's own _step now runs one ahead of the step
    sink = WandbSink(run=run, step_metric=step_metric)
    for step, logs in replay.steps:
        live.observe(step, logs)
        sink.log(logs, step)
    sink.close()
    run.finish()
    assert live.alerts, "the replay must raise an alert for this test to mean anything"
    (folder,) = find_offline_runs(tmp_path)
    assert main(["health", str(folder), "--json"]) == 1
    replayed = json.loads(capsys.readouterr().out)
    assert replayed == [a.to_dict() for a in live.alerts]
    # the .wandb file and a wandb: prefix name the same run
    (file,) = folder.glob("run-*.wandb")
    assert main(["health", f"wandb:{file}", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == replayed
