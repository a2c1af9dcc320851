"""`gradewire compare` on the --log_samples files of real lm-eval runs, written by lm-eval.

lm-eval's own `simple_evaluate` runs a local task (a YAML over a local JSONL data set, no
network) with a model of its `LM` API that answers from the prompt; its `EvaluationTracker`
writes the sample logs and results as ``lm_eval --log_samples --output_path`` does.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from statsmodels.stats.contingency_tables import mcnemar

from gradewire import InvalidInputError
from gradewire.cli import main
from gradewire.eval import open_run

lm_eval = pytest.importorskip("lm_eval")

QUESTIONS = [(i, i + 1) for i in range(8)]

GEN_TASK = """
task: arith_gen
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Q: What is {{{{a}}}} + {{{{b}}}}?\\nA:"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["\\n"]
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
  - metric: bleu
    aggregation: bleu
    higher_is_better: true
filter_list:
  - name: strict
    filter:
      - function: regex
        regex_pattern: "(\\\\d+)"
      - function: take_first
  - name: none
    filter:
      - function: take_first
"""

MC_TASK = """
task: arith_mc
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "Q: What is {{{{a}}}} + {{{{b}}}}?\\nA:"
doc_to_target: label
doc_to_choice: choices
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
"""


def task_folder(root: Path, questions: Sequence[tuple[int, int]]) -> Path:
    folder = root / "tasks"
    folder.mkdir()
    data = folder / "data.jsonl"
    rows = []
    for a, b in questions:
        right = a + b
        rows.append(
            {
                "a": a,
                "b": b,
                "answer": str(right),
                "choices": [str(right - 1), str(right), str(right + 1)],
                "label": 1,
            }
        )
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "arith_gen.yaml").write_text(GEN_TASK.format(data=data), encoding="utf-8")
    (folder / "arith_mc.yaml").write_text(MC_TASK.format(data=data), encoding="utf-8")
    return folder


def model(wrong: Callable[[int], int]) -> Any:
    from lm_eval.api.model import LM

    def asked(context: str) -> tuple[int, int]:
        question = context.rsplit("What is ", 1)[1]
        a, b = question.split("?")[0].split(" + ")
        return int(a), int(b)

    class Arithmetic(LM):  # type: ignore[misc]
        """Answers ``a + b + wrong(a)``; prefers that choice in multiple choice."""

        def generate_until(self, requests: list[Any]) -> list[str]:
            out = []
            for request in requests:
                a, b = asked(request.args[0])
                out.append(f" {a + b + wrong(a)} it is")
            return out

        def loglikelihood(self, requests: list[Any]) -> list[tuple[float, bool]]:
            out = []
            for request in requests:
                a, b = asked(request.args[0])
                said = a + b + wrong(a)
                out.append((0.0 if request.args[1].strip() == str(said) else -5.0, True))
            return out

        def loglikelihood_rolling(self, requests: list[Any]) -> list[float]:
            raise NotImplementedError

    return Arithmetic()


def lm_eval_run(
    root: Path,
    wrong: Callable[[int], int],
    *,
    questions: Sequence[tuple[int, int]] = QUESTIONS,
    name: str = "run",
) -> Path:
    """Run both tasks with lm-eval and write its logs as ``--log_samples`` does."""
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    base = root / name
    base.mkdir(parents=True)
    manager = TaskManager(include_path=str(task_folder(base, questions)))
    # bootstrap_iters=0: no stderr of lm-eval's own. Its bootstrap forks a multiprocessing
    # pool, which can hang in a process that holds threads (a test worker that ran Ray).
    results = simple_evaluate(
        model=model(wrong),
        tasks=["arith_gen", "arith_mc"],
        task_manager=manager,
        log_samples=True,
        bootstrap_iters=0,
    )
    assert results is not None
    samples = results.pop("samples")
    tracker = EvaluationTracker(output_path=str(base / "out"))
    tracker.general_config_tracker.model_name = name
    tracker.general_config_tracker.model_name_sanitized = name
    tracker.save_results_aggregated(results=results, samples=samples)
    for task in results["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    return base / "out"


def a_wrong(a: int) -> int:
    return 0 if a % 2 == 0 else 1


def b_wrong(a: int) -> int:
    return 2 if a in (2, 6) else 0


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("lm_eval")
    return lm_eval_run(root, a_wrong, name="model-a"), lm_eval_run(root, b_wrong, name="model-b")


def reference(out: Path) -> dict[str, dict[str, float]]:
    """Per ``task/metric,filter``, doc id to value, read straight from the sample logs."""
    values: dict[str, dict[str, float]] = {}
    for file in out.glob("*/samples_*.jsonl"):
        for text in file.read_text(encoding="utf-8").splitlines():
            line = json.loads(text)
            task = file.name.split("_", 1)[1].rsplit("_", 1)[0]
            for metric in line["metrics"]:
                if isinstance(line[metric], (int, float)):
                    key = f"{task}/{metric},{line['filter']}"
                    values.setdefault(key, {})[f"{task}/{line['doc_id']}"] = float(line[metric])
    return values


def compare_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()  # what lm-eval printed
    assert main(["compare", *args, "--json"]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def test_compare_two_lm_eval_runs_against_a_reference(
    two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out_a, out_b = two_runs
    result = compare_json(capsys, str(out_a), str(out_b))
    ref_a, ref_b = reference(out_a), reference(out_b)
    keys = ["arith_gen/exact_match,strict", "arith_gen/exact_match,none", "arith_mc/acc,none"]
    assert sorted(g["grader"] for g in result["graders"]) == sorted(keys) == sorted(ref_a)
    for got in result["graders"]:
        key = got["grader"]
        ids = sorted(ref_a[key])
        va = [ref_a[key][i] for i in ids]
        vb = [ref_b[key][i] for i in ids]
        gained = sum(b > a for a, b in zip(va, vb, strict=True))
        lost = sum(b < a for a, b in zip(va, vb, strict=True))
        assert got["n_pairs"] == len(QUESTIONS)
        assert got["mean_a"] == pytest.approx(statistics.mean(va))
        assert got["mean_b"] == pytest.approx(statistics.mean(vb))
        assert got["diff"] == pytest.approx(statistics.mean(vb) - statistics.mean(va))
        assert (got["wins"], got["losses"]) == (gained, lost)
        assert got["method"] == "mid-p McNemar test, Tango score interval"
        expected = _mid_p(gained, lost)
        assert got["p_value"] == pytest.approx(expected)
        assert (got["p_value"] < 0.05) == (got["ci_low"] > 0 or got["ci_high"] < 0)
    strict = next(g for g in result["graders"] if g["grader"] == keys[0])
    # A is wrong on odd a (4 of 8), B on a = 2 and 6: B wins 4, loses 2.
    assert (strict["mean_a"], strict["mean_b"], strict["wins"], strict["losses"]) == (
        0.5,
        0.75,
        4,
        2,
    )

    # The same comparison from one task's file each, and as text.
    [file_a] = out_a.glob("*/samples_arith_mc_*.jsonl")
    [file_b] = out_b.glob("*/samples_arith_mc_*.jsonl")
    one_task = compare_json(capsys, str(file_a), str(file_b))
    [mc] = one_task["graders"]
    in_folder = next(g for g in result["graders"] if g["grader"] == "arith_mc/acc,none")
    # Holm's adjustment is over the graders compared: one here, three in the folder.
    assert {**mc, "p_value_holm": None} == {**in_folder, "p_value_holm": None}
    assert mc["p_value_holm"] == mc["p_value"]
    assert main(["compare", str(file_a), str(file_b)]) == 0
    text = capsys.readouterr().out
    assert "A = model-a (" in text
    row = next(line for line in text.splitlines() if line.startswith("arith_mc/acc,none "))
    assert row.split()[1:4] == [str(len(QUESTIONS)), f"{mc['mean_a']:.4f}", f"{mc['mean_b']:.4f}"]


def test_an_lm_eval_run_as_a_run(two_runs: tuple[Path, Path]) -> None:
    out_a, _ = two_runs
    run = open_run(out_a)
    assert run.config["source"] == "lm-eval"
    # bleu's per-document values are a corpus figure's parts, not scores: left out, listed.
    assert run.config["not_compared"] == ["arith_gen/bleu,none", "arith_gen/bleu,strict"]
    assert run.samples_in_data == 2 * len(QUESTIONS)
    records = {record.id: record for record in run.records}
    gen = records["arith_gen/1"]
    assert gen.prompt() == "Q: What is 1 + 2?\nA:"
    # The filters answer differently (strict: "4", none: " 4 it is"): the model's response.
    assert gen.completion() == " 4 it is"
    assert gen.metadata["filtered_resps"] == {"strict": "4", "none": " 4 it is"}
    assert gen.metadata["target"] == "3"
    mc = records["arith_mc/1"]
    assert mc.completion() == " 4"  # the choice with the best loglikelihood
    assert run.outcome(mc, "arith_mc/acc,none").value == 0.0  # type: ignore[union-attr]


def test_different_documents(
    tmp_path: Path, two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out_a, _ = two_runs
    fewer = lm_eval_run(tmp_path, b_wrong, questions=QUESTIONS[:6], name="fewer")
    result = compare_json(capsys, str(out_a), str(fewer))
    assert result["unpaired"]["only_a"] == [
        "arith_gen/6",
        "arith_gen/7",
        "arith_mc/6",
        "arith_mc/7",
    ]
    assert result["unpaired"]["only_b"] == []
    assert {g["n_pairs"] for g in result["graders"]} == {6}

    # Doc ids are positions in the data set: another question at doc 5 is not a pair.
    other = lm_eval_run(tmp_path, b_wrong, questions=[*QUESTIONS[:5], (20, 1)], name="other")
    capsys.readouterr()
    assert main(["compare", str(out_a), str(other)]) == 2
    err = capsys.readouterr().err
    assert "2 of 12 paired samples have different prompts" in err
    assert "id 'arith_gen/5'" in err
    assert "--allow-mismatched-prompts" in err


def test_files_that_are_not_lm_eval_logs_are_refused_by_name(
    tmp_path: Path, two_runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out_a, out_b = two_runs
    garbage = tmp_path / "samples_arith_gen_2024-01-01T00-00-00.jsonl"
    garbage.write_text('{"doc_id": 0}\nnot json\n', encoding="utf-8")
    assert main(["compare", str(garbage), str(out_a)]) == 2
    err = capsys.readouterr().err
    assert f"{garbage}:2: not a JSON line" in err
    assert "--log_samples" in err

    two = tmp_path / "two"
    two.mkdir()
    for out in (out_a, out_b):
        for file in out.glob("*/samples_arith_mc_*.jsonl"):
            (two / file.name).write_bytes(file.read_bytes())
    assert main(["compare", str(two), str(out_a)]) == 2
    err = capsys.readouterr().err
    assert "holds the sample logs of 2 lm-eval runs" in err

    plain = tmp_path / "data.jsonl"
    plain.write_text('{"prompt": "hi", "completion": "ho"}\n', encoding="utf-8")
    assert main(["compare", str(plain), str(out_a)]) == 2
    err = capsys.readouterr().err
    assert f"{plain} is a file gradewire cannot read as a run" in err
    assert "samples_<task>_<date>.jsonl" in err


# --- hand-written logs: what lm-eval could write, and what it never does -------------------

DATE = "2025-01-01T00-00-00.000000"


def write_log(
    folder: Path, lines: Sequence[dict[str, Any]], task: str = "t", results: Any = None
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (folder / f"samples_{task}_{DATE}.jsonl").write_text(text, encoding="utf-8")
    if results is not None:
        (folder / f"results_{DATE}.json").write_text(json.dumps(results), encoding="utf-8")
    return folder


def generation(doc_id: int, filter_name: str, answer: str, raw: str, **metrics: float) -> dict:
    return {
        "doc_id": doc_id,
        "doc": {"q": doc_id},
        "target": "4",
        "arguments": {"gen_args_0": {"arg_0": f"Q{doc_id}", "arg_1": {}}},
        "resps": [[raw]],
        "filtered_resps": [answer],
        "filter": filter_name,
        "metrics": list(metrics),
        **metrics,
    }


def test_two_filters_that_answer_differently_show_the_model_s_own_response(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        generation(0, "strict", "4", " 4 it is", exact_match=1.0),
        generation(0, "loose", " 4 it is", " 4 it is", exact_match=0.0),
        generation(1, "strict", "7", "7", exact_match=0.0),
        generation(1, "loose", "7", "7", exact_match=0.0),
    ]
    run = open_run(write_log(tmp_path / "a", lines))
    records = {record.id: record for record in run.records}
    # Filters disagree on doc 0: no filter's answer stands for the other's grader.
    assert records["t/0"].completion() == " 4 it is"
    assert records["t/0"].metadata["filtered_resps"] == {"strict": "4", "loose": " 4 it is"}
    assert records["t/1"].completion() == "7"  # one answer under every filter
    assert "filtered_resps" not in records["t/1"].metadata
    assert sorted(run.spec_hashes) == ["t/exact_match,loose", "t/exact_match,strict"]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("a,b", "c"), ("a", "b,c")),  # metric holding a comma against a filter holding one
        (("x", "f,g"), ("x,f", "g")),
    ],
)
def test_metric_and_filter_names_that_make_one_key_are_refused_naming_both(
    tmp_path: Path, first: tuple[str, str], second: tuple[str, str]
) -> None:
    lines = [
        generation(0, first[1], "1", "1", **{first[0]: 1.0}),
        generation(0, second[1], "1", "1", **{second[0]: 0.0}),
    ]
    folder = write_log(tmp_path / "a", lines)
    with pytest.raises(InvalidInputError, match="both make the grader key") as refused:
        open_run(folder)
    text = str(refused.value)
    assert f"metric {first[0]!r} under filter {first[1]!r}" in text
    assert f"metric {second[0]!r} under filter {second[1]!r}" in text


def test_a_deeply_nested_line_or_results_file_is_refused_not_a_recursion_error(
    tmp_path: Path,
) -> None:
    deep = '{"doc_id": 0, "doc": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    folder = tmp_path / "a"
    folder.mkdir()
    (folder / f"samples_t_{DATE}.jsonl").write_text(deep, encoding="utf-8")
    with pytest.raises(InvalidInputError, match="nested more than 100 levels deep"):
        open_run(folder)
    shallow_enough = '{"doc_id": 0, "doc": ' + "[" * 500 + "]" * 500 + "}\n"
    (folder / f"samples_t_{DATE}.jsonl").write_text(shallow_enough, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"samples_t_.*:1: the line is nested more"):
        open_run(folder)  # parses, yet deeper than any reader after it should recurse
    write_log(folder, [generation(0, "none", "1", "1", acc=1.0)])
    (folder / f"results_{DATE}.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InvalidInputError, match=r"results_.*nested more than 100 levels"):
        open_run(folder)


@pytest.mark.parametrize(
    "counts",
    [
        {"t": {"original": 2, "effective": "two"}},
        {"t": {"original": 2}},
        {"t": {"effective": -1}},
        {"t": {"effective": True}},
        {"t": {"effective": 1e400}},
        {"t": 5},
        ["t", 2],
    ],
)
def test_a_malformed_n_samples_is_refused_naming_the_file(tmp_path: Path, counts: Any) -> None:
    results = {"n-samples": counts}
    folder = write_log(tmp_path / "a", [generation(0, "none", "1", "1", acc=1.0)], results=results)
    with pytest.raises(InvalidInputError, match=r"results_.*\.json: 'n-samples'"):
        open_run(folder)
    good = {"n-samples": {"t": {"original": 3, "effective": 3}}}
    write_log(folder, [generation(0, "none", "1", "1", acc=1.0)], results=good)
    assert open_run(folder).samples_in_data == 3


def _mid_p(gained: int, lost: int) -> float:
    """The mid-p McNemar test from statsmodels' exact one: less the observed count's mass."""
    from scipy.stats import binom

    if gained == lost:
        return 1.0
    table = [[0, gained], [lost, 0]]
    k = min(gained, lost)
    return min(1.0, mcnemar(table, exact=True).pvalue - binom.pmf(k, gained + lost, 0.5))
