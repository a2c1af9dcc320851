"""The notebook views in headless Chromium: they draw, no untrusted text runs, sizes stay small.

Each view is put in a page the way Jupyter puts an output in its page (the HTML as is);
screenshots go to ``$GRADEWIRE_SCREENSHOTS`` when it is set.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gradewire import Histogram, Table
from gradewire.eval import compare_runs
from gradewire.sinks import MemorySink
from support.browser_pages import PAYLOAD, open_page
from support.eval_helpers import make_run


def _views(folder: Path) -> dict[str, str]:
    n = 10_000
    topics = [PAYLOAD if i % 5 == 0 else f"topic {i % 5}" for i in range(n)]
    completions = [PAYLOAD if i % 500 == 7 else f"answer number {i}" for i in range(n)]
    a = make_run(
        folder / "a",
        {
            "correct": [float(i % 3 == 0) for i in range(n)],
            PAYLOAD: [(i * 37 % 101) / 100 for i in range(n)],
        },
        topics=topics,
        completions=completions,
    )
    b = make_run(
        folder / "b",
        {
            "correct": [float(i % 2 == 0) for i in range(n)],
            PAYLOAD: [(i * 37 % 101) / 100 for i in range(n)],
        },
        topics=topics,
        completions=completions,
    )
    sink = MemorySink()
    for step in range(200):
        sink.log(
            {
                "correct/score/mean": 0.3 + step / 400,
                f"{PAYLOAD}/score/mean": 0.6 - step / 1000,
                "score/scored_samples": a.tables()["correct/score/scored_samples"]
                if step == 199
                else Table().add_column("x", [1]),
            },
            step,
        )
    return {
        "table": a.tables()["correct/score/scored_samples"]._repr_html_(),
        "run": a._repr_html_(),
        "comparison": compare_runs(a, b, by="topic")._repr_html_(),
        "histogram": Histogram.of([(i * 37 % 101) / 100 for i in range(n)])._repr_html_(),
        "steps": sink._repr_html_(),
    }


@pytest.fixture(scope="module")
def views(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _views(tmp_path_factory.mktemp("views"))


@pytest.mark.parametrize("name", ["table", "run", "comparison", "histogram", "steps"])
def test_a_view_draws_in_chromium_and_runs_no_untrusted_text(browser, views, name, tmp_path):
    html = views[name]
    assert len(html.encode()) < 200_000  # 10,000 samples or rows behind each
    path = tmp_path / f"{name}.html"
    path.write_text(f"<!doctype html><meta charset=utf-8><body>{html}</body>", encoding="utf-8")
    page, problems = open_page(browser, path)
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 0
    if name != "table":
        svg = page.locator("svg").first
        box = svg.bounding_box()
        assert box is not None
        assert box["width"] > 100
    if name in ("run", "histogram"):
        assert page.locator("svg rect.bar").count() >= 2
    if name == "comparison":
        assert page.locator("svg line.ci").count() == 2
        assert "B is better than A on correct" in page.inner_text("body")
    if name == "steps":
        assert page.locator("svg polyline.series").count() == 2
    if name == "table":
        assert page.locator("tbody tr").count() == 11
        assert "10,000 rows × 5 columns" in page.inner_text("body")
    assert PAYLOAD[:20] in page.inner_text("body") or name in ("histogram", "table")
    shots = os.environ.get("GRADEWIRE_SCREENSHOTS")
    page.screenshot(path=str(Path(shots or tmp_path) / f"notebook-{name}.png"), full_page=True)
    page.close()
    assert not problems, problems
