"""A W&B eval run records which judge gave each grader's verdicts and which model answered."""

from __future__ import annotations

import json
from pathlib import Path

from gradewire.eval import run_eval
from gradewire.judges import BinaryJudgeGrader
from gradewire.models import OpenAIChatModel
from gradewire_wandb import find_offline_runs, read_offline_run
from gradewire_wandb._eval import WandbEvalTracker
from support.judge_server import JudgeServer, Reply, chat_body


async def test_the_run_config_names_the_judge_and_the_served_model(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    rows = [{"id": f"q{i}", "prompt": f"{i}?", "completion": str(i)} for i in range(4)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    answer = json.dumps({"reasoning": "ok", "verdict": "PASS"})
    with JudgeServer(
        lambda request: Reply(
            json=chat_body(answer, model="judge-2026-06-30", system_fingerprint="fp_2")
        )
    ) as server:
        judge = BinaryJudgeGrader(
            "helpful", OpenAIChatModel("judge", base_url=server.base_url, api_key="k"), "Answers"
        )
        result = await run_eval(data, [judge], tmp_path / "run")
    WandbEvalTracker(tmp_path / "run", project="eval", mode="offline", dir=tmp_path).log_run(
        result.run, result.summaries
    )
    (path,) = find_offline_runs(tmp_path)
    judges = read_offline_run(path).config["judges"]
    assert judges["helpful"]["identity"] == judge.identity
    assert judges["helpful"]["served"] == [
        {"model": "judge-2026-06-30", "fingerprint": "fp_2", "answers": 4}
    ]
