"""compare refuses pairs that are not the same question, and graders that changed between runs.

Pairing is by sample id; each result line records a hash of the sample's prompt (every turn
before the completion), so two runs whose ids point at different questions are caught.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import gradewire as gw
from gradewire.eval import MismatchedRunsError, compare_runs, load_run, run_eval
from support.eval_cli import run
from support.eval_helpers import make_run, write_rows


def correct(sample: gw.StringThread) -> float:
    return gw.numeric_match(sample.completion() or "", sample.metadata["answer"])


def rows(n: int, *, wrong_every: int) -> list[dict[str, object]]:
    return [
        {
            "prompt": f"What is {i} + {i}?",
            "completion": str(2 * i + (i % wrong_every == 0)),
            "answer": 2 * i,
        }
        for i in range(n)
    ]


def graded(folder: Path, data: Path, *graders: gw.BaseGrader) -> gw.EvalRun:
    chosen = list(graders) or [gw.BaseGrader.from_function("correct", correct)]
    return asyncio.run(run_eval(data, chosen, folder)).run


def test_ids_by_position_on_reordered_rows_are_refused(tmp_path: Path) -> None:
    # Ids by position: the same id names a different question once B's rows are shuffled.
    a_rows = [{"id": i, **row} for i, row in enumerate(rows(200, wrong_every=3))]
    b_rows = [{"id": i, **row} for i, row in enumerate(reversed(rows(200, wrong_every=5)))]
    a = graded(tmp_path / "a", write_rows(tmp_path / "a.jsonl", a_rows))
    b = graded(tmp_path / "b", write_rows(tmp_path / "b.jsonl", b_rows))
    with pytest.raises(MismatchedRunsError) as caught:
        compare_runs(a, b)
    message = str(caught.value)
    assert "200 of 200 paired samples have different prompts" in message
    assert "'0'" in message
    assert "What is 0 + 0?" in message
    assert "What is 199 + 199?" in message
    assert "allow_mismatched_prompts" in message
    allowed = compare_runs(a, b, allow_mismatched_prompts=True)
    assert allowed.mismatched_prompts[:1] == ("0",)
    assert len(allowed.mismatched_prompts) == 200
    assert allowed.to_dict()["mismatched_prompts"]["count"] == 200


def test_same_questions_with_other_completions_and_metadata_pair(tmp_path: Path) -> None:
    a_rows = [{"id": i, **row} for i, row in enumerate(rows(30, wrong_every=3))]
    b_rows = [{"id": i, **row, "topic": "other"} for i, row in enumerate(rows(30, wrong_every=5))]
    a = graded(tmp_path / "a", write_rows(tmp_path / "a.jsonl", a_rows))
    b = graded(tmp_path / "b", write_rows(tmp_path / "b.jsonl", b_rows))
    comparison = compare_runs(a, b)  # completions and metadata are not part of the prompt
    assert comparison.graders[0].n_pairs == 30
    assert comparison.mismatched_prompts == ()


def test_runs_written_without_prompt_hashes_are_checked_from_their_inputs(tmp_path: Path) -> None:
    a_rows = [{"id": i, **row} for i, row in enumerate(rows(20, wrong_every=3))]
    b_rows = [{"id": i, **row} for i, row in enumerate(reversed(rows(20, wrong_every=3)))]
    graded(tmp_path / "a", write_rows(tmp_path / "a.jsonl", a_rows))
    graded(tmp_path / "b", write_rows(tmp_path / "b.jsonl", b_rows))
    for name in ("a", "b"):  # as an older gradewire wrote them
        results = tmp_path / name / "results.jsonl"
        lines = [json.loads(line) for line in results.read_text().splitlines()]
        for line in lines:
            line.pop("prompt_hash", None)
        results.write_text("".join(json.dumps(line) + "\n" for line in lines))
    a, b = load_run(tmp_path / "a"), load_run(tmp_path / "b")
    with pytest.raises(MismatchedRunsError, match="different prompts"):
        compare_runs(a, b)
    same = load_run(tmp_path / "a")
    assert compare_runs(a, same).graders[0].n_pairs == 20


def brevity(sample: gw.StringThread) -> float:
    return min(1.0, 3 / max(len(sample.completion() or ""), 1))


def brevity_strict(sample: gw.StringThread) -> float:
    return 1.0 if len(sample.completion() or "") <= 1 else 0.0


def test_a_grader_whose_spec_changed_is_refused(tmp_path: Path) -> None:
    data = write_rows(tmp_path / "d.jsonl", rows(20, wrong_every=3))
    kept = gw.BaseGrader.from_function("correct", correct)
    a = graded(tmp_path / "a", data, kept, gw.BaseGrader.from_function("brevity", brevity))
    b = graded(tmp_path / "b", data, kept, gw.BaseGrader.from_function("brevity", brevity_strict))
    with pytest.raises(MismatchedRunsError) as caught:
        compare_runs(a, b)
    message = str(caught.value)
    assert "'brevity'" in message
    assert "brevity_strict" in message  # the difference between the two specs
    assert "correct" not in message.split("allow_changed_graders")[0].split("'brevity'")[0]
    comparison = compare_runs(a, b, allow_changed_graders=True)
    assert comparison.changed_graders == ("brevity",)
    assert [g.grader for g in comparison.graders] == ["correct", "brevity"]


def test_grader_files_with_another_function_under_one_key_are_refused(tmp_path: Path) -> None:
    data = write_rows(tmp_path / "d.jsonl", rows(10, wrong_every=3))
    spec = '[[graders]]\ntype = "custom"\nkey = "brevity"\nfunction = "support.eval_graders:{}"\n'
    runs = []
    for name, function in (("a", "brevity"), ("b", "numeric_answer")):
        file = tmp_path / f"{name}.toml"
        file.write_text(spec.format(function))
        runs.append(graded(tmp_path / name, data, *gw.load_graders(file)))
    with pytest.raises(MismatchedRunsError) as caught:
        compare_runs(*runs)
    assert "support.eval_graders:brevity" in str(caught.value)
    assert "support.eval_graders:numeric_answer" in str(caught.value)


def test_graders_and_samples_of_one_run_only_are_listed_in_every_output(tmp_path: Path) -> None:
    make_run(tmp_path / "a", {"g": [1, 0, 1], "old": [1, 1, 1]}, ids=["x", "y", "gone"])
    make_run(tmp_path / "b", {"g": [1, 1, 1], "new": [0, 0, 1]}, ids=["x", "y", "added"])
    html = tmp_path / "cmp.html"
    done = run("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--html", str(html))
    assert done.returncode == 0, done.stderr
    assert "graders only in A (not compared): old" in done.stdout
    assert "graders only in B (not compared): new" in done.stdout
    assert "only in A: gone" in done.stdout
    assert "only in B: added" in done.stdout
    page = html.read_text()
    assert "graders only in A (not compared):</b> old" in page
    assert "graders only in B (not compared):</b> new" in page


def test_the_cli_refuses_and_allows_as_the_python_api_does(tmp_path: Path) -> None:
    a_rows = [{"id": i, **row} for i, row in enumerate(rows(12, wrong_every=3))]
    b_rows = [{"id": i, **row} for i, row in enumerate(reversed(rows(12, wrong_every=5)))]
    graded(tmp_path / "a", write_rows(tmp_path / "a.jsonl", a_rows))
    graded(tmp_path / "b", write_rows(tmp_path / "b.jsonl", b_rows))
    refused = run("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert refused.returncode == 2
    assert "12 of 12 paired samples have different prompts" in refused.stderr
    assert "--allow-mismatched-prompts" in refused.stderr
    allowed = run("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--allow-mismatched-prompts")
    assert allowed.returncode == 0, allowed.stderr
    assert "warning: 12 pair(s) have different prompts in A and B" in allowed.stdout
