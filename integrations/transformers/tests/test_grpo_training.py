"""Real GRPO and RLOO runs on CPU with GradewireCallback, read back from W&B and MLflow.

Every logging step's figures are checked against a recomputation from the per-completion
rewards TRL itself recorded (``log_completions=True``: GRPO writes them to parquet, RLOO
to its W&B ``completions`` table). With
``logging_steps=2``, ``steps_per_generation=2`` makes each logged window one generation
batch, so that TRL's parquet (the latest batch only) holds the whole window.
"""

from __future__ import annotations

import math
import shutil
import statistics
from pathlib import Path
from typing import Any

import mlflow
import numpy as np
import pytest
import wandb
from mlflow import MlflowClient
from trl import GRPOConfig, GRPOTrainer, RLOOConfig, RLOOTrainer

from gradewire import BaseGrader, BinaryJudgeGrader, OpenAIChatModel, StringThread
from gradewire_transformers import FAMILIES_TAG, GradewireCallback, trl_reward
from gradewire_wandb import read_offline_run as read_wandb_run
from mlflow_support import read_run
from support.judge_scripts import verdict
from support.judge_server import JudgeServer, chat
from trl_support import Completions, conversational_dataset, standard_dataset, tiny_model

EDGES = [i / 8 for i in range(9)]


def correct(sample: StringThread) -> float:
    """1.0 when the completion contains the dataset's answer (the answer column)."""
    return float(sample.metadata["answer"] in (sample.completion() or ""))


def shape(sample: StringThread) -> float | None:
    """Abstains on completions whose byte length is a multiple of 3, else a multiple of 1/8."""
    text = (sample.completion() or "").encode("utf-8", "surrogatepass")
    if len(text) % 3 == 0:
        return None
    return (len(text) % 8) / 8


def graders() -> tuple[BaseGrader, BaseGrader]:
    return (
        BaseGrader.from_function("correct", correct),
        BaseGrader.from_function("shape", shape, sample_tables=True),
    )


def train(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    template_db: Path,
    rewards: list[Any],
    *,
    logging_steps: int,
    chat: bool = False,
    trainer: str = "grpo",
) -> dict[str, Any]:
    db = tmp_path / "mlflow.db"
    shutil.copyfile(template_db, db)
    uri = f"sqlite:///{db}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(uri)
    # The trainer's MLflow callback logs into this experiment, artifacts in a local folder.
    experiment = client.create_experiment("trl", artifact_location=(tmp_path / "art").as_uri())
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "trl")
    model, tokenizer = tiny_model(chat=chat)
    dataset = conversational_dataset() if chat else standard_dataset()
    callback = GradewireCallback(*rewards, histogram_edges=EDGES)
    settings: dict[str, Any] = {
        "output_dir": str(tmp_path / "out"),
        "use_cpu": True,
        "per_device_train_batch_size": 4,
        "num_generations": 2,
        "max_completion_length": 8,
        "max_steps": 3,
        "logging_steps": logging_steps,
        "steps_per_generation": logging_steps,
        "report_to": ["wandb", "mlflow"],
        "log_completions": True,
        "save_strategy": "no",
        "seed": 0,
        "run_name": tmp_path.name,
    }
    if trainer == "grpo":
        run = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=rewards,
            args=GRPOConfig(**settings),
            train_dataset=dataset,
            callbacks=[callback],
        )
    else:
        # No KL term: a reference model would be loaded by name, and this one has none.
        settings["beta"] = 0.0
        run = RLOOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=rewards,
            args=RLOOConfig(**settings),
            train_dataset=dataset,
            callbacks=[callback],
        )
    run.train()
    assert wandb.run is not None
    folder = Path(wandb.run.dir).parent
    wandb.run.finish()
    (mlflow_run,) = client.search_runs(experiment_ids=[experiment])
    wandb_run = read_wandb_run(folder)
    return {
        "trainer": run,
        "wandb": wandb_run,
        "mlflow": read_run(client, mlflow_run.info.run_id, tmp_path / "mlflow-readback"),
        "mlflow_tags": client.get_run(mlflow_run.info.run_id).data.tags,
        "completions": (
            Completions.from_parquet(tmp_path / "out" / "completions")
            if trainer == "grpo"
            else Completions.from_wandb(wandb_run)
        ),
    }


def expected_figures(column: Any) -> dict[str, float]:
    values = [float(v) for v in column if not math.isnan(v)]
    figures: dict[str, float] = {
        "count": len(values),
        "abstained_count": sum(1 for v in column if math.isnan(v)),
    }
    if values:
        figures.update(
            mean=statistics.mean(values),
            std=statistics.stdev(values) if len(values) > 1 else 0.0,
            min=min(values),
            max=max(values),
        )
    return figures


def wandb_rows(run: Any, key: str) -> dict[int, dict[str, Any]]:
    """Rows of the W&B history holding ``key``, by the trainer's global step."""
    return {int(row["train/global_step"]): row for row in run.history if key in row}


def check_run(result: dict[str, Any], names: list[str], logging_steps: int) -> None:
    completions: Completions = result["completions"]
    steps = completions.steps()
    assert steps == ([1, 2, 3] if logging_steps == 1 else [2, 3])
    history = result["mlflow"].history
    for name in names:
        rows = wandb_rows(result["wandb"], f"rewards/{name}/score/mean")
        assert sorted(rows) == steps, name
        for step in steps:
            frame = completions.at(step)
            want = expected_figures(frame[name].tolist())
            mlflow_at = {
                key.rsplit("/", 1)[1]: point.value
                for key, points in history.items()
                if key.startswith(f"rewards/{name}/score/")
                for point in points
                if point.step == step
            }
            for figure, value in want.items():
                key = f"rewards/{name}/score/{figure}"
                assert rows[step][key] == pytest.approx(value, rel=1e-9, abs=1e-12), (key, step)
                assert mlflow_at[figure] == pytest.approx(value, rel=1e-9, abs=1e-12), (key, step)
            assert rows[step][f"rewards/{name}/score/error_count"] == 0
            histogram = rows[step][f"rewards/{name}/score/histogram"]
            assert histogram["_type"] == "histogram"
            scored = [v for v in frame[name].tolist() if not math.isnan(v)]
            assert histogram["values"] == np.histogram(scored, bins=EDGES)[0].tolist()
            assert histogram["bins"] == pytest.approx(EDGES)
            mlflow_bins = [
                row["count"]
                for at, row in result["mlflow"].tables[f"rewards/{name}/score/histogram"]
                if at == step
            ]
            assert mlflow_bins == histogram["values"]
    # The trainer's own figures are in the same runs, at its logging steps (the last window
    # of a logging_steps=2 run is logged with the trainer's end-of-training summary).
    log_history = result["trainer"].state.log_history
    trainer_steps = {entry["step"] for entry in log_history if "loss" in entry}
    assert trainer_steps == set(range(logging_steps, 4, logging_steps))
    assert trainer_steps <= set(steps)
    assert trainer_steps <= set(wandb_rows(result["wandb"], "train/loss"))
    assert trainer_steps <= {point.step for point in history["loss"]}
    assert trainer_steps <= {point.step for point in history[f"rewards/{names[0]}/mean"]}
    # Both families sit in one MLflow run: a tag says which is whose and how it is made.
    families = result["mlflow_tags"][FAMILIES_TAG]
    assert "rewards/<grader>/score/" in families
    assert "gradewire's" in families
    assert "rewards/<function>/mean" in families
    assert "the trainer's own (TRL)" in families


@pytest.mark.parametrize("logging_steps", [1, 2])
def test_grpo_standard_format(tmp_path, monkeypatch, template_db, logging_steps):
    rewards = [trl_reward(g) for g in graders()]
    result = train(tmp_path, monkeypatch, template_db, rewards, logging_steps=logging_steps)
    check_run(result, ["correct", "shape"], logging_steps)
    frames = [result["completions"].at(step) for step in result["completions"].steps()]
    assert any(frame["shape"].isna().any() for frame in frames), "no abstention was exercised"
    # The sample tables: one growing W&B table per key, every logged step in it.
    table_rows = wandb_rows(result["wandb"], "rewards/shape/score/scored_samples")
    assert sorted(table_rows) == result["completions"].steps()
    for step, row in table_rows.items():
        assert row["rewards/shape/score/scored_samples"]["_type"] == "incremental-table-file"
        data = result["wandb"].table(row["rewards/shape/score/scored_samples"]).to_dict()
        assert data["columns"][0] == "step"
        assert {r[0] for r in data["data"]} == {step}
    mlflow_steps = {at for at, _ in result["mlflow"].tables["rewards/shape/score/scored_samples"]}
    assert mlflow_steps == set(result["completions"].steps())


def test_grpo_conversational_format(tmp_path, monkeypatch, template_db):
    rewards = [trl_reward(g) for g in graders()]
    result = train(tmp_path, monkeypatch, template_db, rewards, logging_steps=2, chat=True)
    check_run(result, ["correct", "shape"], 2)
    frame = result["completions"].at(2)
    assert isinstance(frame["completion"][0], np.ndarray | list)  # message lists


def test_rloo_with_an_async_judge(tmp_path, monkeypatch, template_db):
    def judge(request: Any) -> Any:
        # 50 ms a call, so that the calls of one batch are in flight together.
        text = verdict("PASS" if "What is 1 + 1" in str(request.json) else "FAIL", "looked")
        return chat(text, delay=0.05)

    with JudgeServer(handler=judge) as server:
        model = OpenAIChatModel("judge", base_url=server.base_url, api_key="test-key")
        grader = BinaryJudgeGrader("judge", model, "The answer is correct.")
        rewards = [trl_reward(grader), trl_reward(graders()[0])]
        result = train(tmp_path, monkeypatch, template_db, rewards, logging_steps=1, trainer="rloo")
        assert server.max_in_flight > 1, "the judge calls of a batch did not overlap"
    check_run(result, ["judge", "correct"], 1)
    frame = result["completions"].at(1)
    assert set(frame["judge/reasoning"]) == {"looked"}
