"""``gradewire eval --engine ray``: the same run folder, resumption and report as locally."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import gradewire as gw
from gradewire.eval import run_eval
from gradewire_ray._eval_engine import ray_engine
from support.processes import child_env

TESTS = Path(__file__).resolve().parents[3] / "tests"


def data_file(tmp_path: Path, n: int) -> Path:
    rows = [
        {
            "id": f"q{i}",
            "prompt": f"What is {i} + {i}?",
            "completion": str(2 * i + (i % 3 == 0)),
            "answer": 2 * i,
            **({} if i % 7 else {"skip": True}),
        }
        for i in range(n)
    ]
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def correct(sample: gw.StringThread) -> float | None:
    if sample.metadata.get("skip"):
        return None
    return gw.numeric_match(sample.completion() or "", sample.metadata["answer"])


def graders(judge_url: str) -> list[gw.BaseGrader]:
    model = gw.OpenAIChatModel("judge", base_url=judge_url, max_attempts=1)
    return [
        gw.BaseGrader.from_function("correct", correct),
        gw.BinaryJudgeGrader("helpful", model, "Answers the question"),
    ]


def verdict(request: Any) -> str:
    """PASS for even questions, FAIL for odd ones, an HTTP 500 for every 11th."""
    from support.judge_server import error

    text = request.json["messages"][-1]["content"]
    number = int(text.split("What is ")[1].split(" ")[0])
    if number % 11 == 0:
        return error(500)  # type: ignore[no-any-return]
    return json.dumps({"reasoning": "checked", "verdict": "PASS" if number % 2 == 0 else "FAIL"})


def outcomes(folder: Path) -> dict[str, dict[str, Any]]:
    """Sample id to each grader's stored outcome, without timings."""
    out: dict[str, dict[str, Any]] = {}
    for line in (folder / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        grades = {
            k: {f: v for f, v in o.items() if f != "seconds"} for k, o in record["grades"].items()
        }
        out.setdefault(record["id"], {}).update(grades)
    return out


def test_a_ray_run_resumes_and_matches_a_local_run(ray_instance: Any, tmp_path: Path) -> None:
    from support.judge_server import JudgeServer

    data = data_file(tmp_path, 120)
    with JudgeServer(verdict) as server:
        asyncio.run(run_eval(data, graders(server.base_url), tmp_path / "local"))
        local_calls = len(server.requests)
        first = asyncio.run(
            run_eval(
                data, graders(server.base_url), tmp_path / "ray", limit=50, engine=ray_engine()
            )
        )
        rest = asyncio.run(
            run_eval(data, graders(server.base_url), tmp_path / "ray", engine=ray_engine())
        )
        ray_calls = len(server.requests) - local_calls
    assert (first.outcome.graded, first.outcome.skipped) == (50, 0)
    assert (rest.outcome.graded, rest.outcome.skipped) == (70, 50)
    assert ray_calls == local_calls == 120  # each sample judged once, resumed or not
    assert outcomes(tmp_path / "ray") == outcomes(tmp_path / "local")  # input hashes too
    prompts = {
        name: {
            line["id"]: line["prompt_hash"]
            for line in map(
                json.loads, (tmp_path / name / "results.jsonl").read_text().splitlines()
            )
        }
        for name in ("local", "ray")
    }
    assert prompts["ray"] == prompts["local"]
    assert all(
        o["input_hash"] for sample in outcomes(tmp_path / "ray").values() for o in sample.values()
    )
    summary = {
        name: json.loads((tmp_path / name / "summary.json").read_text())
        for name in ("local", "ray")
    }
    assert summary["ray"]["graders"] == summary["local"]["graders"]
    assert summary["ray"]["metrics"] == summary["local"]["metrics"]
    helpful = {s.grader: s for s in rest.summaries}["helpful"]
    assert helpful.errors == len(range(0, 120, 11))
    assert helpful.n == 120 - helpful.errors
    assert (tmp_path / "ray" / "report.html").stat().st_size > 0


def test_the_command_line_on_a_running_cluster(ray_instance: Any, tmp_path: Path) -> None:
    data = data_file(tmp_path, 30)
    graders_toml = tmp_path / "graders.toml"
    graders_toml.write_text(
        '[[graders]]\ntype = "custom"\nkey = "correct"'
        '\nfunction = "support.eval_graders:numeric_answer"\n',
        encoding="utf-8",
    )
    env = child_env(TESTS)
    address = ray_instance.get_runtime_context().gcs_address
    command = [sys.executable, "-m", "gradewire", "eval", str(data), "--graders", str(graders_toml)]
    done = subprocess.run(
        [
            *command,
            "--out",
            str(tmp_path / "run"),
            "--engine",
            "ray",
            "--ray-address",
            address,
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "report:" in done.stdout
    assert len(outcomes(tmp_path / "run")) == 30
    again = subprocess.run(
        [
            *command,
            "--out",
            str(tmp_path / "run"),
            "--engine",
            "ray",
            "--ray-address",
            address,
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == 30  # all skipped
    wrong = subprocess.run(
        [*command, "--ray-address", address], capture_output=True, text=True, env=env, timeout=120
    )
    assert wrong.returncode == 2
    assert "--ray-address needs --engine ray" in wrong.stderr
