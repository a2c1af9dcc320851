"""Every notebook in notebooks/ runs top to bottom on a fresh kernel, and shows what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.notebooks import NOTEBOOKS, execute, outputs

# Each notebook starts a kernel of its own: out of `make test-fast`.
pytestmark = pytest.mark.slow


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # Jupyter's own path migration notice would be an error under filterwarnings = error.
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    notebook = execute(path, tmp_path)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", output
    html = outputs(notebook, "text/html")
    assert html, "no rich output: tables should render as HTML"
    for page in html:
        assert "<script>" not in page


def test_explore_grades_shows_escaped_tables_and_merged_totals(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    notebook = execute(NOTEBOOKS[0].parent / "explore_grades.ipynb", tmp_path)
    html = "\n".join(outputs(notebook, "text/html"))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    text = outputs(notebook, "text/plain")
    # "About 1,000" for 2^10 is wrong but brief: 0.2; the greeting has no label, so only
    # brevity counts (renormalised): 1.0.
    assert "[1.0, 1.0, 0.2, 1.0]" in text
    assert "(6, 0.7333)" in text  # three steps of two samples, merged into one figure
    # The notebook views: a 10,000-row table as its head and tail, a run's summary with
    # histograms, a comparison's verdict and forest plot; two matplotlib figures.
    assert "10,000 rows × 3 columns" in html
    view_bytes, whole_bytes = map(int, re.findall(r"\((\d+), (\d+)\)", "\n".join(text))[0])
    assert view_bytes < 10_000 < 5_000_000 < whole_bytes
    assert "EvalRun a</b>: 60 samples" in html
    assert html.count('<svg class="hist"') >= 3  # two graders of the run, a Histogram
    assert "B is better than A on correct" in html
    assert '<svg class="forest"' in html
    assert '<svg class="lines"' in html  # the sink's means over steps
    assert "&lt;b&gt;not bold&lt;/b&gt;" in html
    assert len(outputs(notebook, "image/png")) == 2  # steps; a histogram beside a comparison
