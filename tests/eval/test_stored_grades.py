"""What a grader returns is stored as data rows are, or becomes an error outcome: never a
crash writing the results line after the grader ran."""

import asyncio
import datetime as dt
import json

import gradewire as gw
from gradewire.eval import EvalSample, run_eval


def one_sample():
    thread = gw.StringThread([("user", "q"), ("assistant", "a")])
    return [EvalSample("a", thread, "hash", "samples[a]")]


def results(folder):
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def test_grade_info_is_stored_as_data_values_are(tmp_path):
    def score(sample):
        info = {"when": dt.date(2024, 5, 1), "nan": float("nan"), "usage": {"calls": 1}}
        return gw.Grade(1.0, "k", info=info)

    result = asyncio.run(
        run_eval(one_sample(), [gw.BaseGrader.from_function("k", score)], tmp_path / "run")
    )
    assert result.summaries[0].mean == 1.0
    (line,) = results(tmp_path / "run")
    assert line["grades"]["k"]["grade"]["info"] == {
        "when": "2024-05-01",
        "nan": None,
        "usage": {"calls": 1},
    }


def test_a_grade_json_cannot_hold_is_an_error_outcome(tmp_path):
    def score(sample):
        return gw.Grade(1.0, "k", info={"x": float("inf"), "usage": {"tokens": float("nan")}})

    result = asyncio.run(
        run_eval(one_sample(), [gw.BaseGrader.from_function("k", score)], tmp_path / "run")
    )
    assert result.error_samples == 1
    (line,) = results(tmp_path / "run")
    outcome = line["grades"]["k"]
    assert outcome["status"] == "error"
    assert "cannot be stored in the run folder" in outcome["message"]
    assert "'grade'['info']['x'] is Infinity" in outcome["message"]
