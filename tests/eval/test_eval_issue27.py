"""Issue 27, the one-run part: bounded intervals, pass rates, failing graders, Evals rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gradewire.cli._main import main
from gradewire.eval import load_run
from gradewire.eval.runs._samples import RowShape, sample_from_row
from gradewire.stats._mean_interval import cr2_stderr, mean_interval
from support.eval_helpers import make_run

PAIRS = [
    ("the cat sat on the mat", "the cat was sitting on the mat"),
    ("A quick brown fox jumps over the lazy dog.", "The quick brown dog jumps over a lazy fox!"),
    ("completely unrelated words here", "nothing in common at all"),
    ("identical sentence here today", "identical sentence here today"),
    ("red apples", "green pears"),
    ("one two three", "four five six"),
    ("hello world", "goodbye moon"),
    ("a b", "c d"),
]


def _similarity(metric: str, **extra: object) -> dict[str, object]:
    return {
        "type": "text_similarity",
        "name": metric,
        "input": "{{sample.output_text}}",
        "reference": "{{item.reference}}",
        "evaluation_metric": metric,
        **extra,
    }


@pytest.fixture
def bleu_files(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"s{i}", "prompt": "say", "completion": a, "reference": b}) + "\n"
            for i, (a, b) in enumerate(PAIRS)
        )
    )
    graders = tmp_path / "graders.json"
    graders.write_text(json.dumps({"graders": [_similarity("bleu", pass_threshold=0.3)]}))
    return data, graders


def _eval(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["eval", *args, "--no-progress"])
    out = capsys.readouterr()
    return code, out.out, out.err


# item 4: a bounded score's interval stays inside its range


def test_an_openai_bleu_interval_stays_inside_0_1_and_names_its_method(
    tmp_path, capsys, bleu_files
):
    data, graders = bleu_files
    code, out, _ = _eval(capsys, str(data), "--graders", str(graders), "--out", str(tmp_path / "r"))
    assert code == 0
    (grader,) = json.loads((tmp_path / "r" / "summary.json").read_text())["graders"]
    assert grader["min"] == 0.0  # many zeros: main's t interval went below 0 here
    assert 0.0 <= grader["ci_low"] < grader["mean"] < grader["ci_high"] <= 1.0
    assert grader["score_range"] == [0.0, 1.0]
    assert grader["method"] == "bounded"
    assert grader["method_name"] in out
    config = json.loads((tmp_path / "r" / "config.json").read_text())
    assert config["score_ranges"] == {"bleu": [0.0, 1.0]}
    # Read back from the folder (as compare does), the range still holds.
    (again,) = load_run(tmp_path / "r").summaries()
    assert again.ci_low == pytest.approx(grader["ci_low"])


def test_bounded_interval_is_wilson_over_the_korn_graubard_effective_n():
    from scipy import stats
    from statsmodels.stats.proportion import proportion_confint

    x = np.array([0.0, 0.0, 0.0, 0.3, 0.0, 0.9, 0.0, 0.25])
    found = mean_interval(x, score_range=(0.0, 1.0))
    p = x.mean()
    n_eff = p * (1 - p) / (x.var(ddof=1) / x.size)
    n_eff *= (stats.norm.ppf(0.975) / stats.t.ppf(0.975, x.size - 1)) ** 2
    low, high = proportion_confint(p * n_eff, n_eff, alpha=0.05, method="wilson")
    assert (found.low, found.high) == (pytest.approx(low), pytest.approx(high))
    assert found.effective_n == pytest.approx(n_eff)
    # Rescaled ranges: a 1-5 scale keeps inside [1, 5].
    scaled = mean_interval(1 + 4 * x, score_range=(1, 5))
    assert scaled.low == pytest.approx(1 + 4 * low)
    assert scaled.high == pytest.approx(1 + 4 * high)
    # Every score on a bound is never a point interval.
    zeros = mean_interval(np.zeros(5), score_range=(0.0, 1.0))
    assert zeros.low == 0.0
    assert zeros.high > 0.4


@pytest.mark.parametrize("values", [[1] * 19 + [0], [1] * 10, [0, 0, 0, 1], [1, 0] * 50])
def test_a_0_1_grader_gets_the_exact_clopper_pearson_interval(tmp_path, values):
    from statsmodels.stats.proportion import proportion_confint

    run = make_run(tmp_path, {"acc": values})
    (summary,) = run.summaries()
    low, high = proportion_confint(sum(values), len(values), alpha=0.05, method="beta")
    assert summary.ci_low == pytest.approx(low, abs=1e-9)
    assert summary.ci_high == pytest.approx(high, abs=1e-9)
    assert summary.method == "clopper_pearson"
    assert summary.to_dict()["method_name"] == "Clopper-Pearson exact"


def test_cr2_matches_the_matrix_formula_and_is_cr1_for_equal_clusters():
    rng = np.random.default_rng(3)
    x = rng.normal(size=30)
    equal = [str(i // 10) for i in range(30)]
    se, df, g = cr2_stderr(x, equal)
    sums = np.array([np.sum(x[i * 10 : i * 10 + 10] - x.mean()) for i in range(3)])
    assert se == pytest.approx(np.sqrt(np.sum(sums**2) / 30**2 * 3 / 2))
    assert (df, g) == (pytest.approx(2.0), 3)
    # Unequal clusters: CR2 by its definition, A_g = (I - H_gg)^(-1/2), H = 11'/N.
    labels = ["a"] * 20 + ["b"] * 6 + ["c"] * 4
    se, df, _ = cr2_stderr(x, labels)
    e = x - x.mean()
    meat = 0.0
    for name in "abc":
        idx = [i for i, label in enumerate(labels) if label == name]
        h = np.full((len(idx), len(idx)), 1 / 30)
        w, v = np.linalg.eigh(np.eye(len(idx)) - h)
        a = v @ np.diag(w**-0.5) @ v.T
        meat += np.sum(a @ e[idx]) ** 2
    assert se == pytest.approx(np.sqrt(meat) / 30)
    assert 1.0 < df < 2.0  # one large cluster: fewer degrees of freedom than G - 1


def test_few_clusters_say_so(tmp_path):
    values = [1, 1, 0, 0, 1, 0]
    run = make_run(tmp_path, {"acc": values}, topics=list("aabbcc"))
    (summary,) = run.summaries(cluster_key="topic")
    assert summary.caveat is not None
    assert "3 clusters" in summary.caveat
    assert 0.0 <= summary.ci_low <= summary.ci_high <= 1.0


# item 9: pass rates


def test_the_pass_rate_is_on_screen_in_summary_json_metrics_and_report(
    tmp_path, capsys, bleu_files
):
    from statsmodels.stats.proportion import proportion_confint

    data, graders = bleu_files
    out_dir = tmp_path / "r"
    code, out, _ = _eval(capsys, str(data), "--graders", str(graders), "--out", str(out_dir))
    assert code == 0
    summary = json.loads((out_dir / "summary.json").read_text())
    (grader,) = summary["graders"]
    assert (grader["passed"], grader["pass_n"]) == (2, 8)
    assert grader["pass_rate"] == 0.25
    low, high = proportion_confint(2, 8, alpha=0.05, method="beta")
    assert (grader["pass_low"], grader["pass_high"]) == (pytest.approx(low), pytest.approx(high))
    assert grader["pass_method_name"] == "Clopper-Pearson exact"
    assert summary["metrics"]["bleu/passed/rate"] == 0.25
    assert "0.2500 (2/8)" in out
    assert "pass rate" in (out_dir / "report.html").read_text()


# item 8: failing graders


def test_a_grader_that_failed_on_every_sample_exits_4_with_one_line(tmp_path, capsys):
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(json.dumps({"prompt": f"q{i}", "completion": "a"}) + "\n" for i in range(4))
    )
    graders = tmp_path / "graders.toml"
    graders.write_text(
        '[judge]\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "JUDGE_KEY"\n'
        'max_attempts = 1\n\n[[graders]]\ntype = "binary_judge"\nkey = "helpful"\n'
        'criteria = "Answers the question"\njudge_model = "judge"\n'
    )
    import os

    os.environ.setdefault("JUDGE_KEY", "test-key")
    out_dir = tmp_path / "r"
    code, _, err = _eval(capsys, str(data), "--graders", str(graders), "--out", str(out_dir))
    assert code == 4
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "grader 'helpful' failed on 4 of 4" in line]
    assert len(lines) == 1
    assert "connection 4" in lines[0]
    assert "first: ModelHTTPError" in lines[0]
    (grader,) = json.loads((out_dir / "summary.json").read_text())["graders"]
    assert grader["error_kinds"] == {"connection": 4}
    assert len((out_dir / "results.jsonl").read_text().splitlines()) == 4  # kept as it is


def test_max_error_rate_fails_a_grader_over_it_and_not_under(tmp_path, capsys):
    from types import SimpleNamespace

    from gradewire.cli._eval_failures import failing_graders

    run = make_run(tmp_path, {"acc": [1, 0, None, 1, 1], "ok": [1, 1, 1, 1, 1]})
    result = SimpleNamespace(summaries=run.summaries(), run=run)
    assert failing_graders(result, None) == []
    assert failing_graders(result, 0.25) == []
    assert failing_graders(result, 0.1) == ["acc"]
    err = capsys.readouterr().err
    assert "grader 'acc' failed on 1 of 5 sample(s) (error 1)" in err
    assert "more than --max-error-rate 0.1 allows" in err
    assert "first: RuntimeError: failed" in err


# item 10: OpenAI Evals rows


def test_openai_evals_rows_are_read_as_they_are(tmp_path, capsys):
    data = tmp_path / "evals.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {
                    "item": {"id": f"s{i}", "reference": b, "question": "say"},
                    "sample": {"output_text": a, "model": "m"},
                }
            )
            + "\n"
            for i, (a, b) in enumerate(PAIRS)
        )
    )
    graders = tmp_path / "graders.json"
    graders.write_text(json.dumps({"graders": [_similarity("fuzzy_match")]}))
    code, _, err = _eval(capsys, str(data), "--graders", str(graders), "--out", str(tmp_path / "r"))
    assert code == 0, err
    run = load_run(tmp_path / "r")
    assert [r.id for r in run.records] == [f"s{i}" for i in range(8)]
    assert run.records[0].completion() == PAIRS[0][0]
    assert run.records[0].metadata["reference"] == PAIRS[0][1]
    assert run.records[0].metadata["sample"] == {"model": "m"}
    (summary,) = run.summaries()
    assert summary.n == 8


def test_dotted_keys_and_evals_output_json_and_tools():
    shape = RowShape.of({"completion_key": "sample.output_text", "prompt_key": "item.question"})
    row = {"item": {"question": "q?", "ref": 1}, "sample": {"output_text": "a!"}}
    _, thread = sample_from_row(row, "r:1", shape)
    assert thread.to_messages() == [
        {"role": "user", "content": "q?"},
        {"role": "assistant", "content": "a!"},
    ]
    assert thread.metadata["ref"] == 1
    _, thread = sample_from_row(
        {"item": {"input": "hi"}, "sample": {"output_json": {"x": 1}}}, "r:2", RowShape()
    )
    assert thread.completion() == '{"x":1}'
    tools = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    _, thread = sample_from_row(
        {"item": {}, "sample": {"output_text": "", "output_tools": tools}}, "r:3", RowShape()
    )
    assert thread.metadata["message_fields"]["0"]["tool_calls"] == tools
    # A dotted key into an ordinary row.
    shape = RowShape.of({"completion_key": "out.text"})
    _, thread = sample_from_row({"prompt": "p", "out": {"text": "t", "n": 2}}, "r:4", shape)
    assert thread.completion() == "t"
    assert thread.metadata["out"] == {"n": 2}


# smaller: --labels writes the PPI figures


def test_labels_ppi_goes_to_summary_json_and_metrics(tmp_path, capsys):
    data = tmp_path / "data.jsonl"
    rows = [
        {"id": f"q{i}", "prompt": "p", "completion": str(i % 2), "answer": 1} for i in range(20)
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    graders = tmp_path / "graders.toml"
    graders.write_text(
        '[[graders]]\ntype = "custom"\nkey = "correct"\n'
        'function = "support.eval_graders:numeric_answer"\n'
    )
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(json.dumps({"id": f"q{i}", "label": int(i % 3 != 0)}) + "\n" for i in range(6))
    )
    out_dir = tmp_path / "r"
    code, _, err = _eval(
        capsys,
        str(data),
        "--graders",
        str(graders),
        "--out",
        str(out_dir),
        "--labels",
        str(labels),
        "--sink",
        "jsonl",
    )
    assert code == 0, err
    summary = json.loads((out_dir / "summary.json").read_text())
    ppi = summary["ppi"]["correct"]
    assert ppi["n_labels"] == 6
    assert ppi["ci"][0] <= ppi["estimate"] <= ppi["ci"][1]
    assert summary["metrics"]["correct/ppi/mean"] == pytest.approx(ppi["estimate"])
    logged = (out_dir / "logs.jsonl").read_text()
    assert "correct/ppi/mean" in logged


def test_openai_graders_declare_their_range():
    import gradewire as gw

    check = gw.openai_grader(
        {
            "type": "string_check",
            "name": "s",
            "input": "{{sample.output_text}}",
            "reference": "x",
            "operation": "eq",
        }
    )
    assert check.score_range == (0.0, 1.0)
    cosine = gw.openai_grader(_similarity("cosine"))
    assert cosine.score_range == (-1.0, 1.0)
    assert gw.openai_grader(_similarity("bleu")).score_range == (0.0, 1.0)
    scale = gw.openai_grader(
        {
            "type": "score_model",
            "name": "m",
            "model": "judge",
            "input": [{"role": "user", "content": "rate"}],
            "range": [1, 5],
        },
        base_url="http://127.0.0.1:9/v1",
        api_key="x",
    )
    assert scale.score_range == (1.0, 5.0)


def test_a_plain_sink_gets_the_methods_caveats_and_pass_metrics(tmp_path):
    from gradewire.eval.reporting._trackers import log_run_to_sink
    from gradewire.sinks import MemorySink

    run = make_run(tmp_path, {"acc": [1, 0, 1, 1, 0, 1]}, topics=list("aabbcc"))
    run = type(run)(
        run.name, run.records, run.spec_hashes, run.config, run.folder, cluster_key="topic"
    )
    sink = MemorySink()
    log_run_to_sink(run, sink)
    assert sink.config["interval_methods"] == {
        "acc": "Wilson score, effective n (Korn-Graubard), cluster-robust CR2"
    }
    assert "3 clusters" in sink.config["interval_caveats"]["acc"]
    (_, logs) = sink.steps[0]
    assert logs["acc/score/ci_low"] >= 0.0
