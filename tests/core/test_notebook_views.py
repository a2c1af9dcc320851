"""The notebook views of the core's values: a Table like pandas shows one, a Histogram's bars.

Sizes are measured in bytes of HTML; every piece of untrusted text is escaped.
"""

from __future__ import annotations

import re
import sys

import pandas as pd
import pytest

from gradewire import Histogram, MissingDependencyError, Table

PAYLOAD = '<script>alert(1)</script><img src=x onerror="alert(2)">'


def _long(n: int, columns: int = 3) -> Table:
    table = Table(initial_headers=[f"c{j}" for j in range(columns)])
    for i in range(n):
        table.add_row([f"row {i} " + "text " * 10, *range(i, i + columns - 1)])
    return table


def _rows(view: str) -> list[str]:
    return re.findall(r"<tr>.*?</tr>", view, flags=re.S)


def test_a_10000_row_table_shows_head_and_tail_in_a_few_kilobytes():
    table = _long(10_000)
    view = table._repr_html_()
    assert len(view.encode()) < 8_000  # the whole table's HTML is over 4 MB
    assert len(table.to_html().encode()) > 4_000_000
    body = _rows(view.split("<tbody>")[1])
    assert len(body) == 11  # five, the ellipsis row, five
    assert "row 0 " in body[0]
    assert "row 4 " in body[4]
    assert 'class="gap"' in body[5]
    assert "row 5 " not in view
    assert "row 9995 " in body[6]
    assert "row 9999 " in body[10]
    assert "10,000 rows × 3 columns" in view
    # pandas' own notebook view keeps the same shape: 5 + 5 rows of a long frame.
    assert "10000 rows × 3 columns" in table.to_pandas()._repr_html_()


def test_a_table_of_60_rows_is_shown_whole_and_of_61_cut():
    assert len(_rows(_long(60)._repr_html_().split("<tbody>")[1])) == 60
    assert len(_rows(_long(61)._repr_html_().split("<tbody>")[1])) == 11


def test_a_wide_table_shows_its_first_and_last_columns():
    table = _long(3, columns=50)
    view = table._repr_html_()
    headers = re.findall(r"<th\b[^>]*>(.*?)</th>", view)
    assert headers == [*(f"c{j}" for j in range(5)), "…", *(f"c{j}" for j in range(45, 50))]
    assert "3 rows × 50 columns" in view
    assert repr(table) == (
        "Table(headers=['c0', 'c1', 'c2', 'c3', 'c4', ..., 'c45', 'c46', 'c47', 'c48', 'c49'] "
        "(50 columns), rows=3)"
    )
    assert len(repr(_long(10_000, columns=500))) < 200


def test_a_huge_cell_is_cut_in_the_view_and_whole_in_to_html():
    table = Table().add_column("Completion", ["x" * 1_000_000])
    assert len(table._repr_html_()) < 3_000
    assert "x" * 1_000_000 in table.to_html()


@pytest.mark.parametrize("where", ["header", "head", "tail", "cut"])
def test_untrusted_text_is_escaped_in_the_view(where):
    header = PAYLOAD if where == "header" else "Completion"
    table = Table(initial_headers=["Id", header])
    for i in range(100):
        text = "plain"
        if (where == "head" and i == 0) or (where == "tail" and i == 99):
            text = PAYLOAD
        if where == "cut" and i == 1:
            text = "&" * 299 + PAYLOAD  # the cut falls inside what would be an entity
        table.add_row([f"s{i}", text])
    view = table._repr_html_()
    assert "<script" not in view
    assert "<img" not in view
    if where != "cut":
        assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;" in view


def test_to_pandas_keeps_headers_order_and_values():
    table = Table(initial_headers=["Id", "Score", "Ok"]).add_rows(
        [["a", 0.5, True], ["b", None, False]]
    )
    frame = table.to_pandas()
    assert list(frame.columns) == ["Id", "Score", "Ok"]
    assert frame["Id"].tolist() == ["a", "b"]
    assert frame["Score"].iloc[0] == 0.5
    assert pd.isna(frame["Score"].iloc[1])


def test_to_pandas_without_pandas_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'gradewire\[pandas\]'"):
        Table().add_column("A", [1]).to_pandas()


def test_a_histogram_is_an_svg_bar_per_bin_with_its_outside_counts():
    h = Histogram.of([0.1, 0.2, 0.6, 0.7, 0.8, 2.0, -1.0, float("nan")], edges=[0, 0.25, 0.5, 1])
    view = h._repr_html_()
    bars = re.findall(r'<rect class="bar"[^>]*height="([\d.]+)"', view)
    assert len(bars) == 3
    heights = [float(b) for b in bars]
    assert heights[1] == 0
    assert heights[2] > heights[0] > 0
    assert heights[0] / heights[2] == pytest.approx(2 / 3, abs=0.01)  # drawn to 0.1 px
    assert "<title>[0.5, 1]: 3</title>" in view
    assert "8 values; 1 below, 1 above, 1 NaN" in view
    assert len(view) < 3_000 + 200 * len(bars)
    assert repr(h).startswith("Histogram(3 bins")
