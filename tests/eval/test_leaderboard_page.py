"""The leaderboard page in headless Chromium: tiers coloured, ranks drawn, pairs in a matrix,
one board at a time, and a run name or slice that carries markup shown as text (issue 31)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gradewire.eval import leaderboard, render_leaderboard
from gradewire.eval.reporting._leaderboard_page import TIER_COLOURS
from support.browser_pages import PAYLOAD, open_page
from support.eval_helpers import make_run


def _board(tmp_path):
    rng = np.random.default_rng(7)
    n = 90
    topics = [["math", PAYLOAD][i % 2] for i in range(n)]
    top = rng.normal(1.0, 1.0, n)
    runs = [
        make_run(tmp_path / "top", {"s": list(top)}, topics=topics),
        make_run(tmp_path / "twin", {"s": list(top)}, topics=topics),
        make_run(tmp_path / "mid", {"s": list(rng.normal(0.0, 1.0, n))}, topics=topics),
        make_run(tmp_path / "low", {"s": list(rng.normal(-1.2, 1.0, n))}, topics=topics),
    ]
    runs[3] = replace(runs[3], name=PAYLOAD)
    return leaderboard(runs, by="topic")


def test_the_page_draws_tiers_ranks_and_the_matrix_and_runs_no_markup(tmp_path, browser):
    board = _board(tmp_path)
    html = render_leaderboard(board)
    assert PAYLOAD not in html
    path = tmp_path / "leaderboard.html"
    path.write_text(html, encoding="utf-8")
    page, problems = open_page(browser, path)
    page.wait_for_selector("body[data-ready='1']")
    whole = board.board("s")
    section = page.locator("section.board[data-board='0']")
    # The forest plot: one dot per run, in its tier's colour.
    dots = section.locator("svg.forest circle")
    assert dots.count() == 4
    fills = [dots.nth(i).get_attribute("fill") for i in range(4)]
    assert fills == [TIER_COLOURS[r.tier - 1] for r in whole.runs]
    assert len({r.tier for r in whole.runs}) >= 2
    # The rank intervals: one bar per run, as wide as the ranks it could hold.
    bars = section.locator("svg.ranks rect")
    widths = [float(bars.nth(i).get_attribute("width") or 0) for i in range(4)]
    assert widths == [24 * (r.rank_high - r.rank_low + 1) - 4 for r in whole.runs]
    # The matrix: every pair twice, dark where separable.
    separable = sum(p.separable for p in whole.pairs)
    assert section.locator("svg.matrix g.sep").count() == 2 * separable
    assert section.locator("svg.matrix g.tie").count() == 2 * (len(whole.pairs) - separable)
    # The run name and the slice value are text, never markup.
    assert PAYLOAD in section.locator("table").inner_text()
    assert page.evaluate("window.__pwned") is None
    # One board at a time: a slice of the payload's topic.
    options = page.locator("#gw-board option")
    labels = [options.nth(i).inner_text() for i in range(options.count())]
    (chosen,) = [i for i, label in enumerate(labels) if PAYLOAD in label]
    page.select_option("#gw-board", options.nth(chosen).get_attribute("value"))
    assert page.locator("section.board:visible").count() == 1
    assert PAYLOAD in page.locator("section.board:visible h2").inner_text()
    page.select_option("#gw-board", "")
    assert page.locator("section.board:visible").count() == 3
    assert page.evaluate("window.__pwned") is None
    assert problems == []
