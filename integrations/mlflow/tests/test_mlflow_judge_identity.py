"""An MLflow eval run records which judge gave the verdicts: a run parameter, and each
sample's feedback names the judge's identity and the model that answered."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import mlflow
from mlflow import MlflowClient

from gradewire.eval import run_eval
from gradewire.judges import BinaryJudgeGrader
from gradewire.models import OpenAIChatModel
from gradewire_mlflow._eval import MlflowEvalTracker
from support.judge_server import JudgeServer, Reply, chat_body


async def test_params_and_feedback_name_the_judge(
    tmp_path: Path, mlflow_server, monkeypatch
) -> None:
    data = tmp_path / "d.jsonl"
    rows = [{"id": f"q{i}", "prompt": f"{i}?", "completion": str(i)} for i in range(3)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    answer = json.dumps({"reasoning": "ok", "verdict": "PASS"})
    with JudgeServer(
        lambda request: Reply(
            json=chat_body(answer, model="judge-2026-01-15", system_fingerprint="fp_1")
        )
    ) as server:
        judge = BinaryJudgeGrader(
            "helpful", OpenAIChatModel("judge", base_url=server.base_url, api_key="k"), "Answers"
        )
        result = await run_eval(data, [judge], tmp_path / "run")
    experiment = f"judge-{uuid.uuid4().hex[:8]}"
    tracker = MlflowEvalTracker(
        tmp_path / "run", tracking_uri=mlflow_server.url, experiment_name=experiment
    )
    tracker.log_run(result.run, result.summaries)
    run_id = json.loads((tmp_path / "run" / "mlflow.json").read_text())["run_id"]
    client = MlflowClient(mlflow_server.url)
    assert client.get_run(run_id).data.params["gradewire.judge.helpful"] == judge.identity
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)
    where = [client.get_run(run_id).info.experiment_id]
    traces = mlflow.search_traces(run_id=run_id, return_type="list", locations=where)
    assert len(traces) == 3
    for trace in traces:
        (feedback,) = [a for a in trace.info.assessments if a.name == "helpful"]
        assert feedback.metadata["gradewire.judge_identity"] == judge.identity
        assert feedback.metadata["gradewire.served_model"] == "judge-2026-01-15 (fp_1)"
