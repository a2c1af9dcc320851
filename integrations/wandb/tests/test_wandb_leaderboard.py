"""A leaderboard in W&B offline, read back from the run folder: one run with the standings
table (interval columns), a bar chart of the means per grader, the same bars with error
bars as an HTML panel, the page and the figures in the summary (issue 31)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from gradewire.cli._main import main
from gradewire.eval import leaderboard, load_run, render_leaderboard
from gradewire.eval.reporting._trackers import LEADERBOARD_COLUMNS
from gradewire_wandb import _eval, find_offline_runs, read_offline_run
from gradewire_wandb._eval import LEADERBOARD_REPORT_KEY, LEADERBOARD_TABLE_KEY
from gradewire_wandb._run_records import read_records, run_file
from support.eval_helpers import make_run

HOSTILE = "m<script>x</script>"


def _folders(tmp_path: Path) -> list[Path]:
    rng = np.random.default_rng(4)
    n = 60
    top = rng.normal(1.0, 1.0, n)
    scores = {
        "top": top,
        "twin": top.copy(),
        HOSTILE.replace("/", "_"): rng.normal(0.0, 1.0, n),
        "low": rng.normal(-1.0, 1.0, n),
    }
    folders = []
    for name, values in scores.items():
        make_run(
            tmp_path / "runs" / name,
            {"score": list(values), "pass@1": list((values > 0).astype(float))},
        )
        folders.append(tmp_path / "runs" / name)
    return folders


def test_a_leaderboard_is_one_run_with_its_table_bar_charts_and_page(tmp_path, monkeypatch, capsys):
    # The tracker the CLI's entry point makes, writing where this test reads (W&B keeps the
    # folders of its first run in the process, so WANDB_DIR set now would not move it).
    monkeypatch.setattr(
        _eval,
        "eval_tracker",
        lambda folder: _eval.WandbEvalTracker(
            folder, project="lb", mode="offline", dir=tmp_path / "wandb-dir"
        ),
    )
    (tmp_path / "wandb-dir").mkdir()
    folders = _folders(tmp_path)
    assert main(["leaderboard", *map(str, folders), "--sink", "wandb"]) == 0
    assert "W&B: leaderboard logged to run" in capsys.readouterr().out
    (path,) = find_offline_runs(tmp_path / "wandb-dir")
    logged = read_offline_run(path)
    board = leaderboard([load_run(f) for f in folders])

    # The standings: one row per run and grader, the interval columns typed as numbers.
    table = logged.table(logged.summary[LEADERBOARD_TABLE_KEY]).to_dict()
    assert table["columns"] == list(LEADERBOARD_COLUMNS)
    assert table["columns"][:8] == [
        "run",
        "grader",
        "mean",
        "low",
        "high",
        "rank_low",
        "rank_high",
        "tier",
    ]
    expected = [
        [r.run, g.grader, r.mean, r.low, r.high, r.rank_low, r.rank_high, r.tier]
        for g in board.graders
        for r in g.runs
    ]
    assert len(table["data"]) == 2 * 4
    for row, want in zip(table["data"], expected, strict=True):
        assert row[:2] == want[:2]
        assert row[2:5] == pytest.approx(want[2:5], rel=1e-12)
        assert row[5:8] == want[5:8]
    twins = [row for row in table["data"] if row[0] in ("top", "twin") and row[1] == "score"]
    assert twins[0][5:8] == twins[1][5:8]  # identical runs: one rank interval, one tier

    # W&B's own bar chart of the means: its table, and the panel naming W&B's bar preset.
    config = {}
    for record in read_records(run_file(path)).records:
        if record.get("type") == "config":
            config.update(record["config"].get("update") or {})
    for g in board.graders:
        means = logged.table(logged.summary[f"leaderboard/{g.grader}/means_table"]).to_dict()
        assert means["columns"] == ["run", "mean"]
        assert [row[0] for row in means["data"]] == [r.run for r in g.runs]
        assert [row[1] for row in means["data"]] == pytest.approx([r.mean for r in g.runs])
        panel = config[f"_wandb.visualize.leaderboard/{g.grader}/means"]
        assert panel["panel_config"]["panelDefId"] == "wandb/bar/v0"
        assert panel["panel_config"]["fieldSettings"] == {"label": "run", "value": "mean"}

        # The bars with error bars: one bar and one error bar per run, at the intervals.
        chart = logged.media_file(logged.summary[f"leaderboard/{g.grader}/intervals"])
        svg = chart.read_text(encoding="utf-8")
        assert "<script>x" not in svg
        assert svg.count('class="bar"') == len(g.runs)
        assert svg.count('class="error-bar"') == len(g.runs)
        tips = re.findall(r"interval ([-\d.e]+) to ([-\d.e]+), rank (\d)–(\d), tier (\d)", svg)
        assert [float(v) for t in tips for v in t[:2]] == pytest.approx(
            [v for r in g.runs for v in (r.low, r.high)], rel=1e-3
        )
        assert [tuple(map(int, t[2:])) for t in tips] == [
            (r.rank_low, r.rank_high, r.tier) for r in g.runs
        ]

    # The page byte for byte, and the figures in the summary.
    page = logged.media_file(logged.summary[LEADERBOARD_REPORT_KEY]).read_text(encoding="utf-8")
    assert page == render_leaderboard(board)
    for g in board.graders:
        for r in g.runs:
            assert logged.summary[f"{g.grader}/{r.run}/mean"] == pytest.approx(r.mean)
            assert logged.summary[f"{g.grader}/{r.run}/rank_high"] == r.rank_high
        assert logged.summary[f"{g.grader}/summary"] == g.summary()
    assert logged.config["runs"] == list(board.runs)
    assert "holm" in logged.config["adjustment"].lower()
    assert json.loads(json.dumps(logged.config["confidence"])) == 0.95
