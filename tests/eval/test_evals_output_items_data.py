"""An OpenAI Evals run's output items as data for ``gradewire eval`` (issue 31 item 4):
each item graded again with the eval's testing_criteria run locally, and a note of how
each criterion agrees with the results the items recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rapidfuzz import fuzz

from gradewire.cli._main import main
from gradewire.eval import DataError, load_run, load_samples
from gradewire.eval.runs._evals_output_items import read_evals_output_items
from gradewire.eval.runs._recorded_agreement import is_deterministic, recorded_agreement

CRITERIA = {
    "name": "capitals",
    "testing_criteria": [
        {
            "type": "string_check",
            "name": "exact",
            "operation": "eq",
            "input": "{{sample.output_text}}",
            "reference": "{{item.answer}}",
        },
        {
            "type": "text_similarity",
            "name": "similar",
            "evaluation_metric": "fuzzy_match",
            "input": "{{sample.output_text}}",
            "reference": "{{item.answer}}",
            "pass_threshold": 0.6,
        },
    ],
}
ANSWERS = ["Paris", "Rome", "Madrid", "Berlin", "Lisbon", "Vienna", "Oslo", "Bern"]
GIVEN = ["Paris", "Roma", "Madrid", "Berlin!", "Lisboa", "Vienna", "Oslo", "Bern <b>"]
WRONG = {"3", "6"}  # items whose recorded similarity this test plants as another figure


def _item(i: int, *, failed: bool = False) -> dict:
    answer, given = ANSWERS[i], GIVEN[i]
    # The recorded results, as a reference computes them (rapidfuzz's ratio, OpenAI's metric).
    similar = fuzz.ratio(given, answer) / 100
    if str(i) in WRONG:
        similar = round(similar / 2, 3)
    return {
        "object": "eval.run.output_item",
        "id": f"outputitem_{i}",
        "run_id": "evalrun_1",
        "eval_id": "eval_1",
        "datasource_item_id": i,
        "datasource_item": {"item": {"question": f"Capital #{i}?", "answer": answer}},
        "results": [
            {
                "name": "exact",
                "type": "string_check",
                "score": float(given == answer),
                "passed": given == answer,
            },
            {
                "name": "similar",
                "type": "text_similarity",
                "score": similar,
                "passed": similar >= 0.6,
            },
        ],
        "sample": {
            "input": [
                {"role": "developer", "content": "Answer with the city."},
                {"role": "user", "content": [{"type": "input_text", "text": f"Capital #{i}?"}]},
            ],
            "output": []
            if failed
            else [
                {"role": "assistant", "content": "thinking"},
                {"role": "assistant", "content": given},
            ],
            "error": {"code": "rate_limit", "message": "429 Too Many Requests"} if failed else None,
            "model": "gpt-4.1-mini",
        },
    }


def _files(tmp_path: Path, items: list[dict]) -> tuple[Path, Path]:
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    graders = tmp_path / "eval.json"
    graders.write_text(json.dumps(CRITERIA), encoding="utf-8")
    return data, graders


def test_each_item_is_a_sample_its_row_the_metadata_and_its_last_output_the_completion(
    tmp_path,
):
    data, _ = _files(tmp_path, [_item(i) for i in range(8)])
    samples = load_samples(data)
    assert [s.id for s in samples] == [str(i) for i in range(8)]
    first = samples[1].thread
    assert first.completion() == "Roma"  # the last output message, not the first
    assert [(t.role, t.content) for t in first.turns[:-1]] == [
        ("system", "Answer with the city."),
        ("user", "Capital #1?"),
    ]
    assert first.metadata == {"question": "Capital #1?", "answer": "Rome", "datasource_item_id": 1}
    # Not the output items' own fields: the recorded results are no part of the data.
    assert "results" not in first.metadata
    # The data options name the fields as for any data; the item is read the same.
    renamed = load_samples(data, completion_key="output", prompt_key="input")
    assert [s.thread.to_dict() for s in renamed] == [s.thread.to_dict() for s in samples]


def test_an_item_whose_model_call_failed_is_refused_with_the_failure(tmp_path):
    data, _ = _files(tmp_path, [_item(0), _item(1, failed=True)])
    with pytest.raises(DataError, match=r"item 1: its model call failed \(429 Too Many Requests\)"):
        load_samples(data)


def test_eval_grades_the_items_again_and_says_where_it_agrees_with_the_recorded_results(
    tmp_path, capsys
):
    data, graders = _files(tmp_path, [_item(i) for i in range(8)])
    out = tmp_path / "run"
    assert (
        main(["eval", str(data), "--graders", str(graders), "--out", str(out), "--no-progress"])
        == 0
    )
    printed = capsys.readouterr().out
    run = load_run(out)
    recorded = read_evals_output_items(data)
    # gradewire's results, checked against the reference figures themselves.
    for i in range(8):
        assert run.scores("exact")[str(i)] == float(GIVEN[i] == ANSWERS[i])
        assert run.scores("similar")[str(i)] == pytest.approx(
            fuzz.ratio(GIVEN[i], ANSWERS[i]) / 100
        )
    exact, similar = recorded_agreement(run, recorded)
    assert (exact.grader, exact.n, exact.agreeing, exact.disagreeing) == ("exact", 8, 8, ())
    assert exact.deterministic
    assert (similar.n, similar.agreeing, similar.disagreeing) == (8, 6, ("3", "6"))
    assert similar.examples[0][0] == "3"
    assert similar.examples[0][1] == pytest.approx(round(fuzz.ratio("Berlin!", "Berlin") / 200, 3))
    assert "exact: agrees with the recorded result on 8 of 8 items [deterministic]" in printed
    assert "similar: agrees with the recorded result on 6 of 8 items; disagrees on 3, 6" in printed
    assert "a deterministic grader should agree on every item" in printed
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert [a["grader"] for a in summary["recorded_agreement"]] == ["exact", "similar"]
    assert summary["recorded_agreement"][1]["disagreeing"] == ["3", "6"]


def test_which_criteria_are_deterministic():
    assert is_deterministic({"type": "string_check"})
    assert is_deterministic({"type": "text_similarity", "evaluation_metric": "bleu"})
    assert not is_deterministic({"type": "text_similarity", "evaluation_metric": "cosine"})
    assert not is_deterministic({"type": "label_model"})
    assert not is_deterministic({"type": "score_model"})
    assert is_deterministic(
        {"type": "multi", "graders": {"a": {"type": "python"}, "b": {"type": "string_check"}}}
    )
    assert not is_deterministic(
        {"type": "multi", "graders": {"a": {"type": "python"}, "b": {"type": "score_model"}}}
    )


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b"\xff\xfe not text\n", "is not UTF-8"),
        (b'{"datasource_item_id": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", "nested too deep"),
        (b'{"datasource_item_id": ' + b"9" * 5000 + b"}\n", "cannot be read"),
        (b"{not json\n", "is not JSON"),
    ],
)
def test_a_hostile_line_is_refused_naming_it_as_data_and_as_a_run(tmp_path, capsys, line, problem):
    data, graders = _files(tmp_path, [_item(0)])
    with data.open("ab") as file:
        file.write(line)
    where = f"{data}:2"
    with pytest.raises(DataError, match=problem) as refused:
        load_samples(data)
    assert where in str(refused.value)
    with pytest.raises(DataError, match=problem):
        read_evals_output_items(data)
    argv = ["eval", str(data), "--graders", str(graders), "--out", str(tmp_path / "run")]
    assert main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert where in err
    assert "Traceback" not in err
    assert main(["compare", str(data), str(data)]) == 2
    err = capsys.readouterr().err
    assert where in err
    assert problem in err
