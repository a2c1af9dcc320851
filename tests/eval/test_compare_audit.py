"""The simulation audit of compare's paired methods, a few cells of it (bench has the grid).

`bench/stats_audit_paired.py` draws pairs of runs from a known truth over the whole grid
(docs/methods/audit-paired.md); here the cells where the methods compare used before
failed worst are drawn again, fewer times: no point interval at rare discordance, the
paired bootstrap's type I error with many zeros at small n, the cluster bootstrap's with
3 clusters. The bounds allow for the simulation's own error at 200 draws (about 2.5
standard errors beyond the audit's floor of 93% and ceiling of 6.5%).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[2] / "bench" / "stats_audit_paired.py"
REPS = 200


def _audit_module():
    spec = importlib.util.spec_from_file_location("stats_audit_paired", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: its dataclasses look their module up by name.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


AUDIT = _audit_module()
CELLS = AUDIT.grid(sizes=(5, 10), clusters=(3, 5))


@pytest.mark.parametrize(
    ("case", "n"),
    [
        ("0/1 rare discordance, +2 points", "10"),
        ("0/1 near 0.5, +10 points", "5"),
        ("0/1 near 0.5, no difference", "10"),
        ("bounded, 60% zeros, no difference", "10"),
        ("bounded, 60% zeros in A, 45% in B", "5"),
        ("no difference", "3 clusters"),
        ("no difference, unlike clusters", "5 clusters"),
    ],
)
def test_the_cell_covers_and_holds_its_level(case, n):
    matching = [cell for cell in CELLS if (cell.case, cell.n) == (case, n)]
    assert matching, f"no cell {case!r} at {n}"
    for cell in matching:
        figures = AUDIT.run_cell(cell, REPS, seed=7)
        assert figures.agree
        assert figures.coverage >= 0.89, (cell.family, figures)
        if figures.type_i is not None:
            assert figures.type_i <= 0.10, (cell.family, figures)


def test_the_bench_writes_the_table_a_row_per_cell(tmp_path):
    cells = AUDIT.grid(sizes=(5,), clusters=(3,))
    rows = AUDIT.audit(cells, reps=20)
    text = AUDIT.markdown(rows, 20, 0.0)
    table = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(table) == 1 + len(cells)
    assert "mid-p McNemar test, Tango score interval" in text
    assert "cluster-robust t (CR2, Bell–McCaffrey degrees of freedom)" in text
