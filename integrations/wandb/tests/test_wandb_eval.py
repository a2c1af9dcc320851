"""Eval runs in W&B offline, read back from the run file: summary metrics and the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gradewire as gw
from gradewire.eval import run_eval
from gradewire.eval.comparing._compare_runs import compare_runs
from gradewire_wandb import find_offline_runs, read_offline_run
from gradewire_wandb._eval import TABLE_KEY, WandbEvalTracker


async def test_summary_and_typed_table_of_samples(tmp_path: Path):
    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "prompt": f"<i>{i}</i>?", "completion": str(i % 2)}) + "\n"
            for i in range(12)
        ),
        encoding="utf-8",
    )

    def odd(sample: gw.StringThread) -> float:
        if sample.completion() == "1" and "11" in (sample.last_user_content() or ""):
            raise gw.GradingError("no")
        return float(sample.completion() == "1")

    result = await run_eval(data, [gw.BaseGrader.from_function("odd", odd)], tmp_path / "run")
    tracker = WandbEvalTracker(tmp_path / "run", project="eval", mode="offline", dir=tmp_path)
    notes = tracker.log_run(result.run, result.summaries)
    assert "W&B: summary" in notes[0]
    (path,) = find_offline_runs(tmp_path)
    run = read_offline_run(path)
    for key, value in result.run.metrics().items():
        assert run.summary[key] == pytest.approx(value), key
    assert run.summary["odd/score/error_count"] == 1
    assert run.summary["eval/samples_count"] == 12
    table = run.table(run.summary[TABLE_KEY]).to_dict()
    assert table["columns"] == ["id", "prompt", "completion", "odd", "odd/outcome", "odd/reasoning"]
    rows = {row[0]: row for row in table["data"]}
    assert len(rows) == 12
    assert rows["q3"][1:5] == ["<i>3</i>?", "1", 1.0, "ok"]
    assert rows["q11"][3:6] == [None, "error", "GradingError: no"]
    assert run.config["data"]["rows"] == 12
    assert run.config["spec_hashes"] == dict(result.run.spec_hashes)

    comparison = compare_runs(result.run, result.run)
    WandbEvalTracker(tmp_path / "run", project="eval", mode="offline", dir=tmp_path).log_comparison(
        comparison, "<p>report</p>"
    )
    (later,) = set(find_offline_runs(tmp_path)) - {path}  # one second: sorted by random id
    compared = read_offline_run(later)
    assert compared.summary["compare/odd/diff"] == 0.0
    assert compared.summary["compare/odd/n_pairs"] == 11


async def test_ordinary_grader_keys_keep_their_names(tmp_path: Path):
    keys = ["pass@1", "acc(strict)", "f1+bleu", "judge [/v2]", "f1[macro]"]
    data = tmp_path / "d.jsonl"
    data.write_text('{"prompt": "q", "completion": "a"}\n', encoding="utf-8")
    graders = [gw.BaseGrader.from_function(k, lambda s, n=n: n / 10) for n, k in enumerate(keys)]
    result = await run_eval(data, graders, tmp_path / "run")
    WandbEvalTracker(tmp_path / "run", project="eval", mode="offline", dir=tmp_path).log_run(
        result.run, result.summaries
    )
    (path,) = find_offline_runs(tmp_path)
    run = read_offline_run(path)
    for n, key in enumerate(keys):
        assert run.summary[f"{key}/score/mean"] == pytest.approx(n / 10)
    table = run.table(run.summary[TABLE_KEY]).to_dict()
    assert table["columns"][3:] == [
        column for key in keys for column in (key, f"{key}/outcome", f"{key}/reasoning")
    ]


async def test_agreement_is_logged_as_its_own_run(tmp_path: Path):
    from gradewire.eval.auditing._run_agreement import run_agreement

    data = tmp_path / "d.jsonl"
    rows = [{"id": f"q{i}", "prompt": "p", "completion": str(i % 2)} for i in range(10)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    grader = gw.BaseGrader.from_function("odd", lambda s: float(s.completion() == "1"))
    result = await run_eval(data, [grader], tmp_path / "run")
    figures = run_agreement(result.run, "odd", {f"q{i}": 1.0 for i in range(10)}, n_resamples=0)
    tracker = WandbEvalTracker(tmp_path / "run", project="eval", mode="offline", dir=tmp_path)
    [note] = tracker.log_report(
        "agreement", "agreement odd", figures.metrics(), ["odd"], figures.to_html(), {}
    )
    assert note.startswith("W&B: agreement logged to run")
    (path,) = find_offline_runs(tmp_path)
    logged = read_offline_run(path)
    assert logged.summary["agreement/odd/raw_agreement"] == 0.5
    assert logged.summary["agreement/odd/n"] == 10


async def test_a_comparison_logs_its_verdicts_slices_and_page_and_a_run_its_report(
    tmp_path: Path,
):
    from gradewire.eval.reporting._compare_page import render_comparison
    from gradewire.eval.reporting._trackers import SLICE_COLUMNS, VERDICT_COLUMNS
    from gradewire_wandb._eval import REPORT_KEY, SLICES_KEY, VERDICTS_KEY

    key = "c*<b>_[x]"
    grader = gw.BaseGrader.from_function(
        key, lambda s: float(s.completion() == str(s.metadata["answer"]))
    )
    runs = []
    for name, every in (("a", 2), ("b", 5)):
        data = tmp_path / f"{name}.jsonl"
        data.write_text(
            "".join(
                json.dumps(
                    {
                        "id": f"q{i}",
                        "prompt": f"What is {i} + {i}?",
                        "completion": str(2 * i + (i % every == 0)),
                        "answer": 2 * i,
                        "topic": ["easy", "hard <i>"][i % 2],
                    }
                )
                + "\n"
                for i in range(40)
            ),
            encoding="utf-8",
        )
        runs.append((await run_eval(data, [grader], tmp_path / name)).run)
    tracker = WandbEvalTracker(tmp_path / "b", project="eval", mode="offline", dir=tmp_path)
    tracker.log_run(runs[1], runs[1].summaries())
    (first,) = find_offline_runs(tmp_path)
    logged_run = read_offline_run(first)
    report = logged_run.media_file(logged_run.summary[REPORT_KEY])
    assert report.read_text(encoding="utf-8") == (tmp_path / "b" / "report.html").read_text(
        encoding="utf-8"
    )

    comparison = compare_runs(runs[0], runs[1], by="topic", n_resamples=200)
    page = render_comparison(comparison)
    tracker.log_comparison(comparison, page)
    (later,) = set(find_offline_runs(tmp_path)) - {first}
    compared = read_offline_run(later)
    (g,) = comparison.graders
    assert compared.summary[f"compare/{key}/verdict"] == g.verdict
    assert g.verdict.startswith(f"B is better than A on {key}")
    assert (
        compared.media_file(compared.summary["compare/report"]).read_text(encoding="utf-8") == page
    )
    verdicts = compared.table(compared.summary[VERDICTS_KEY]).to_dict()
    assert verdicts["columns"] == list(VERDICT_COLUMNS)
    assert [row[:4] for row in verdicts["data"]] == [[key, g.verdict, g.n_pairs, g.diff]]
    slices = compared.table(compared.summary[SLICES_KEY]).to_dict()
    assert slices["columns"] == list(SLICE_COLUMNS)
    assert [row[:6] for row in slices["data"]] == [
        [key, s.value, s.n_pairs, s.mean_a, s.mean_b, s.diff] for s in g.slices
    ]
    assert compared.config["by"] == "topic"
