"""notebooks/compare_runs.ipynb on a fresh kernel: plots drawn, the interval excludes zero."""

from __future__ import annotations

import re

from support.notebooks import NOTEBOOKS, execute, outputs


def test_compare_notebook_shows_tables_plots_and_the_paired_interval(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    notebook = execute(NOTEBOOKS[0].parent / "compare_runs.ipynb", tmp_path)
    assert len(outputs(notebook, "image/png")) == 2  # the distributions and the intervals
    html = "\n".join(outputs(notebook, "text/html"))
    assert "<script>alert(1)</script>" not in html  # the untrusted completions stay text
    assert "120 rows × " in html  # the scored samples: a preview, head and tail
    printed = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    match = re.search(
        r"interval \[([+-][\d.]+), ([+-][\d.]+)\] over 120 pairs in 12 topics", printed
    )
    assert match, printed
    low, high = map(float, match.groups())
    assert 0 < low < 0.125 < high
    assert (tmp_path / "runs" / "model_b" / "report.html").exists()
