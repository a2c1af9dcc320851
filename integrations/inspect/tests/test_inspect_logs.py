"""`gradewire compare` and `gradewire eval` on the logs of real Inspect evals (mockllm/model)."""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog, read_eval_log, read_eval_log_async
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Score, Target, match, mean
from inspect_ai.scorer import scorer as inspect_scorer
from inspect_ai.solver import TaskState, generate
from statsmodels.stats.contingency_tables import mcnemar

import gradewire as gw
from gradewire.cli import main
from gradewire.eval import load_run, load_samples, open_run, run_eval
from gradewire_inspect import scorer

N = 10
GRADERS = ["correct", "match", "closeness/exact", "closeness/distance"]


def number(question: str) -> int:
    return int(re.search(r"(\d+) \+", question).group(1))  # type: ignore[union-attr]


def mock(wrong: Callable[[int], int]) -> Callable[..., ModelOutput]:
    """A mock model answering ``2i + wrong(i)`` to "What is i + i?"."""

    def answer(messages: list[Any], *_: Any) -> ModelOutput:
        i = number(messages[-1].text)
        output = ModelOutput.from_content(model="mockllm", content=f"{2 * i + wrong(i)}")
        # With usage given, mockllm counts no tokens with tiktoken (a download).
        output.usage = ModelUsage(input_tokens=10, output_tokens=2, total_tokens=12)
        return output

    return answer


def correct(sample: gw.StringThread) -> float | None:
    if sample.metadata.get("skip"):
        return None
    if sample.metadata.get("broken"):
        raise RuntimeError("the checker broke")
    return gw.numeric_match(sample.completion() or "", sample.metadata["target"])


@inspect_scorer(metrics={"exact": [mean()], "distance": [mean()]})
def closeness() -> Any:
    """A dict-valued Inspect scorer: a bool and a number per sample."""

    async def score(state: TaskState, target: Target) -> Score:
        said = float(state.output.completion)
        distance = abs(said - float(target.text))
        return Score(value={"exact": distance == 0, "distance": 1 / (1 + distance)})

    return score


def samples(ids: Sequence[int], *, reworded: int | None = None) -> list[Sample]:
    rows = []
    for i in ids:
        metadata: dict[str, Any] = {"topic": "even" if i % 2 == 0 else "odd"}
        if i == 3:
            metadata["skip"] = True  # the gradewire grader abstains: unscored
        if i == 5:
            metadata["broken"] = True  # the gradewire grader fails: a sample error
        question = f"What is {i} + {i}?" if i != reworded else f"Compute {i} + {i}, please?"
        rows.append(Sample(id=f"q{i}", input=question, target=str(2 * i), metadata=metadata))
    return rows


def run(
    folder: Path,
    wrong: Callable[[int], int],
    *,
    ids: Sequence[int] = range(N),
    epochs: int = 1,
    reworded: int | None = None,
    match_location: str = "end",
) -> Path:
    task = Task(
        dataset=samples(ids, reworded=reworded),
        solver=generate(),
        scorer=[
            scorer(gw.BaseGrader.from_function("correct", correct)),
            match(location=match_location),  # type: ignore[arg-type]
            closeness(),
        ],
        epochs=epochs,
    )
    model = get_model("mockllm/model", custom_outputs=mock(wrong))
    [log] = eval(task, model=model, log_dir=str(folder), display="none", fail_on_error=False)
    return Path(log.location)


def a_wrong(i: int) -> int:
    return 0 if i % 2 == 0 else 1


def b_wrong(i: int) -> int:
    return 2 if i in (2, 6) else 0


@pytest.fixture(scope="module")
def two_logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("inspect")
    return run(root / "a", a_wrong), run(root / "b", b_wrong)


def reference_values(log: EvalLog) -> dict[str, dict[str, float]]:
    """Per grader, sample id to value, read from the log as Inspect wrote it."""
    values: dict[str, dict[str, float]] = {key: {} for key in GRADERS}
    assert log.samples is not None
    for sample in log.samples:
        if sample.error is not None:
            continue
        scores = sample.scores or {}
        if not math.isnan(scores["correct"].value):  # type: ignore[arg-type]
            values["correct"][str(sample.id)] = float(scores["correct"].value)  # type: ignore[arg-type]
        values["match"][str(sample.id)] = {"C": 1.0, "I": 0.0}[scores["match"].value]  # type: ignore[index]
        parts = scores["closeness"].value
        values["closeness/exact"][str(sample.id)] = 1.0 if parts["exact"] else 0.0  # type: ignore[index]
        values["closeness/distance"][str(sample.id)] = parts["distance"]  # type: ignore[index]
    return values


def compare_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["compare", *args, "--json"]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


@pytest.mark.usefixtures("inspect_source")
def test_compare_two_inspect_logs_against_a_reference(
    two_logs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    log_a, log_b = two_logs
    pyproject = (Path(__file__).parents[3] / "pyproject.toml").read_text(encoding="utf-8")
    assert '"eval_source.inspect" = "gradewire_inspect._log_source:read_inspect_log"' in pyproject
    result = compare_json(capsys, str(log_a), str(log_b))
    by_key = {g["grader"]: g for g in result["graders"]}
    assert list(by_key) == GRADERS
    ref_a = reference_values(read_eval_log(str(log_a)))
    ref_b = reference_values(read_eval_log(str(log_b)))
    for key in GRADERS:
        ids = [i for i in ref_a[key] if i in ref_b[key]]
        va = [ref_a[key][i] for i in ids]
        vb = [ref_b[key][i] for i in ids]
        got = by_key[key]
        assert got["n_pairs"] == len(ids)
        assert got["mean_a"] == pytest.approx(statistics.mean(va))
        assert got["mean_b"] == pytest.approx(statistics.mean(vb))
        assert got["diff"] == pytest.approx(statistics.mean(vb) - statistics.mean(va))
        assert got["wins"] == sum(b > a for a, b in zip(va, vb, strict=True))
        assert got["losses"] == sum(b < a for a, b in zip(va, vb, strict=True))
        if key == "closeness/distance":
            assert got["method"] == "paired t test and interval"
        else:
            gained = sum(b > a for a, b in zip(va, vb, strict=True))
            lost = sum(b < a for a, b in zip(va, vb, strict=True))
            assert got["method"] == "mid-p McNemar test, Tango score interval"
            assert got["p_value"] == pytest.approx(_mid_p(gained, lost))
        # One procedure: the interval excludes 0 exactly when p < 0.05.
        assert (got["p_value"] < 0.05) == (got["ci_low"] > 0 or got["ci_high"] < 0)
    # q3 is unscored by the gradewire grader, q5 errored: both left out, never a 0.
    assert by_key["correct"]["n_pairs"] == N - 2
    assert by_key["correct"]["not_scored"] == 2
    assert by_key["match"]["n_pairs"] == N - 1
    assert result["unpaired"] == {"only_a": [], "only_b": [], "count_only_a": 0, "count_only_b": 0}

    # The text output: the same figures, one row per grader.
    assert main(["compare", str(log_a), str(log_b)]) == 0
    text = capsys.readouterr().out
    # Named by task and model; both share them, so each log's own id tells them apart.
    assert f"A = task mockllm/model ({log_a.stem.rsplit('_', 1)[-1]})   B = " in text
    assert log_a.name not in text
    row = next(line for line in text.splitlines() if line.startswith("match "))
    cells = row.split()
    # A 0/1 grader's difference reads in points, as in the verdict and the page.
    assert cells[1:6] == [
        str(by_key["match"]["n_pairs"]),
        f"{by_key['match']['mean_a']:.4f}",
        f"{by_key['match']['mean_b']:.4f}",
        f"{100 * by_key['match']['diff']:+.1f}",
        "pts",
    ]
    assert "unpaired: 0 sample(s) only in A, 0 only in B" in text


@pytest.mark.usefixtures("inspect_source")
def test_an_inspect_log_as_a_run(two_logs: tuple[Path, Path]) -> None:
    log_a, _ = two_logs
    run_a = open_run(log_a)
    assert run_a.graders == GRADERS
    assert run_a.config["source"] == "inspect"
    assert run_a.samples_in_data == N
    records = {record.id: record for record in run_a.records}
    assert list(records) == [f"q{i}" for i in range(N)]
    q1 = records["q1"]
    assert q1.input["turns"] == [
        {"role": "user", "content": "What is 1 + 1?"},
        {"role": "assistant", "content": "3"},
    ]
    assert q1.metadata == {"topic": "odd", "target": "2", "inspect_id": "q1", "epoch": 1}
    # The prompt hash compare checks is gradewire's own over the same turns.
    from gradewire.eval.runs._samples import prompt_hash

    assert q1.prompt_hash == prompt_hash([{"role": "user", "content": "What is 1 + 1?"}])
    correct_q1 = run_a.outcome(q1, "correct")
    assert correct_q1 is not None
    assert correct_q1.value == 0.0
    # The gradewire scorer's whole grade tree comes back.
    assert correct_q1.grade is not None
    assert correct_q1.grade["grader_key"] == "correct"
    skipped = run_a.outcome(records["q3"], "correct")
    assert skipped is not None
    assert skipped.status == "abstained"
    for key in GRADERS:
        errored = run_a.outcome(records["q5"], key)
        assert errored is not None
        assert errored.status == "error"
        assert "the checker broke" in (errored.message or "")
    summary = {s.grader: s for s in run_a.summaries()}
    assert summary["correct"].errors == 1
    assert summary["correct"].abstained == 1


@pytest.mark.usefixtures("inspect_source")
def test_epochs_and_different_sample_sets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A: q0..q5, two epochs; B: q2..q8, one epoch. Epoch 1 pairs with epoch 1.
    log_a = run(tmp_path / "a", a_wrong, ids=range(6), epochs=2)
    log_b = run(tmp_path / "b", b_wrong, ids=range(2, 9))
    result = compare_json(capsys, str(log_a), str(log_b))
    assert result["unpaired"]["only_a"] == [
        "q0",
        "q0#2",
        "q1",
        "q1#2",
        "q2#2",
        "q3#2",
        "q4#2",
        "q5#2",
    ]
    assert result["unpaired"]["only_b"] == ["q6", "q7", "q8"]
    match_result = next(g for g in result["graders"] if g["grader"] == "match")
    assert match_result["n_pairs"] == 3  # q2, q3, q4 (q5 errored)

    # Two runs of two epochs each: pairs are (sample, epoch), clustered by sample.
    log_c = run(tmp_path / "c", b_wrong, ids=range(6), epochs=2)
    result = compare_json(capsys, str(log_a), str(log_c))
    assert result["cluster_key"] == "inspect_id"
    match_result = next(g for g in result["graders"] if g["grader"] == "match")
    assert match_result["n_pairs"] == 10
    assert match_result["n_clusters"] == 5
    assert match_result["method"] == "cluster-robust t (CR2, Bell–McCaffrey degrees of freedom)"
    assert main(["compare", str(log_a), str(log_c), "--cluster-key", "topic"]) == 0
    assert "clustered by 'topic'" in capsys.readouterr().out


@pytest.mark.usefixtures("inspect_source")
def test_pairs_of_other_questions_and_changed_scorers_are_refused(
    tmp_path: Path, two_logs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    log_a, _ = two_logs
    reworded = run(tmp_path / "reworded", b_wrong, reworded=4)
    assert main(["compare", str(log_a), str(reworded)]) == 2
    err = capsys.readouterr().err
    assert "1 of 10 paired samples have different prompts" in err
    assert "id 'q4'" in err
    assert "--allow-mismatched-prompts" in err
    result = compare_json(capsys, str(log_a), str(reworded), "--allow-mismatched-prompts")
    assert result["mismatched_prompts"] == {"ids": ["q4"], "count": 1}

    rescored = run(tmp_path / "rescored", b_wrong, match_location="begin")
    assert main(["compare", str(log_a), str(rescored)]) == 2
    err = capsys.readouterr().err
    assert "'match'" in err
    assert "options.location 'end' → 'begin'" in err
    result = compare_json(capsys, str(log_a), str(rescored), "--allow-changed-graders")
    assert result["changed_graders"] == ["match"]


@pytest.mark.usefixtures("inspect_source")
def test_what_is_not_a_log_is_refused_by_name(
    tmp_path: Path, two_logs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    log_a, _ = two_logs
    other_json = tmp_path / "results.json"
    other_json.write_text('{"accuracy": 0.5}', encoding="utf-8")
    not_zip = tmp_path / "broken.eval"
    not_zip.write_text("not a zip", encoding="utf-8")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello", encoding="utf-8")
    cases = {
        other_json: "is not an Inspect AI eval log",
        not_zip: "is not an Inspect AI eval log",
        folder: "is a folder gradewire cannot read as a run",
        tmp_path / "missing.eval": "is no file or folder",
    }
    for path, problem in cases.items():
        assert main(["compare", str(path), str(log_a)]) == 2
        err = capsys.readouterr().err
        assert str(path) in err
        assert problem in err
        assert "pass " in err  # and what to pass instead


async def test_eval_grades_an_inspect_logs_samples_again(
    inspect_source: None, two_logs: tuple[Path, Path], tmp_path: Path, monkeypatch
) -> None:
    log_a, _ = two_logs
    # Inspect's sync reader, called on a running loop, would patch asyncio for the whole
    # process (nest_asyncio): asyncio.run would then stop closing its loops.
    import nest_asyncio2

    patched: list[object] = []
    monkeypatch.setattr(nest_asyncio2, "apply", lambda *a, **k: patched.append(a))

    def exact(sample: gw.StringThread) -> float:
        return gw.exact_match(sample.completion() or "", sample.metadata["target"])

    result = await run_eval(log_a, [gw.BaseGrader.from_function("match", exact)], tmp_path / "out")
    assert result.run.config["data"]["format"] == "log"
    assert patched == []
    run_again = load_run(tmp_path / "out")
    inspect_log = await read_eval_log_async(str(log_a))
    assert inspect_log.samples is not None
    outputs = {str(s.id): s.output.completion for s in inspect_log.samples}
    records = {record.id: record for record in run_again.records}
    assert sorted(records) == sorted(outputs)
    for sample_id, output in outputs.items():
        record = records[sample_id]
        assert record.completion() == output
        expected = 1.0 if output == record.metadata["target"] else 0.0
        assert run_again.scores("match")[sample_id] == expected
    # Re-graded samples pair with the log they came from, by the same ids and prompts.
    comparison = gw.compare_runs(open_run(log_a), run_again, allow_changed_graders=True)
    assert comparison.only_a == comparison.only_b == ()
    assert comparison.mismatched_prompts == ()
    [same] = comparison.graders  # Inspect's match and exact_match agree on bare numbers
    assert (same.diff, same.n_pairs, same.not_scored) == (0.0, N - 1, 1)


def test_eval_refuses_a_log_whose_samples_have_no_output(
    inspect_source: None, tmp_path: Path
) -> None:
    def failing(messages: list[Any], *_: Any) -> ModelOutput:
        if number(messages[-1].text) == 2:
            raise RuntimeError("the model server is down")
        return mock(a_wrong)(messages)

    task = Task(dataset=samples([0, 1, 2]), solver=generate(), scorer=match())
    model = get_model("mockllm/model", custom_outputs=failing)
    [log] = eval(task, model=model, log_dir=str(tmp_path), display="none", fail_on_error=False)
    with pytest.raises(gw.InvalidInputError) as caught:
        load_samples(log.location)
    message = str(caught.value)
    assert "sample 'q2'" in message
    assert "inspect eval-retry" in message


def rescored(log_path: Path, out: Path, change: Callable[[EvalLog], None]) -> Path:
    """The log at ``log_path`` changed by ``change``, written as a .json log to ``out``."""
    from inspect_ai.log import write_eval_log

    log = read_eval_log(str(log_path))
    change(log)
    write_eval_log(log, str(out))
    return out


@pytest.mark.parametrize(
    ("value", "status", "message"),
    [
        ("NaN", "abstained", None),
        (" nan ", "abstained", None),
        (float("nan"), "abstained", None),
        ("1_000", "error", "not a score gradewire can read: '1_000'"),
        ("\u0661", "error", "not a score gradewire can read"),  # Arabic-Indic digit one
        ("\uff11.5", "error", "not a score gradewire can read"),  # fullwidth digit one
        ("Infinity", "error", "not a finite number"),
        ("1e999", "error", "not a finite number"),
        ("0.25", "ok", None),
        ("-1E-2", "ok", None),
    ],
)
def test_string_scores_are_read_as_ascii_decimals_and_nan_text_abstains(
    tmp_path: Path, two_logs: tuple[Path, Path], value: Any, status: str, message: str | None
) -> None:
    from gradewire_inspect._log_source import read_inspect_log

    def change(log: EvalLog) -> None:
        assert log.samples is not None
        log.samples[0].scores["match"].value = value  # type: ignore[index]

    run_ = read_inspect_log(rescored(two_logs[0], tmp_path / "log.json", change))
    assert run_ is not None
    outcome = run_.outcome(run_.records[0], "match")
    assert outcome is not None
    assert outcome.status == status
    if message is not None:
        assert message in (outcome.message or "")
    if status == "ok":
        assert outcome.value == float(value)


def test_a_scorer_named_like_another_scorer_s_dict_key_is_refused_naming_both(
    tmp_path: Path, two_logs: tuple[Path, Path]
) -> None:
    from gradewire_inspect._log_source import read_inspect_log

    def change(log: EvalLog) -> None:
        assert log.samples is not None
        for sample in log.samples:
            scores = sample.scores or {}
            scores["closeness/exact"] = Score(value=0.5)

    with pytest.raises(gw.InvalidInputError, match="both make the grader key") as refused:
        read_inspect_log(rescored(two_logs[0], tmp_path / "log.json", change))
    text = str(refused.value)
    assert "the key 'exact' of scorer 'closeness'" in text
    assert "scorer 'closeness/exact'" in text


def _mid_p(gained: int, lost: int) -> float:
    """The mid-p McNemar test from statsmodels' exact one: less the observed count's mass."""
    from scipy.stats import binom

    if gained == lost:
        return 1.0
    table = [[0, gained], [lost, 0]]
    k = min(gained, lost)
    return min(1.0, mcnemar(table, exact=True).pvalue - binom.pmf(k, gained + lost, 0.5))
