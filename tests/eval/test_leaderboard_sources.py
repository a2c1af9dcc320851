"""Runs from OpenAI Evals output items (issue 31 item 4), and sources that fail clearly
when their extra is missing (item 5)."""

from __future__ import annotations

import json
import math
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from gradewire.core import InvalidInputError, MissingDependencyError
from gradewire.core._integrations import INTEGRATIONS_GROUP
from gradewire.eval import compare_runs, leaderboard, open_run
from gradewire.eval.runs import _sources
from support.eval_cli import run


def _item(i: int, answer: str, correct: bool, similarity: float, **extra) -> dict:
    """An output item as client.evals.runs.output_items.list returns it (model_dump)."""
    return {
        "object": "eval.run.output_item",
        "id": f"outputitem_{i}",
        "run_id": "evalrun_1",
        "eval_id": "eval_1",
        "created_at": 1_700_000_000,
        "status": "pass" if correct else "fail",
        "datasource_item_id": i,
        "datasource_item": {"item": {"question": f"q{i}?", "answer": "yes", "topic": f"t{i % 2}"}},
        "results": [
            {
                "name": "exact",
                "type": "string_check",
                "score": float(correct),
                "passed": correct,
                "sample": None,
            },
            {
                "name": "similar",
                "type": "text_similarity",
                "score": similarity,
                "passed": similarity >= 0.5,
                "sample": None,
            },
        ],
        "sample": {
            "input": [
                {"role": "system", "content": "Answer yes or no."},
                {"role": "user", "content": [{"type": "input_text", "text": f"q{i}?"}]},
            ],
            "output": [{"role": "assistant", "content": answer}],
            "error": None,
            "finish_reason": "stop",
            "model": "gpt-4.1-mini",
            "usage": {"total_tokens": 10},
            "temperature": 1.0,
            "top_p": 1.0,
            "seed": 1,
            "max_completion_tokens": 100,
        },
        **extra,
    }


def _write(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def _files(tmp_path: Path, n: int = 60) -> list[Path]:
    rng = np.random.default_rng(0)
    out = []
    for name, p in (("model-a", 0.85), ("model-b", 0.5), ("model-c", 0.45)):
        items = []
        for i in range(n):
            correct = bool(rng.random() < p)
            items.append(_item(i, "yes" if correct else "no", correct, float(rng.uniform(0, 1))))
        out.append(_write(tmp_path / f"{name}.jsonl", items))
    return out


def test_an_output_items_file_is_a_run_with_pass_rates_beside_scores(tmp_path):
    path = _files(tmp_path)[0]
    items = [json.loads(line) for line in path.read_text().splitlines()]
    run_ = open_run(path)
    assert run_.graders == ["exact", "similar"]
    assert [r.id for r in run_.records] == [str(i) for i in range(60)]
    record = run_.records[3]
    assert record.completion() == items[3]["sample"]["output"][-1]["content"]
    assert record.metadata["question"] == "q3?"
    assert record.metadata["datasource_item_id"] == 3
    scores = run_.scores("similar")
    assert scores["5"] == items[5]["results"][1]["score"]
    summaries = {s.grader: s for s in run_.summaries()}
    passed = [it["results"][1]["passed"] for it in items]
    assert summaries["similar"].pass_rate == pytest.approx(np.mean(passed))
    assert summaries["similar"].mean == pytest.approx(
        np.mean([it["results"][1]["score"] for it in items])
    )
    assert run_.config["source"] == "openai-evals"
    assert run_.config["model"] == "gpt-4.1-mini"


def test_a_failed_call_is_an_error_and_a_nan_an_abstention_never_a_zero(tmp_path):
    items = [_item(i, "yes", True, 0.9) for i in range(4)]
    items[1]["results"] = []
    items[1]["sample"]["error"] = {"code": "rate_limit", "message": "too many requests"}
    items[2]["results"][1]["score"] = float("nan")
    items[3]["results"][0]["score"] = None
    items[3]["results"][0]["passed"] = False
    run_ = open_run(_write(tmp_path / "odd.jsonl", items))
    outcomes = {r.id: r.outcomes for r in run_.records}
    assert outcomes["1"]["exact"].status == "error"
    assert "too many requests" in (outcomes["1"]["exact"].message or "")
    assert outcomes["2"]["similar"].status == "abstained"
    assert run_.scores("exact") == {"0": 1.0, "2": 1.0, "3": 0.0}


def test_a_repeated_item_or_a_malformed_line_is_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="twice"):
        open_run(_write(tmp_path / "twice.jsonl", [_item(1, "yes", True, 0.5)] * 2))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_item(1, "yes", True, 0.5)) + "\n{not json\n")
    with pytest.raises(InvalidInputError, match=r"bad\.jsonl:2"):
        open_run(bad)


def test_two_output_item_files_compare_and_rank(tmp_path):
    a, b, c = _files(tmp_path)
    comparison = compare_runs(open_run(a), open_run(b))
    assert {g.grader for g in comparison.graders} == {"exact", "similar"}
    assert all(g.n_pairs == 60 for g in comparison.graders)
    out = run("compare", str(a), str(b), "--json")
    assert out.returncode == 0, out.stderr
    assert {g["grader"] for g in json.loads(out.stdout)["graders"]} == {"exact", "similar"}
    board = leaderboard([open_run(p) for p in (a, b, c)]).board("exact")
    assert board.runs[0].run == "model-a"
    assert board.runs[0].pass_rate == pytest.approx(board.runs[0].mean)
    out = run("leaderboard", str(a), str(b), str(c), "--json")
    assert out.returncode == 0, out.stderr
    ranked = json.loads(out.stdout)["graders"][0]
    assert ranked["runs"][0]["run"] == "model-a"
    assert math.isfinite(ranked["runs"][0]["pass_rate"])


class _Broken(metadata.EntryPoint):
    """An installed reader whose module needs a package that is missing."""

    def load(self):
        raise ModuleNotFoundError("No module named 'inspect_ai'", name="inspect_ai")


@pytest.fixture
def inspect_missing(monkeypatch):
    broken = _Broken(
        "eval_source.inspect",
        "gradewire_inspect._log_source:read_inspect_log",
        INTEGRATIONS_GROUP,
    )
    monkeypatch.setattr(
        _sources, "integrations", lambda kind: {"inspect": broken} if kind == "eval_source" else {}
    )


def test_a_missing_extra_is_skipped_while_guessing(tmp_path, inspect_missing):
    # Before: entry.load() raised ModuleNotFoundError: No module named 'inspect_ai'.
    a, b, _ = _files(tmp_path, n=10)
    assert compare_runs(open_run(a), open_run(b)).graders


def test_a_missing_extra_is_named_only_when_nothing_else_reads_the_file(tmp_path, inspect_missing):
    other = tmp_path / "a.jsonl"
    other.write_text('{"prompt": "hi"}\n')
    with pytest.raises(InvalidInputError) as caught:
        open_run(other)
    message = str(caught.value)
    assert "cannot read as a run" in message
    assert "This may be an Inspect AI log" in message
    assert "pip install 'gradewire[inspect]'" in message
    log = tmp_path / "log.eval"
    log.write_bytes(b"PK")
    with pytest.raises(MissingDependencyError, match=r"gradewire\[inspect\]"):
        open_run(log)
