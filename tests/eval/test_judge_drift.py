"""Judges over time in eval and compare: identity and served models recorded, drift said.

A loopback judge server reports the `model` and `system_fingerprint` a real provider would;
switching them between (or within) runs is a provider's snapshot change.
"""

from __future__ import annotations

import itertools
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from gradewire.cli._main import main
from gradewire.eval import compare_runs, load_run, run_eval
from gradewire.judges import BinaryJudgeGrader
from gradewire.models import OpenAIChatModel
from support.judge_server import JudgeServer, Reply, chat_body

PASS = json.dumps({"reasoning": "fine", "verdict": "PASS"})
JAN, JUN = "judge-2026-01-15", "judge-2026-06-30"


def data_file(tmp_path: Path, n: int = 6) -> Path:
    path = tmp_path / "data.jsonl"
    rows = [
        {"id": f"q{i}", "prompt": f"What is {i} + {i}?", "completion": str(2 * i)} for i in range(n)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def serve(server: JudgeServer, model: str, fingerprint: str | None = None) -> None:
    server.handler = lambda request: Reply(
        json=chat_body(PASS, model=model, system_fingerprint=fingerprint)
    )


def judge(server: JudgeServer, criteria: str = "Answers the question") -> BinaryJudgeGrader:
    return BinaryJudgeGrader(
        "helpful", OpenAIChatModel("judge", base_url=server.base_url, api_key="k"), criteria
    )


async def test_results_and_summary_record_the_identity_and_who_answered(
    judge_server: JudgeServer, tmp_path: Path
) -> None:
    serve(judge_server, JAN, "fp_1")
    grader = judge(judge_server)
    await run_eval(data_file(tmp_path), [grader], tmp_path / "run", concurrency=2)
    lines = [
        json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    ]
    for line in lines:
        recorded = line["grades"]["helpful"]["grade"]["info"]["judge"]
        assert recorded["identity"] == grader.identity
        assert recorded["served"] == [{"model": JAN, "fingerprint": "fp_1", "answers": 1}]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["judges"]["helpful"] == {
        "identity": grader.identity,
        "identities": {grader.identity: 6},
        "served": [{"model": JAN, "fingerprint": "fp_1", "answers": 6}],
    }


async def test_eval_says_when_the_served_model_changes_within_a_run(
    judge_server: JudgeServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    turn = itertools.count()
    judge_server.handler = lambda request: Reply(
        json=chat_body(PASS, model=JAN if next(turn) < 4 else JUN, system_fingerprint="fp_1")
    )
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        await run_eval(data_file(tmp_path), [judge(judge_server)], tmp_path / "run", concurrency=1)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["judges"]["helpful"]["served"] == [
        {"model": JAN, "fingerprint": "fp_1", "answers": 4},
        {"model": JUN, "fingerprint": "fp_1", "answers": 2},
    ]
    warned = [r.getMessage() for r in caplog.records if "changed within the run" in r.getMessage()]
    assert len(warned) == 1
    assert f"{JAN} (fp_1) (4 answers)" in warned[0]
    assert f"{JUN} (fp_1) (2 answers)" in warned[0]


async def test_one_served_model_gives_no_warning(
    judge_server: JudgeServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    serve(judge_server, JAN)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        await run_eval(data_file(tmp_path), [judge(judge_server)], tmp_path / "run")
    assert not [r for r in caplog.records if "judge" in r.getMessage()]


async def test_compare_says_which_judge_answered_in_each_run(
    judge_server: JudgeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = data_file(tmp_path)
    serve(judge_server, JAN)
    await run_eval(data, [judge(judge_server)], tmp_path / "a")
    serve(judge_server, JUN)
    await run_eval(data, [judge(judge_server)], tmp_path / "b")
    comparison = compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b"))
    assert comparison.judge_drift == (f"helpful: judged by {JAN} in A and {JUN} in B",)
    assert comparison.to_dict()["judge_drift"] == list(comparison.judge_drift)
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert f"warning: helpful: judged by {JAN} in A and {JUN} in B" in capsys.readouterr().out


async def test_compare_says_when_the_judge_identity_differs(
    judge_server: JudgeServer, tmp_path: Path
) -> None:
    data = data_file(tmp_path)
    serve(judge_server, JAN)
    one, two = judge(judge_server), judge(judge_server, "Answers the question in full")
    await run_eval(data, [one], tmp_path / "a")
    await run_eval(data, [two], tmp_path / "b")
    comparison = compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b"))
    (line,) = comparison.judge_drift
    assert line.startswith(
        f"helpful: the judge differs: {one.identity} in A and {two.identity} in B"
    )


async def test_same_judge_same_model_no_drift(judge_server: JudgeServer, tmp_path: Path) -> None:
    data = data_file(tmp_path)
    serve(judge_server, JAN, "fp_1")
    await run_eval(data, [judge(judge_server)], tmp_path / "a")
    await run_eval(data, [judge(judge_server)], tmp_path / "b")
    comparison = compare_runs(load_run(tmp_path / "a"), load_run(tmp_path / "b"))
    assert comparison.judge_drift == ()


def test_untrusted_served_names_are_escaped_in_the_terminal(tmp_path: Path) -> None:
    from gradewire.eval.runs._judge_facts import drift_lines

    facts_a: dict[str, Any] = {
        "g": {"served": [{"model": "m\x1b[31m", "fingerprint": None, "answers": 1}]}
    }
    facts_b: dict[str, Any] = {"g": {"served": [{"model": "n", "fingerprint": None, "answers": 1}]}}
    (line,) = drift_lines(["g"], facts_a, facts_b)
    from gradewire.eval.reporting._terminal import terminal_safe

    assert "\x1b" not in terminal_safe(line)
