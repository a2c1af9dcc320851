"""gradewire_inspect.scorer in real Inspect evals on Inspect's mockllm/model."""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate, system_message

import gradewire as gw
from gradewire_inspect import ABSTAINED, scorer
from support.judge_server import JudgeServer

N = 12


def answer(messages: list[Any], *_: Any) -> ModelOutput:
    """The mock model: right for even numbers, one off for odd ones."""
    question = messages[-1].text
    i = int(re.search(r"(\d+) \+", question).group(1))  # type: ignore[union-attr]
    said = 2 * i if i % 2 == 0 else 2 * i + 1
    output = ModelOutput.from_content(model="mockllm", content=f"It is {said}.")
    # With usage given, mockllm does not count tokens with tiktoken (which downloads its
    # encodings on first use).
    output.usage = ModelUsage(input_tokens=10, output_tokens=4, total_tokens=14)
    return output


def samples() -> list[Sample]:
    rows = []
    for i in range(N):
        metadata: dict[str, Any] = {"topic": "even" if i % 2 == 0 else "odd"}
        if i == 3:
            metadata["skip"] = True  # the grader abstains
        if i == 5:
            metadata["broken"] = True  # the grader fails
        rows.append(
            Sample(id=f"q{i}", input=f"What is {i} + {i}?", target=str(2 * i), metadata=metadata)
        )
    return rows


def correct(sample: gw.StringThread) -> float | None:
    if sample.metadata.get("skip"):
        return None
    if sample.metadata.get("broken"):
        raise RuntimeError("the checker broke")
    return gw.numeric_match(sample.completion() or "", sample.metadata["target"])


def run(task: Task, log_dir: Path) -> EvalLog:
    model = get_model("mockllm/model", custom_outputs=answer)
    [log] = eval(task, model=model, log_dir=str(log_dir), display="none", fail_on_error=False)
    return log


def test_scores_abstentions_and_errors_in_a_real_eval(tmp_path: Path) -> None:
    grader = gw.BaseGrader.from_function("correct", correct)
    task = Task(
        dataset=samples(),
        solver=[system_message("Answer briefly."), generate()],
        scorer=scorer(grader),
    )
    log = run(task, tmp_path)
    assert log.status == "success"
    # What the log says, read back from disk as any Inspect tool reads it.
    log = read_eval_log(log.location)
    assert log.samples is not None
    assert len(log.samples) == N
    by_id = {sample.id: sample for sample in log.samples}

    expected: dict[str, float] = {}
    for i in range(N):
        sample = by_id[f"q{i}"]
        if i == 5:
            assert sample.error is not None
            assert "grader 'correct' failed" in sample.error.message
            assert "the checker broke" in sample.error.message
            assert not sample.scores  # never a 0
            continue
        assert sample.error is None, sample.error.message
        score = sample.scores["correct"]  # type: ignore[index]
        if i == 3:
            assert isinstance(score.value, float)
            assert math.isnan(score.value)
            assert score.reason == ABSTAINED
            assert "returned None" in (score.explanation or "")
            continue
        reference = gw.numeric_match(sample.output.completion, str(2 * i))
        assert score.value == reference == (1.0 if i % 2 == 0 else 0.0)
        assert score.answer == sample.output.completion
        assert score.metadata == {
            "grade": {
                "value": reference,
                "grader_key": "correct",
                "reasoning": None,
                "weight": 1.0,
                "children": [],
                "info": {},
            }
        }
        expected[f"q{i}"] = reference

    [result] = log.results.scores  # type: ignore[union-attr]
    assert result.name == "correct"
    assert result.scored_samples == len(expected) == N - 2
    assert result.unscored_samples == 1
    values = list(expected.values())
    assert result.metrics["mean"].value == pytest.approx(statistics.mean(values))
    assert result.metrics["stderr"].value == pytest.approx(
        statistics.stdev(values) / math.sqrt(len(values))
    )
    # gradewire's own statistics of the same eval: errors and abstentions counted apart.
    logs = grader.get_logs()
    assert logs["score/count"] == len(values)
    assert logs["score/mean"] == pytest.approx(statistics.mean(values))
    assert logs["score/abstained_count"] == 1
    assert logs["score/error_count"] == 1


def test_thread_carries_messages_target_and_metadata(tmp_path: Path) -> None:
    seen: list[gw.StringThread] = []

    def record(sample: gw.StringThread) -> float:
        seen.append(sample)
        return 1.0

    dataset = [
        Sample(id="a", input="What is 1 + 1?", target=["2", "two"], metadata={"topic": "sums"}),
        Sample(id="b", input="What is 2 + 2?"),
    ]
    task = Task(
        dataset=dataset,
        solver=[system_message("Be brief."), generate()],
        scorer=scorer(gw.BaseGrader.from_function("record", record), target_key="gold"),
    )
    run(task, tmp_path)
    threads = {t.last_user_content(): t for t in seen}
    first = threads["What is 1 + 1?"]
    assert [turn.role for turn in first.turns] == ["system", "user", "assistant"]
    assert first.completion() == "It is 3."  # the mock model is one off on odd numbers
    assert first.metadata == {"topic": "sums", "gold": ["2", "two"]}
    assert threads["What is 2 + 2?"].metadata == {}  # no target: no key


def test_target_key_in_the_metadata_is_refused_not_overwritten(tmp_path: Path) -> None:
    grader = gw.BaseGrader.from_function("one", lambda s: 1.0)
    dataset = [Sample(id="a", input="What is 1 + 1?", target="2", metadata={"target": "mine"})]
    log = run(Task(dataset=dataset, solver=generate(), scorer=scorer(grader)), tmp_path)
    [sample] = log.samples  # type: ignore[misc]
    assert sample.error is not None
    assert "already has 'target'" in sample.error.message


def test_combined_grader_tree_and_judge_reasoning(tmp_path: Path) -> None:
    def verdict(request: Any) -> str:
        text = json.dumps(request.json["messages"])
        passed = "It is 3." in text  # a judge that passes 1 + 1 = 3 and fails 2 + 2 = 4
        return json.dumps(
            {
                "reasoning": "adds up" if passed else "wrong sum",
                "verdict": "PASS" if passed else "FAIL",
            }
        )

    with JudgeServer(verdict) as server:
        model = gw.OpenAIChatModel("judge", base_url=server.base_url, max_attempts=1)
        judge = gw.BinaryJudgeGrader("judge", model, "The answer is right")
        exact = gw.BaseGrader.from_function(
            "exact", lambda s: float(s.metadata["target"] in (s.completion() or ""))
        )
        reward = gw.CombinedGrader("reward", [judge, exact], weights=[0.5, 0.5])
        dataset = [
            Sample(id=f"q{i}", input=f"What is {i} + {i}?", target=str(2 * i)) for i in (1, 2)
        ]
        log = run(
            Task(dataset=dataset, solver=generate(), scorer=[scorer(reward), scorer(judge)]),
            tmp_path,
        )
    by_id = {s.id: s for s in log.samples}  # type: ignore[union-attr]
    for sample_id, judged, exact_value, why in (
        ("q1", 1.0, 0.0, "adds up"),
        ("q2", 0.0, 1.0, "wrong sum"),
    ):
        scores = by_id[sample_id].scores
        assert scores["judge"].value == judged  # type: ignore[index]
        assert scores["judge"].explanation == why  # type: ignore[index]
        assert scores["reward"].value == 0.5  # type: ignore[index]
        tree = scores["reward"].metadata["grade"]  # type: ignore[index,union-attr]
        assert [(c["grader_key"], c["value"], c["weight"]) for c in tree["children"]] == [
            ("judge", judged, 0.5),
            ("exact", exact_value, 0.5),
        ]
    assert reward.get_logs()["score/count"] == 2
    assert judge.get_logs()["score/count"] == 4  # graded alone and inside the combination


def test_refuses_what_is_not_a_grader() -> None:
    with pytest.raises(gw.InvalidTypeError, match="gradewire grader"):
        scorer(lambda s: 1.0)  # type: ignore[arg-type]
