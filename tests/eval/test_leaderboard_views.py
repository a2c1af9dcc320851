"""The leaderboard in a notebook, and judge drift said on every view of it (issue 31).

The notebook view (`Leaderboard._repr_html_`) shows the page's table of standings, escaped;
a grader whose verdicts came from different judges or served models in different runs is
flagged on the terminal, in ``--json`` and on the page, in compare's sentences.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np

from gradewire.cli._main import main
from gradewire.eval import compare_runs, leaderboard, load_run, render_leaderboard
from gradewire.eval.runs._eval_run import EvalRun
from gradewire.eval.runs._judge_facts import drift_lines, judge_facts, spread_lines
from support.browser_pages import PAYLOAD, open_page
from support.eval_helpers import make_run
from support.terminal_attack import assert_inert

JAN, JUN = "judge-2026-01-15", "judge-2026-06-30"


class _Tables(HTMLParser):
    """Each table's rows as lists of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _tables(html: str) -> list[list[list[str]]]:
    parser = _Tables()
    parser.feed(html)
    return parser.tables


def _runs(tmp_path: Path) -> list[EvalRun]:
    rng = np.random.default_rng(11)
    n = 80
    topics = [["math", PAYLOAD][i % 2] for i in range(n)]
    top = rng.normal(1.0, 1.0, n)
    runs = [
        make_run(tmp_path / "top", {"s": list(top)}, topics=topics),
        make_run(tmp_path / "twin", {"s": list(top)}, topics=topics),
        make_run(tmp_path / "low", {"s": list(rng.normal(-1.0, 1.0, n))}, topics=topics),
    ]
    (tmp_path / "low").rename(tmp_path / PAYLOAD.replace("/", "_"))
    return [*runs[:2], load_run(tmp_path / PAYLOAD.replace("/", "_"))]


def test_the_notebook_view_is_the_pages_table_escaped(tmp_path):
    board = leaderboard(_runs(tmp_path), by="topic")
    view = board._repr_html_()
    assert PAYLOAD not in view
    assert "<script" not in view
    assert "<img" not in view
    page = render_leaderboard(board)
    # Each board's table in the view holds exactly the cells of the page's table.
    assert _tables(view) == _tables(page)
    whole = board.board("s")
    header, *rows = _tables(view)[0]
    assert header[:5] == ["tier", "rank", "run", "mean", "95% interval"]
    assert [row[2] for row in rows] == [r.run for r in whole.runs]
    assert PAYLOAD.replace("/", "_") in {row[2] for row in rows}  # shown as text
    # Every board: the whole one and one per slice, each with its sentence.
    assert len(_tables(view)) == 1 + len(whole.slices) == 3
    assert whole.summary().split(" (")[0] in view
    text = repr(board)
    assert text.startswith("Leaderboard(3 runs on 80 shared samples; leaders s: ")
    assert len(text) < 200


def _judged(folder: Path, source: Path, served: str, identity: str) -> EvalRun:
    """The run of ``source`` as if a judge of ``identity`` served by ``served`` graded it."""
    folder.mkdir()
    for name in ("config.json",):
        (folder / name).write_bytes((source / name).read_bytes())
    lines = []
    for line in (source / "results.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for outcome in row["grades"].values():
            outcome["grade"]["info"] = {
                "judge": {
                    "identity": identity,
                    "served": [{"model": served, "fingerprint": "fp_1", "answers": 1}],
                }
            }
        lines.append(json.dumps(row))
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_run(folder)


def _drifting(tmp_path: Path) -> list[Path]:
    rng = np.random.default_rng(5)
    base = tmp_path / "base"
    make_run(base, {"helpful": list(rng.integers(0, 2, 40).astype(float))})
    hostile = "c\x1b[31m<b>"
    folders = [tmp_path / "a", tmp_path / "b", tmp_path / hostile]
    _judged(folders[0], base, JAN, "judge-id-1")
    _judged(folders[1], base, JAN, "judge-id-1")
    _judged(folders[2], base, JUN, "judge-id-2")
    return folders


def test_a_leaderboard_says_which_judge_answered_in_which_runs(tmp_path, capsys):
    folders = _drifting(tmp_path)
    runs = [load_run(f) for f in folders]
    board = leaderboard(runs).board("helpful")
    c = runs[2].name
    assert board.judge_drift == (
        f"helpful: judged by {JAN} (fp_1) in a, b and {JUN} (fp_1) in {c}",
        f"helpful: the judge differs: judge-id-1 in a, b and judge-id-2 in {c} (its model, "
        "prompt, criteria, examples or settings changed)",
    )
    # Two runs: compare's own sentences, from the one helper.
    comparison = compare_runs(runs[0], runs[2])
    assert comparison.judge_drift == tuple(
        drift_lines(["helpful"], judge_facts(runs[0]), judge_facts(runs[2]))
    )
    assert (
        comparison.judge_drift[0] == f"helpful: judged by {JAN} (fp_1) in A and {JUN} (fp_1) in B"
    )
    # The same judge everywhere: nothing to say.
    assert leaderboard(runs[:2]).board("helpful").judge_drift == ()

    paths = [str(f) for f in folders]
    assert main(["leaderboard", *paths]) == 0
    out = capsys.readouterr().out
    assert_inert(out)
    assert f"  warning: helpful: judged by {JAN} (fp_1) in a, b and {JUN} (fp_1) in c" in out
    assert "the judge differs: judge-id-1 in a, b and judge-id-2 in c\\x1b[31m<b>" in out

    assert main(["leaderboard", *paths, "--json"]) == 0
    (grader,) = json.loads(capsys.readouterr().out)["graders"]
    assert grader["judge_drift"] == list(board.judge_drift)

    page = tmp_path / "page.html"
    assert main(["leaderboard", *paths, "--html", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "<b>warning</b>: helpful: judged by" in html
    assert "c\x1b[31m&lt;b&gt;" in html
    assert "c\x1b[31m<b>" not in html
    assert "⚠ helpful: the judge differs" in leaderboard(runs)._repr_html_()


def test_spread_lines_group_runs_and_skip_runs_without_a_judge():
    facts: list[tuple[str, dict[str, Any]]] = [
        ("r1", {"g": {"served": [{"model": "m1", "fingerprint": None, "answers": 3}]}}),
        ("r2", {}),  # no judge facts for g: left out
        ("r3", {"g": {"served": [{"model": "m2", "fingerprint": None, "answers": 3}]}}),
        ("r4", {"g": {"served": [{"model": "m3", "fingerprint": None, "answers": 3}]}}),
        ("r5", {"g": {"served": [{"model": "m1", "fingerprint": None, "answers": 3}]}}),
    ]
    assert spread_lines(["g"], facts) == ["g: judged by m1 in r1, r5; m2 in r3 and m3 in r4"]
    assert spread_lines(["g"], [facts[0], facts[4]]) == []
    assert spread_lines(["g"], [facts[0], facts[1]]) == []


def test_jupyter_shows_the_view_and_chromium_runs_no_name_in_it(tmp_path, browser):
    from IPython.core.formatters import DisplayFormatter

    board = leaderboard(_runs(tmp_path), by="topic")
    formats, _ = DisplayFormatter().format(board)
    assert formats["text/html"] == board._repr_html_()
    assert formats["text/plain"] == repr(board)
    path = tmp_path / "view.html"
    path.write_text(
        f"<!doctype html><meta charset=utf-8><body>{formats['text/html']}</body>",
        encoding="utf-8",
    )
    page, problems = open_page(browser, path)
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 0
    whole = board.board("s")
    rows = page.locator("table").first.locator("tbody tr")
    assert rows.count() == len(whole.runs)
    assert [rows.nth(i).locator("td").nth(2).inner_text() for i in range(rows.count())] == [
        r.run for r in whole.runs
    ]
    assert PAYLOAD in page.inner_text("body")  # the slice named with markup, shown as text
    page.close()
    assert not problems, problems


def test_a_tracker_gets_the_board_its_page_and_the_runs_and_its_failure_exits_3(
    tmp_path, monkeypatch, capsys
):
    from gradewire.cli import _eval_cli

    given = []

    class Tracker:
        def __init__(self, fail: bool) -> None:
            self.fail = fail

        def log_leaderboard(self, board, html, runs):
            given.append((board, html, runs))
            if self.fail:
                raise ConnectionError("tracker down")
            return ["logged"]

    folders = [str(tmp_path / name) for name in ("top", "twin", PAYLOAD.replace("/", "_"))]
    _runs(tmp_path)
    for fail, code in ((False, 0), (True, 3)):
        monkeypatch.setattr(
            _eval_cli, "sinks_for", lambda names, folder, fail=fail: ([Tracker(fail)], [])
        )
        assert main(["leaderboard", *folders, "--sink", "wandb"]) == code
        board, html, runs = given[-1]
        assert [r.folder for r in runs] == [Path(f) for f in folders]
        assert board.runs == ("top", "twin", PAYLOAD.replace("/", "_"))
        assert html.startswith("<!doctype html>")
    captured = capsys.readouterr()
    assert "logged" in captured.out
    assert "logging the leaderboard failed: wandb (ConnectionError: tracker down)" in captured.err
