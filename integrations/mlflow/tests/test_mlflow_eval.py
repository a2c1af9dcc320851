"""Eval runs in MLflow, read back from a real tracking server: traces, feedback, metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import mlflow
import pytest
from mlflow import MlflowClient

import gradewire as gw
from gradewire.eval import load_run, run_eval
from gradewire.eval.comparing._compare_runs import compare_runs
from gradewire_mlflow._eval import SAMPLE_TAG, MlflowEvalTracker
from gradewire_mlflow._eval_source import read_mlflow_run
from support.processes import child_env

TESTS = Path(__file__).resolve().parents[3] / "tests"


def write_data(path: Path, n: int) -> Path:
    rows = [
        {
            "id": f"q{i}",
            "prompt": f"What is {i} + {i}? <b>",
            "completion": str(2 * i + (i % 3 == 0)),
            "answer": 2 * i,
            **({} if i % 7 else {"skip": True}),
        }
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def graders(broken: set[int]):
    def correct(sample):
        if sample.metadata.get("skip"):
            return None  # abstain
        return gw.numeric_match(sample.completion() or "", sample.metadata["answer"])

    def judge(sample):
        i = int(sample.metadata["answer"]) // 2
        if i in broken:
            raise gw.ModelCallError("judge down")
        return gw.Grade(0.5 + (i % 2) / 2, "judge", reasoning=f"reason {i}")

    return [
        gw.BaseGrader.from_function("correct", correct),
        gw.BaseGrader.from_function("judge", judge),
    ]


@pytest.fixture
def experiment() -> str:
    return f"eval-{uuid.uuid4().hex[:8]}"


async def test_one_trace_per_sample_with_each_graders_feedback(
    tmp_path, mlflow_server, experiment, monkeypatch
):
    data = write_data(tmp_path / "d.jsonl", 30)
    out = tmp_path / "run"
    result = await run_eval(data, graders({4, 5}), out)
    tracker = MlflowEvalTracker(out, tracking_uri=mlflow_server.url, experiment_name=experiment)
    notes = tracker.log_run(result.run, result.summaries)
    assert "30 trace(s) logged" in notes[0]
    run_id = json.loads((out / "mlflow.json").read_text())["run_id"]
    assert not mlflow.is_tracking_uri_set()  # the tracker put MLflow's globals back
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)
    where = [MlflowClient(mlflow_server.url).get_run(run_id).info.experiment_id]
    traces = mlflow.search_traces(run_id=run_id, return_type="list", locations=where)
    assert len(traces) == 30
    by_id = {t.info.tags[SAMPLE_TAG]: t for t in traces}
    assert set(by_id) == {f"q{i}" for i in range(30)}
    q1 = {a.name: a for a in by_id["q1"].info.assessments}
    assert q1["correct"].feedback.value == 1.0
    assert q1["judge"].feedback.value == 1.0
    assert q1["judge"].rationale == "reason 1"
    assert q1["judge"].source.source_type == "CODE"
    q4 = {a.name: a for a in by_id["q4"].info.assessments}
    assert q4["judge"].feedback.error.error_code == "ModelCallError"
    assert q4["judge"].feedback.error.error_message == "judge down"
    q7 = {a.name for a in by_id["q7"].info.assessments}
    assert q7 == {"judge"}  # abstained on "correct": no score, noted on the trace
    assert by_id["q7"].info.tags["gradewire.abstained.correct"]
    assert json.loads(by_id["q3"].data.request)["messages"][0]["content"] == "What is 3 + 3? <b>"
    client = MlflowClient(mlflow_server.url)
    logged = client.get_run(run_id)
    assert logged.data.tags["mlflow.runType"] == "genai_evaluate"
    for key, value in result.run.metrics().items():
        assert logged.data.metrics[key] == pytest.approx(value), key
    assert logged.data.metrics["judge/score/error_count"] == 2
    files = {f.path for f in client.list_artifacts(run_id, "gradewire")}
    assert {"gradewire/report.html", "gradewire/summary.json", "gradewire/config.json"} <= files

    # Resume with the judge fixed: only the two retried samples get new traces.
    fixed = await run_eval(data, graders(set()), out, retry_errors=True)
    notes = MlflowEvalTracker(
        out, tracking_uri=mlflow_server.url, experiment_name=experiment
    ).log_run(fixed.run, fixed.summaries)
    assert "2 trace(s) logged" in notes[0]
    traces = mlflow.search_traces(run_id=run_id, return_type="list", locations=where)
    assert len(traces) == 30
    q4 = {a.name: a for t in traces if t.info.tags[SAMPLE_TAG] == "q4" for a in t.info.assessments}
    assert q4["judge"].feedback.value == 0.5
    assert client.get_run(run_id).data.metrics["judge/score/error_count"] == 0

    # The MLflow run reads back as an eval run, and compares equal to its folder.
    from_mlflow = read_mlflow_run(run_id)
    assert from_mlflow is not None
    assert len(from_mlflow.records) == 30
    comparison = compare_runs(load_run(out), from_mlflow)
    assert [(g.grader, g.n_pairs, g.diff) for g in comparison.graders] == [
        ("correct", 25, 0.0),
        ("judge", 30, 0.0),
    ]
    assert read_mlflow_run("not-a-run-id") is None


def test_cli_sink_mlflow_and_compare_by_run_id(tmp_path, mlflow_server, experiment):
    data = write_data(tmp_path / "d.jsonl", 8)
    graders_file = tmp_path / "g.toml"
    graders_file.write_text(
        '[[graders]]\ntype = "custom"\nkey = "correct"'
        '\nfunction = "support.eval_graders:numeric_answer"\n'
    )
    env = child_env(TESTS, MLFLOW_TRACKING_URI=mlflow_server.url, MLFLOW_EXPERIMENT_NAME=experiment)
    out = tmp_path / "run"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gradewire",
            "eval",
            str(data),
            "--graders",
            str(graders_file),
            "--out",
            str(out),
            "--sink",
            "mlflow",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert "8 trace(s) logged" in done.stdout
    # A server is opened in a browser; `mlflow ui --backend-store-uri http://...` would not work.
    [view] = [line for line in done.stdout.splitlines() if "view it:" in line]
    assert view.split("view it:", 1)[1].strip() == mlflow_server.url
    run_id = json.loads((out / "mlflow.json").read_text())["run_id"]
    compared = subprocess.run(
        [
            sys.executable,
            "-m",
            "gradewire",
            "compare",
            run_id,
            str(out),
            "--json",
            "--sink",
            "mlflow",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert compared.returncode == 0, compared.stderr
    (grader,) = json.loads(compared.stdout)["graders"]
    assert grader["n_pairs"] == 8
    assert grader["diff"] == 0.0
    client = MlflowClient(mlflow_server.url)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    comparison_run = next(r for r in runs if r.info.run_id != run_id)
    assert comparison_run.data.metrics["compare/correct/diff"] == 0.0


ODD_KEYS = ["pass@1", "acc(strict)", "f1+bleu", "judge [/v2]", "a/../b", "a_b", "a@b"]


def odd_graders():
    return [
        gw.BaseGrader.from_function(key, lambda s, n=n: n / 10) for n, key in enumerate(ODD_KEYS)
    ]


async def test_ordinary_grader_keys_log_under_names_mlflow_takes(
    tmp_path, mlflow_server, experiment, caplog, monkeypatch
):
    data = write_data(tmp_path / "d.jsonl", 6)
    result = await run_eval(data, odd_graders(), tmp_path / "run")
    tracker = MlflowEvalTracker(
        tmp_path / "run", tracking_uri=mlflow_server.url, experiment_name=experiment
    )
    tracker.log_run(result.run, result.summaries)
    run_id = json.loads((tmp_path / "run" / "mlflow.json").read_text())["run_id"]
    client = MlflowClient(mlflow_server.url)
    logged = client.get_run(run_id)
    assert logged.info.status == "FINISHED"
    means = {k: v for k, v in logged.data.metrics.items() if k.endswith("/score/mean")}
    assert means == pytest.approx(
        {
            "pass_1/score/mean": 0.0,
            "acc_strict_/score/mean": 0.1,
            "f1_bleu/score/mean": 0.2,
            "judge _/v2_/score/mean": 0.3,
            "a/__/b/score/mean": 0.4,
            "a_b/score/mean": 0.5,
            "a_b-7508d8b5/score/mean": 0.6,  # never two graders under one name
        }
    )
    assert len(logged.data.metrics) == len(result.run.metrics())
    # One warning per grader key renamed, not one per metric.
    renamed = [r.getMessage() for r in caplog.records if "not a valid MLflow name" in r.message]
    assert len(renamed) == 6
    # The feedback keeps the grader's own key: compare reads the run back by it.
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)
    from_mlflow = read_mlflow_run(run_id)
    assert from_mlflow is not None
    assert sorted(from_mlflow.graders) == sorted(ODD_KEYS)

    comparison = compare_runs(load_run(tmp_path / "run"), load_run(tmp_path / "run"))
    tracker.log_comparison(comparison, "<html></html>")
    runs = client.search_runs(
        [client.get_experiment_by_name(experiment).experiment_id],
        filter_string="tags.`gradewire.compare.run_a` != ''",
    )
    (compare_run,) = runs
    assert compare_run.data.metrics["compare/pass_1/diff"] == 0.0
    assert compare_run.data.metrics["compare/a_b-7508d8b5/n_pairs"] == 6


def test_a_tracker_failure_after_grading_keeps_the_run_folder_and_ends_the_mlflow_run(
    tmp_path, mlflow_server, experiment
):
    # An experiment whose artifacts cannot be written: a real fault, after the run started.
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    client = MlflowClient(mlflow_server.url)
    client.create_experiment(experiment, artifact_location=(blocked / "artifacts").as_uri())
    data = write_data(tmp_path / "d.jsonl", 4)
    graders_file = tmp_path / "g.toml"
    graders_file.write_text(
        '[[graders]]\ntype = "custom"\nkey = "pass@1"'
        '\nfunction = "support.eval_graders:numeric_answer"\n'
    )
    env = child_env(TESTS, MLFLOW_TRACKING_URI=mlflow_server.url, MLFLOW_EXPERIMENT_NAME=experiment)
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "gradewire",
        "eval",
        str(data),
        "--graders",
        str(graders_file),
        "--out",
        str(out),
        "--sink",
        "mlflow",
        "--no-progress",
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 3, done.stderr
    assert "logging the run failed: mlflow" in done.stderr
    assert "Traceback" not in done.stderr
    assert json.loads((out / "summary.json").read_text())["samples"] == 4
    assert (out / "report.html").exists()
    assert "report:" in done.stdout
    experiment_id = client.get_experiment_by_name(experiment).experiment_id
    (run,) = client.search_runs([experiment_id])
    assert run.info.status == "FAILED"  # ended, not left RUNNING
    assert run.data.metrics["pass_1/score/count"] == 4


async def test_a_logged_run_carries_the_hashes_compare_checks(tmp_path, mlflow_server, experiment):
    from gradewire.eval import MismatchedRunsError

    data = write_data(tmp_path / "d.jsonl", 8)
    out = tmp_path / "run"
    result = await run_eval(data, graders(set()), out)
    MlflowEvalTracker(out, tracking_uri=mlflow_server.url, experiment_name=experiment).log_run(
        result.run, result.summaries
    )
    run_id = json.loads((out / "mlflow.json").read_text())["run_id"]
    os.environ["MLFLOW_TRACKING_URI"] = mlflow_server.url
    try:
        logged = read_mlflow_run(run_id)
    finally:
        del os.environ["MLFLOW_TRACKING_URI"]
    assert logged is not None
    folder = load_run(out)
    assert {r.id: r.prompt_hash for r in logged.records} == {
        r.id: r.prompt_hash for r in folder.records
    }
    assert logged.spec_hashes == folder.spec_hashes
    assert [g["key"] for g in logged.config["graders"]] == ["correct", "judge"]
    # Another run whose ids name other questions: refused, from MLflow as from a folder.
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    shuffled = [{**row, "id": rows[(i + 1) % len(rows)]["id"]} for i, row in enumerate(rows)]
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps(r) + "\n" for r in shuffled))
    moved = (await run_eval(other, graders(set()), tmp_path / "moved")).run
    with pytest.raises(MismatchedRunsError, match="8 of 8 paired samples have different prompts"):
        compare_runs(logged, moved)
    # A grader whose spec changed: refused, with the specs' difference.
    renamed = [
        gw.BaseGrader.from_function("correct", lambda sample: 1.0),
        graders(set())[1],
    ]
    changed = (await run_eval(data, renamed, tmp_path / "changed")).run
    with pytest.raises(MismatchedRunsError, match="'correct': function"):
        compare_runs(logged, changed)


def test_agreement_is_logged_as_its_own_run(tmp_path, mlflow_server, experiment):
    from gradewire.eval.auditing._run_agreement import run_agreement

    out = tmp_path / "run"
    data = write_data(tmp_path / "d.jsonl", 8)
    result = gw.run_sync(run_eval(data, graders(set()), out))
    labels = {r.id: 1.0 for r in result.run.records}
    figures = run_agreement(load_run(out), "correct", labels, n_resamples=100)
    tracker = MlflowEvalTracker(out, tracking_uri=mlflow_server.url, experiment_name=experiment)
    [note] = tracker.log_report(
        "agreement",
        "agreement correct",
        figures.metrics(),
        ["correct"],
        figures.to_html(),
        figures.to_dict(),
    )
    run_id = note.split(" run ")[1].split()[0]
    client = MlflowClient(mlflow_server.url)
    logged = client.get_run(run_id)
    assert logged.data.metrics["agreement/correct/raw_agreement"] == figures.agreement.raw_agreement
    assert logged.data.tags["gradewire.report"] == "agreement"
    artifacts = {a.path for a in client.list_artifacts(run_id, "gradewire")}
    assert artifacts == {"gradewire/agreement.html", "gradewire/agreement.json"}


def _search(url: str, run_id: str) -> list:
    where = [MlflowClient(url).get_run(run_id).info.experiment_id]
    os.environ["MLFLOW_TRACKING_URI"] = url
    try:
        return mlflow.search_traces(run_id=run_id, return_type="list", locations=where)
    finally:
        del os.environ["MLFLOW_TRACKING_URI"]


async def test_traces_hold_what_mlflows_fluent_tracing_writes(tmp_path, mlflow_server, experiment):
    # The same sample once through MLflow's own tracing and once through the writer: the
    # evaluation views read the metadata, tags, previews, span and Feedback of each alike.
    from gradewire_mlflow._eval import _fluent, _log_trace, _sources
    from gradewire_mlflow._traces import TraceWriter

    data = write_data(tmp_path / "d.jsonl", 8)
    run = (await run_eval(data, graders({4}), tmp_path / "run")).run
    client = MlflowClient(mlflow_server.url)
    experiment_id = client.create_experiment(experiment)
    logged: dict[str, str] = {}
    with _fluent(mlflow_server.url):
        with mlflow.start_run(experiment_id=experiment_id) as active:
            run_id = active.info.run_id
            for record in run.records[3:5]:
                logged[f"fluent-{record.id}"] = _log_trace(record, run.spec_hashes, _sources(run))
            mlflow.flush_trace_async_logging()
        writer = TraceWriter(
            mlflow_server.url, experiment_id, run_id, run.spec_hashes, _sources(run)
        )
        writer.write(run.records[3:5], lambda r, trace_id: logged.update({r.id: trace_id}))
    traces = {t.info.trace_id: t for t in _search(mlflow_server.url, run_id)}
    assert set(traces) == set(logged.values())
    for sample in ("q3", "q4"):
        ours, theirs = traces[logged[sample]], traces[logged[f"fluent-{sample}"]]
        sizes = {"mlflow.trace.sizeStats", "mlflow.trace.sizeBytes"}  # the exporter's extra
        assert set(ours.info.trace_metadata) == set(theirs.info.trace_metadata) - sizes
        for key, value in theirs.info.trace_metadata.items():
            if key not in sizes:
                assert ours.info.trace_metadata[key] == value, key
        assert set(ours.info.tags) == set(theirs.info.tags)
        assert ours.info.tags["mlflow.traceName"] == theirs.info.tags["mlflow.traceName"]
        assert ours.info.tags[SAMPLE_TAG] == sample
        assert ours.info.request_preview == theirs.info.request_preview
        assert ours.info.response_preview == theirs.info.response_preview
        assert ours.info.state == theirs.info.state
        assert ours.data.request == theirs.data.request
        assert ours.data.response == theirs.data.response
        ((span,), (their_span,)) = (ours.data.spans, theirs.data.spans)
        assert (span.name, span.span_type, span.parent_id) == (
            their_span.name,
            their_span.span_type,
            None,
        )

        def feedback(trace):
            root = trace.data.spans[0].span_id
            return {
                (a.name, a.value, a.rationale, a.source.source_type, a.source.source_id,
                 str(a.error), tuple(sorted(a.metadata.items())), a.span_id == root)
                for a in trace.info.assessments
            }  # fmt: skip

        assert feedback(ours) == feedback(theirs)
        assert len(feedback(ours)) == 2
    q4 = {a.name: a for a in traces[logged["q4"]].info.assessments}
    assert q4["judge"].feedback.error.error_message == "judge down"


async def test_a_failed_trace_write_keeps_what_was_stored_and_a_rerun_completes_it(
    tmp_path, mlflow_server, experiment, monkeypatch
):
    from mlflow.exceptions import MlflowException
    from mlflow.tracing.client import TracingClient

    data = write_data(tmp_path / "d.jsonl", 250)
    out = tmp_path / "run"
    result = await run_eval(data, graders(set()), out)
    start_trace = TracingClient.start_trace
    calls = iter(range(10**6))

    def failing(self, trace_info):  # the server refusing from the 131st trace on
        if next(calls) >= 130:
            raise MlflowException("the store is full")
        return start_trace(self, trace_info)

    monkeypatch.setattr(TracingClient, "start_trace", failing)
    tracker = MlflowEvalTracker(out, tracking_uri=mlflow_server.url, experiment_name=experiment)
    with pytest.raises(MlflowException, match="the store is full"):
        tracker.log_run(result.run, result.summaries)
    state = json.loads((out / "mlflow.json").read_text())
    # The first hundred were stored whole; the half-written second hundred was removed.
    assert len(state["traces"]) == 100
    traces = _search(mlflow_server.url, state["run_id"])
    assert {t.info.trace_id for t in traces} == {
        trace_id for trace_id, _ in state["traces"].values()
    }
    assert all(len(t.data.spans) == 1 for t in traces)
    assert all("judge" in {a.name for a in t.info.assessments} for t in traces)

    monkeypatch.setattr(TracingClient, "start_trace", start_trace)
    notes = tracker.log_run(result.run, result.summaries)
    assert "150 trace(s) logged" in notes[0]
    traces = _search(mlflow_server.url, state["run_id"])
    assert sorted(t.info.tags[SAMPLE_TAG] for t in traces) == sorted(f"q{i}" for i in range(250))


async def test_a_store_without_span_logging_gets_traces_through_mlflows_exporter(
    tmp_path, experiment, monkeypatch
):
    # MLflow's file store takes trace infos but no spans (it keeps them as artifacts).
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (tmp_path / "mlruns").as_uri()
    data = write_data(tmp_path / "d.jsonl", 6)
    out = tmp_path / "run"
    result = await run_eval(data, graders({2}), out)
    notes = MlflowEvalTracker(out, tracking_uri=uri, experiment_name=experiment).log_run(
        result.run, result.summaries
    )
    assert "6 trace(s) logged" in notes[0]
    run_id = json.loads((out / "mlflow.json").read_text())["run_id"]
    traces = _search(uri, run_id)
    assert sorted(t.info.tags[SAMPLE_TAG] for t in traces) == [f"q{i}" for i in range(6)]
    assert all(len(t.data.spans) == 1 for t in traces)
    q2 = {a.name: a for t in traces if t.info.tags[SAMPLE_TAG] == "q2" for a in t.info.assessments}
    assert q2["judge"].feedback.error.error_message == "judge down"


def two_runs(tmp_path: Path, key: str) -> tuple[Any, Any]:
    """Two runs of one grader on the same 40 questions, by topic; B answers more right."""

    def rows(wrong_every: int) -> list[dict[str, Any]]:
        return [
            {
                "id": f"q{i}",
                "prompt": f"What is {i} + {i}?",
                "completion": str(2 * i + (i % wrong_every == 0)),
                "answer": 2 * i,
                "topic": ["easy", "hard <i>"][i % 2],
            }
            for i in range(40)
        ]

    grader = gw.BaseGrader.from_function(
        key, lambda s: float(s.completion() == str(s.metadata["answer"]))
    )
    runs = []
    for name, every in (("a", 2), ("b", 5)):
        data = tmp_path / f"{name}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows(every)), encoding="utf-8")
        runs.append(gw.run_sync(run_eval(data, [grader], tmp_path / name)).run)
    return runs[0], runs[1]


def test_a_comparison_logs_its_verdicts_its_slices_and_its_page(
    tmp_path, mlflow_server, experiment
):
    from gradewire.eval.reporting._compare_page import render_comparison
    from gradewire_mlflow._eval import NOTE_TAG

    key = "c*<b>_[x]"
    run_a, run_b = two_runs(tmp_path, key)
    comparison = compare_runs(run_a, run_b, by="topic", n_resamples=200)
    page = render_comparison(comparison)
    tracker = MlflowEvalTracker(
        tmp_path / "b", tracking_uri=mlflow_server.url, experiment_name=experiment
    )
    [note] = tracker.log_comparison(comparison, page)
    run_id = note.split(" run ")[1].split()[0]
    client = MlflowClient(mlflow_server.url)
    logged = client.get_run(run_id)
    (g,) = comparison.graders
    assert g.verdict.startswith("B is better than A on c*<b>_[x]")
    description = logged.data.tags[NOTE_TAG]
    bullet = description.splitlines()[-1]
    assert bullet.startswith("- B is better than A on c\\*&lt;b&gt;\\_\\[x\\] by ")
    assert "<b>" not in description
    folder = Path(client.download_artifacts(run_id, "gradewire", str(tmp_path / "got")))
    assert (folder / "compare.html").read_text(encoding="utf-8") == page
    verdicts = json.loads((folder / "verdicts.json").read_text(encoding="utf-8"))
    assert verdicts["columns"][:2] == ["grader", "verdict"]
    assert [row[:4] for row in verdicts["data"]] == [[key, g.verdict, g.n_pairs, g.diff]]
    slices = json.loads((folder / "slices.json").read_text(encoding="utf-8"))
    assert slices["columns"] == [
        "grader",
        "slice",
        "n_pairs",
        "mean_a",
        "mean_b",
        "diff",
        "ci_low",
        "ci_high",
        "p_value",
        "flips",
        "flips_clearly",
        "method",
        "note",
    ]
    assert [row[:6] for row in slices["data"]] == [
        [key, s.value, s.n_pairs, s.mean_a, s.mean_b, s.diff] for s in g.slices
    ]
    assert {row[1] for row in slices["data"]} == {"easy", "hard <i>"}
    # MLflow's own reader takes them as the tables `mlflow.log_table` writes
    shown = json.loads(logged.data.tags["mlflow.loggedArtifacts"])
    assert shown == [
        {"path": "gradewire/verdicts.json", "type": "table"},
        {"path": "gradewire/slices.json", "type": "table"},
    ]
