"""A leaderboard of MLflow runs in MLflow, read back from a real tracking server: the
leaderboard's own run (metrics per run and grader, the page, the standings table) and each
ranked run tagged with its rank interval and tier (issue 31)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from mlflow import MlflowClient

import gradewire as gw
from gradewire.cli._main import main
from gradewire.eval import leaderboard, load_run, open_run, render_leaderboard, run_eval
from gradewire.eval.ranking._leaderboard import run_names
from gradewire.eval.reporting._trackers import LEADERBOARD_COLUMNS
from gradewire_mlflow._eval import MlflowEvalTracker


def _data(path: Path, every: int) -> Path:
    """20 questions; the model of ``every`` gets each ``every``-th one wrong."""
    rows = [
        {
            "id": f"q{i}",
            "prompt": f"What is {i} + {i}?",
            "completion": str(2 * i + (i % every == 0)),
            "answer": 2 * i,
        }
        for i in range(20)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _grader() -> gw.BaseGrader:
    return gw.BaseGrader.from_function(
        "pass@1", lambda s: gw.numeric_match(s.completion() or "", s.metadata["answer"])
    )


def test_a_leaderboard_of_mlflow_runs_is_a_run_and_tags_each_ranked_run(
    tmp_path, mlflow_server, monkeypatch, capsys
):
    experiment = f"leaderboard-{uuid.uuid4().hex[:8]}"
    client = MlflowClient(mlflow_server.url)
    run_ids = []
    folders = []
    for name, every in (("good", 10), ("same", 10), ("bad", 2)):
        out = tmp_path / name
        result = gw.run_sync(run_eval(_data(tmp_path / f"{name}.jsonl", every), [_grader()], out))
        MlflowEvalTracker(out, tracking_uri=mlflow_server.url, experiment_name=experiment).log_run(
            result.run, result.summaries
        )
        run_ids.append(json.loads((out / "mlflow.json").read_text())["run_id"])
        folders.append(out)
    # A run folder ranked beside them: it is no MLflow run, so nothing of it is tagged.
    folders[2].rename(tmp_path / "bad-folder")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", experiment)
    sources = [*run_ids, str(tmp_path / "bad-folder")]
    assert main(["leaderboard", *sources, "--sink", "mlflow"]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if "leaderboard logged as run" in x]
    leaderboard_id = line.split(" run ")[1].split()[0]
    assert "MLflow: 3 ranked run(s) tagged" in out

    runs = [open_run(ref) for ref in run_ids] + [load_run(tmp_path / "bad-folder")]
    board = leaderboard(runs)
    (g,) = board.graders
    assert g.grader == "pass@1"
    # The leaderboard's run: metrics per run and grader under names MLflow takes.
    logged = client.get_run(leaderboard_id)
    assert logged.data.tags["gradewire.report"] == "leaderboard"
    metrics = logged.data.metrics
    for r in g.runs:
        clean = r.run.replace("(", "_").replace(")", "_")
        head = f"leaderboard/pass_1/{clean}"
        assert metrics[f"{head}/mean"] == pytest.approx(r.mean)
        assert metrics[f"{head}/ci_low"] == pytest.approx(r.low)
        assert metrics[f"{head}/ci_high"] == pytest.approx(r.high)
        assert (metrics[f"{head}/rank_low"], metrics[f"{head}/rank_high"]) == (
            r.rank_low,
            r.rank_high,
        )
        assert metrics[f"{head}/tier"] == r.tier
    assert metrics["leaderboard/pass_1/separable_from_leader"] == len(g.separable_from_leader())
    # The page and the standings as artifacts.
    folder = Path(client.download_artifacts(leaderboard_id, "gradewire", str(tmp_path / "dl")))
    assert (folder / "leaderboard.html").read_text(encoding="utf-8") == render_leaderboard(board)
    standings = json.loads((folder / "standings.json").read_text(encoding="utf-8"))
    assert standings["columns"] == list(LEADERBOARD_COLUMNS)
    assert [row[0] for row in standings["data"]] == [r.run for r in g.runs]
    note = logged.data.tags["mlflow.note.content"]
    assert f"- **pass@1**: {g.summary()}".replace("<", "&lt;") in note  # HTML-escaped

    # Each ranked MLflow run: its standing as tags, naming the leaderboard's run.
    standing = {r.run: r for r in g.runs}
    names = run_names(runs)
    for run_id, name in zip(run_ids, names, strict=False):
        tags = client.get_run(run_id).data.tags
        r = standing[name]
        assert tags["gradewire.leaderboard.run_id"] == leaderboard_id
        ranks = f"{r.rank_low}" if r.rank_low == r.rank_high else f"{r.rank_low}-{r.rank_high}"
        assert tags["gradewire.leaderboard.pass_1.rank_interval"] == ranks
        assert tags["gradewire.leaderboard.pass_1.tier"] == str(r.tier)
    # The two identical runs share a rank interval and a tier; the worse one is below them.
    good, same = (client.get_run(i).data.tags for i in run_ids[:2])
    assert (
        good["gradewire.leaderboard.pass_1.rank_interval"]
        == (same["gradewire.leaderboard.pass_1.rank_interval"])
    )
    assert good["gradewire.leaderboard.pass_1.tier"] == same["gradewire.leaderboard.pass_1.tier"]
    assert standing[names[3]].tier == standing[names[2]].tier > standing[names[0]].tier
