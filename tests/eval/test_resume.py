"""Resuming into a run folder: what is stale is re-graded, and the run never shrinks.

Staleness is decided per grader outcome (each records the input it graded), and a run
folder's samples are those of the data it was made from, whatever part of it a rerun grades.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import gradewire as gw
from gradewire.eval import RunFolderError, load_run, run_eval
from support.eval_helpers import write_rows


class Counted:
    """A function grader that counts the samples it grades, by prompt."""

    def __init__(self, key: str, score) -> None:
        self.calls: list[str] = []
        self.score = score
        self.grader = gw.BaseGrader.from_function(key, self)

    def __call__(self, sample: gw.StringThread) -> float:
        self.calls.append(sample.turns[0].content)
        return float(self.score(sample))


def correct(sample: gw.StringThread) -> float:
    return gw.numeric_match(sample.completion() or "", sample.metadata["answer"])


def brevity(sample: gw.StringThread) -> float:
    return min(1.0, 3 / max(len(sample.completion() or ""), 1))


def rows(n: int, edited: int | None = None) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i in range(n):
        completion = str(2 * i)
        if i == edited:
            completion = f"the answer is {2 * i}, as anyone can see"
        out.append(
            {
                "id": f"q{i}",
                "prompt": f"What is {i} + {i}?",
                "completion": completion,
                "answer": 2 * i,
            }
        )
    return out


def evaluate(data: Path, folder: Path, *graders: gw.BaseGrader, **options) -> gw.EvalResult:
    return asyncio.run(run_eval(data, list(graders), folder, **options))


def test_a_grade_of_an_edited_input_is_regraded_even_after_a_run_without_its_grader(
    tmp_path: Path,
) -> None:
    a, b = Counted("correct", correct), Counted("brevity", brevity)
    data = tmp_path / "data.jsonl"
    out = tmp_path / "run"
    write_rows(data, rows(5))
    evaluate(data, out, a.grader, b.grader)
    write_rows(data, rows(5, edited=2))  # v2: sample q2's completion is longer
    middle = evaluate(data, out, a.grader)
    assert a.calls[-1] == "What is 2 + 2?"
    # B's grade of q2 was made on v1: it is stale now, never a number of the v2 run.
    summary = {s.grader: s for s in middle.summaries}
    assert summary["brevity"].n == 4
    assert summary["brevity"].missing == 1
    b.calls.clear()
    final = evaluate(data, out, a.grader, b.grader)
    assert b.calls == ["What is 2 + 2?"]  # re-graded, and only that sample
    scores = final.run.scores("brevity")
    assert scores["q2"] == pytest.approx(
        brevity(gw.StringThread.from_dict(final.run.records[2].input))
    )
    assert scores["q2"] < 1.0
    assert {s.grader: s.n for s in final.summaries} == {"correct": 5, "brevity": 5}


def test_an_old_folder_whose_outcomes_have_no_input_hash_is_read_per_line(
    tmp_path: Path,
) -> None:
    a, b = Counted("correct", correct), Counted("brevity", brevity)
    data = tmp_path / "data.jsonl"
    out = tmp_path / "run"
    write_rows(data, rows(3))
    evaluate(data, out, a.grader, b.grader)
    write_rows(data, rows(3, edited=1))
    evaluate(data, out, a.grader)
    results = out / "results.jsonl"
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    for line in lines:  # as an older gradewire wrote them: the input hash per line only
        line.pop("prompt_hash", None)
        for outcome in line["grades"].values():
            outcome.pop("input_hash", None)
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run = load_run(out)
    assert set(run.scores("brevity")) == {"q0", "q2"}
    b.calls.clear()
    evaluate(data, out, a.grader, b.grader)
    assert b.calls == ["What is 1 + 1?"]


def test_a_limited_rerun_never_shrinks_the_run(tmp_path: Path) -> None:
    grader = Counted("correct", correct)
    data = write_rows(tmp_path / "data.jsonl", rows(20))
    out = tmp_path / "run"
    evaluate(data, out, grader.grader)
    assert len(grader.calls) == 20
    again = evaluate(data, out, grader.grader, limit=3)
    assert len(grader.calls) == 20  # nothing left to grade in the first 3
    assert len(again.run.records) == 20
    assert again.summaries[0].n == 20
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 20
    assert summary["complete"] is True
    assert len(load_run(out).records) == 20
    report = (out / "report.html").read_text()
    assert "20 samples" in report


def test_a_limited_first_run_says_how_much_of_the_data_it_holds(tmp_path: Path) -> None:
    data = write_rows(tmp_path / "data.jsonl", rows(10))
    out = tmp_path / "run"
    first = evaluate(data, out, gw.BaseGrader.from_function("correct", correct), limit=4)
    assert len(first.run.records) == 4
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 4
    assert summary["samples_in_data"] == 10
    assert summary["complete"] is False
    rest = evaluate(data, out, gw.BaseGrader.from_function("correct", correct))
    assert rest.outcome.graded == 6
    assert json.loads((out / "summary.json").read_text())["complete"] is True


def test_an_edited_data_file_regrades_what_changed_and_drops_removed_rows(
    tmp_path: Path,
) -> None:
    grader = Counted("correct", correct)
    data = write_rows(tmp_path / "data.jsonl", rows(6))
    out = tmp_path / "run"
    evaluate(data, out, grader.grader)
    grader.calls.clear()
    write_rows(data, rows(5, edited=1))  # q1 edited, q5 removed
    result = evaluate(data, out, grader.grader)
    assert grader.calls == ["What is 1 + 1?"]
    assert [r.id for r in result.run.records] == [f"q{i}" for i in range(5)]


def test_an_interrupted_regrade_never_shows_the_old_input_as_current(tmp_path: Path) -> None:
    data = write_rows(tmp_path / "data.jsonl", rows(6))
    out = tmp_path / "run"
    evaluate(data, out, gw.BaseGrader.from_function("correct", correct))
    write_rows(data, [{**row, "completion": "7"} for row in rows(6)])  # every answer edited
    # Grade only the first two of the edited data: the other four hold v1 grades only.
    partial = evaluate(data, out, gw.BaseGrader.from_function("correct", correct), limit=2)
    assert [r.id for r in partial.run.records] == ["q0", "q1"]
    assert partial.summaries[0].n == 2
    assert json.loads((out / "summary.json").read_text())["samples_in_data"] == 6


def test_another_data_file_into_a_run_is_refused_unless_forced(tmp_path: Path) -> None:
    grader = gw.BaseGrader.from_function("correct", correct)
    out = tmp_path / "run"
    evaluate(write_rows(tmp_path / "a.jsonl", rows(6)), out, grader)
    summary = (out / "summary.json").read_bytes()
    other = write_rows(tmp_path / "b.jsonl", rows(4, edited=0))
    with pytest.raises(RunFolderError) as caught:
        evaluate(other, out, grader)
    message = str(caught.value)
    assert "a.jsonl" in message
    assert "b.jsonl" in message
    assert "force" in message
    assert (out / "summary.json").read_bytes() == summary
    forced = evaluate(other, out, grader, force=True)
    assert [r.id for r in forced.run.records] == ["q0", "q1", "q2", "q3"]
    assert forced.outcome.graded == 1  # q0 changed; the others are the same inputs


def test_a_rerun_with_fewer_graders_keeps_the_others(tmp_path: Path) -> None:
    data = write_rows(tmp_path / "data.jsonl", rows(4))
    out = tmp_path / "run"
    evaluate(
        data,
        out,
        gw.BaseGrader.from_function("correct", correct),
        gw.BaseGrader.from_function("brevity", brevity),
    )
    again = evaluate(data, out, gw.BaseGrader.from_function("brevity", brevity))
    assert again.run.graders == ["correct", "brevity"]
    assert {s.grader: s.n for s in again.summaries} == {"correct": 4, "brevity": 4}
