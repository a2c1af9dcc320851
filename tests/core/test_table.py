from __future__ import annotations

import copy
import datetime
import decimal
import enum
import json
import math
import pickle
import re
import sys
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradewire import InvalidInputError, InvalidTypeError, MissingDependencyError, Table
from gradewire.core._table import Cell


def _scores() -> Table:
    return Table().add_column("Category", ["A", "B", "C"]).add_column("Score", [0.9, 0.7, 0.85])


# --- building -------------------------------------------------------------------------------


def test_reference_example_column_wise() -> None:
    table = _scores()
    assert table.headers == ["Category", "Score"]
    assert table.rows == [["A", 0.9], ["B", 0.7], ["C", 0.85]]
    assert len(table) == 3


def test_reference_example_row_wise() -> None:
    table = Table(initial_headers=["Category", "Score", "Reason"])
    table.add_row(["A", 0.9, "Good"])
    assert table.headers == ["Category", "Score", "Reason"]
    assert table.rows == [["A", 0.9, "Good"]]
    assert len(table) == 1


def test_add_column_and_add_row_return_the_same_table() -> None:
    table = Table()
    assert table.add_column("A", [1, 2]) is table
    assert table.add_row([3]) is table
    assert table.add_row({"A": 4}).add_column("B", ["w", "x", "y", "z"]) is table
    assert table.rows == [[1, "w"], [2, "x"], [3, "y"], [4, "z"]]


def test_chaining_keeps_the_subclass() -> None:
    class MyTable(Table):
        pass

    table = MyTable().add_column("A", [1]).add_row([2])
    assert type(table) is MyTable
    assert type(MyTable.from_dict(table.to_dict())) is MyTable
    assert repr(table) == "MyTable(headers=['A'], rows=2)"


def test_empty_table() -> None:
    table = Table()
    assert table.headers == []
    assert table.rows == []
    assert len(table) == 0
    assert table.to_records() == []
    assert table.to_dict() == {"columns": [], "data": []}
    assert repr(table) == "Table(headers=[], rows=0)"
    assert Table(initial_headers=[]) == table


def test_headers_only_table_has_no_rows() -> None:
    table = Table(initial_headers=("A", "B"))
    assert table.headers == ["A", "B"]
    assert len(table) == 0
    assert table.column("A") == []


def test_initial_headers_are_copied() -> None:
    headers = ["A", "B"]
    table = Table(initial_headers=headers)
    headers.append("C")
    assert table.headers == ["A", "B"]


def test_empty_string_header_is_allowed() -> None:
    table = Table().add_column("", [1]).add_column(" ", [2])
    assert table.headers == ["", " "]
    assert table.column("") == [1]


def test_duplicate_initial_header_is_rejected() -> None:
    with pytest.raises(InvalidInputError, match="duplicate header 'B'"):
        Table(initial_headers=["A", "B", "B"])


def test_duplicate_column_is_rejected_and_table_unchanged() -> None:
    table = _scores()
    with pytest.raises(InvalidInputError, match="duplicate header 'Score'"):
        table.add_column("Score", [1, 2, 3])
    assert table == _scores()


@pytest.mark.parametrize("bad", [1, None, b"A", ("A",)])
def test_non_str_header_is_a_type_error(bad: object) -> None:
    with pytest.raises(InvalidTypeError, match="header names must be str"):
        Table(initial_headers=["ok", bad])  # type: ignore[list-item]
    with pytest.raises(InvalidTypeError, match="header names must be str"):
        Table().add_column(bad, [1])  # type: ignore[arg-type]


def test_initial_headers_as_a_single_str_is_a_type_error() -> None:
    with pytest.raises(InvalidTypeError, match="initial_headers must be a list"):
        Table(initial_headers="Score")


def test_header_subclass_becomes_plain_str() -> None:
    class Name(str):
        pass

    table = Table(initial_headers=[Name("A")]).add_column(Name("B"), [])
    assert [type(h) for h in table.headers] == [str, str]


def test_column_length_mismatch_message() -> None:
    with pytest.raises(InvalidInputError) as info:
        _scores().add_column("Reason", ["x", "y"])
    assert str(info.value) == (
        "column 'Reason' has 2 values but the table has 3 rows; pass one value per row"
    )


def test_column_longer_than_row_count_is_rejected() -> None:
    with pytest.raises(InvalidInputError, match="has 4 values but the table has 3 rows"):
        _scores().add_column("Reason", ["w", "x", "y", "z"])


def test_column_with_values_on_headers_only_table_is_a_mismatch() -> None:
    table = Table(initial_headers=["A"])
    with pytest.raises(InvalidInputError) as info:
        table.add_column("B", [1, 2])
    message = str(info.value)
    assert "has 2 values but the table has 0 rows" in message
    assert "no rows yet" in message
    assert table.headers == ["A"]


def test_empty_column_on_headers_only_table_is_fine() -> None:
    table = Table(initial_headers=["A"]).add_column("B", [])
    assert table.headers == ["A", "B"]
    table.add_row([1, 2])
    assert table.rows == [[1, 2]]


def test_empty_first_column_sets_zero_rows() -> None:
    table = Table().add_column("A", [])
    assert len(table) == 0
    with pytest.raises(InvalidInputError, match="has 1 values but the table has 0 rows"):
        table.add_column("B", [1])
    assert table.add_row([1]).rows == [[1]]


def test_column_values_are_copied() -> None:
    values: list[Cell] = [1, 2]
    table = Table().add_column("A", values)
    values.append(3)
    values[0] = 99
    assert table.column("A") == [1, 2]


def test_add_column_accepts_tuples_generators_and_numpy_arrays() -> None:
    table = (
        Table()
        .add_column("tuple", (1, 2))
        .add_column("gen", (x * 2 for x in range(2)))
        .add_column("np", np.array([0.5, 1.5]))
    )
    assert table.rows == [[1, 0, 0.5], [2, 2, 1.5]]
    assert type(table.column("np")[0]) is float


@pytest.mark.parametrize("values", ["abc", b"ab", {"a": 1}, {1, 2}, 3, None])
def test_add_column_rejects_non_sequence_values(values: object) -> None:
    with pytest.raises(InvalidTypeError, match="values must be a list"):
        Table().add_column("A", values)  # type: ignore[arg-type]


def test_failed_add_column_leaves_table_unchanged() -> None:
    table = _scores()
    with pytest.raises(InvalidTypeError):
        table.add_column("Extra", [1, object(), 3])
    assert table == _scores()
    first = Table()
    with pytest.raises(InvalidTypeError):
        first.add_column("A", [1, [2]])
    assert first == Table()


def test_add_row_length_mismatch_message() -> None:
    table = Table(initial_headers=["A", "B"])
    with pytest.raises(InvalidInputError) as info:
        table.add_row([1])
    assert str(info.value) == (
        "row has 1 values but the table has 2 columns ['A', 'B']; pass one value per column"
    )
    with pytest.raises(InvalidInputError, match="row has 3 values"):
        table.add_row([1, 2, 3])
    assert len(table) == 0


def test_add_row_without_headers() -> None:
    with pytest.raises(InvalidInputError, match=r"no headers; pass initial_headers=\[\.\.\.\]"):
        Table().add_row([1])
    with pytest.raises(InvalidInputError, match="add_column"):
        Table().add_row({})


def test_add_row_rejects_a_bare_str() -> None:
    table = Table(initial_headers=["A", "B"])
    with pytest.raises(InvalidTypeError, match="a row must be a list"):
        table.add_row("ab")
    with pytest.raises(InvalidTypeError, match="a row must be a list"):
        table.add_row(7)  # type: ignore[arg-type]
    assert len(table) == 0


def test_add_row_mapping_in_any_order() -> None:
    table = Table(initial_headers=["A", "B", "C"])
    table.add_row({"C": 3, "A": 1, "B": 2})
    assert table.rows == [[1, 2, 3]]


def test_add_row_mapping_lists_missing_and_extra_keys() -> None:
    table = Table(initial_headers=["A", "B", "C"])
    with pytest.raises(InvalidInputError) as info:
        table.add_row({"A": 1, "D": 4, "E": 5})
    message = str(info.value)
    assert "missing: ['B', 'C']" in message
    assert "unexpected: ['D', 'E']" in message
    assert "['A', 'B', 'C']" in message
    with pytest.raises(InvalidInputError, match=r"missing: \[\], unexpected: \['D'\]"):
        table.add_row({"A": 1, "B": 2, "C": 3, "D": 4})
    assert len(table) == 0


def test_row_values_are_copied() -> None:
    row: list[Cell] = [1, "x"]
    mapping: dict[str, Cell] = {"A": 2, "B": "y"}
    table = Table(initial_headers=["A", "B"]).add_row(row).add_row(mapping)
    row[0] = 99
    mapping["A"] = 99
    assert table.rows == [[1, "x"], [2, "y"]]


# --- cells ----------------------------------------------------------------------------------


def test_allowed_cells_keep_their_exact_types() -> None:
    values: list[Cell] = ["s", "", 3, -4, 1.5, True, False, None]
    table = Table().add_column("A", values)
    assert table.column("A") == values
    assert [type(v) for v in table.column("A")] == [type(v) for v in values]


def test_nan_and_inf_are_allowed() -> None:
    table = Table().add_column("A", [math.nan, math.inf, -math.inf])
    nan, inf, minus_inf = table.column("A")
    assert isinstance(nan, float)
    assert math.isnan(nan)
    assert inf == math.inf
    assert minus_inf == -math.inf


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.float32(0.5), 0.5),
        (np.float64(0.25), 0.25),
        (np.float16(2.0), 2.0),
        (np.int64(7), 7),
        (np.int8(-3), -3),
        (np.uint16(9), 9),
        (np.bool_(True), True),
        (np.bool_(False), False),
        (np.str_("text"), "text"),
    ],
)
def test_numpy_scalars_become_python_values(value: object, expected: Cell) -> None:
    table = Table().add_column("A", [value])
    assert table.rows == [[expected]]
    assert type(table.rows[0][0]) is type(expected)
    row_table = Table(initial_headers=["A"]).add_row([value])
    assert type(row_table.rows[0][0]) is type(expected)


def test_numpy_nan_becomes_float_nan() -> None:
    (cell,) = Table().add_column("A", [np.float32("nan")]).column("A")
    assert type(cell) is float
    assert math.isnan(cell)


def test_builtin_subclasses_become_exact_builtins() -> None:
    class Level(enum.IntEnum):
        HIGH = 3

    class Tag(str, enum.Enum):
        GOOD = "good"

    class MyFloat(float):
        pass

    table = Table().add_column("A", [Level.HIGH, Tag.GOOD, MyFloat(1.5)])
    assert table.column("A") == [3, "good", 1.5]
    assert [type(v) for v in table.column("A")] == [int, str, float]


@pytest.mark.parametrize(
    ("value", "type_name"),
    [
        (b"bytes", "bytes"),
        ([1, 2], "list"),
        ({"a": 1}, "dict"),
        ((1,), "tuple"),
        (decimal.Decimal("1.5"), "decimal.Decimal"),
        (1 + 2j, "complex"),
        (np.complex64(1 + 2j), "numpy.complex64"),
        (np.datetime64("2024-01-01"), "numpy.datetime64"),
        (np.array(1.5), "numpy.ndarray"),
        (datetime.date(2024, 1, 1), "datetime.date"),
        (object(), "object"),
    ],
)
def test_unsupported_cell_types_are_rejected(value: object, type_name: str) -> None:
    with pytest.raises(InvalidTypeError) as info:
        Table().add_column("Score", [1, value])
    message = str(info.value)
    assert "column 'Score'" in message
    assert f"type {type_name};" in message
    assert "str(value)" in message
    assert "json.dumps(value)" in message


def test_unsupported_cell_in_a_row_names_its_column() -> None:
    table = Table(initial_headers=["A", "B"])
    with pytest.raises(InvalidTypeError, match="column 'B' got a value of type set"):
        table.add_row([1, {2}])
    with pytest.raises(InvalidTypeError, match="column 'A' got a value of type list"):
        table.add_row({"B": 1, "A": []})
    assert len(table) == 0


def test_invalid_errors_are_standard_exceptions() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        Table(initial_headers=["A", "A"])
    with pytest.raises(TypeError, match="cells must be"):
        Table().add_column("A", [object()])


# --- reading --------------------------------------------------------------------------------


def test_headers_and_rows_are_copies() -> None:
    table = _scores()
    table.headers.append("X")
    table.rows[0].append("X")
    table.rows.append(["X", 0.0])
    table.column("Score")[0] = 0.0
    assert table == _scores()


def test_column_by_name() -> None:
    assert _scores().column("Score") == [0.9, 0.7, 0.85]
    assert _scores().column("Category") == ["A", "B", "C"]


def test_unknown_column_lists_headers() -> None:
    with pytest.raises(InvalidInputError) as info:
        _scores().column("score")
    assert str(info.value) == "no column named 'score'; the headers are ['Category', 'Score']"


def test_to_records() -> None:
    assert _scores().to_records() == [
        {"Category": "A", "Score": 0.9},
        {"Category": "B", "Score": 0.7},
        {"Category": "C", "Score": 0.85},
    ]


def test_repr() -> None:
    table = Table().add_column("A", [1, 2, 3]).add_column("B", [4, 5, 6])
    assert repr(table) == "Table(headers=['A', 'B'], rows=3)"


# --- dict round trip ------------------------------------------------------------------------


def test_to_dict() -> None:
    assert _scores().to_dict() == {
        "columns": ["Category", "Score"],
        "data": [["A", 0.9], ["B", 0.7], ["C", 0.85]],
    }


def test_to_dict_is_a_copy() -> None:
    table = _scores()
    data = table.to_dict()
    data["columns"].append("X")
    data["data"][0][0] = "Z"
    assert table == _scores()


def test_from_dict_round_trip_including_json() -> None:
    table = Table(initial_headers=["t", "i", "f", "b", "n"])
    table.add_row(["x", 1, 1.0, True, None]).add_row(["<&>", -2, math.nan, False, None])
    assert Table.from_dict(table.to_dict()) == table
    assert Table.from_dict(json.loads(json.dumps(table.to_dict()))) == table


def test_from_dict_accepts_headers_without_rows() -> None:
    table = Table.from_dict({"columns": ["A", "B"], "data": []})
    assert table.headers == ["A", "B"]
    assert len(table) == 0


@pytest.mark.parametrize("bad", [[], "columns", None, 3])
def test_from_dict_rejects_non_mappings(bad: object) -> None:
    with pytest.raises(InvalidTypeError, match="from_dict expects a dict like"):
        Table.from_dict(bad)  # type: ignore[arg-type]


def test_from_dict_rejects_missing_and_unexpected_keys() -> None:
    with pytest.raises(InvalidInputError, match=r"missing: \['data'\], unexpected: \[\]"):
        Table.from_dict({"columns": ["A"]})
    with pytest.raises(InvalidInputError, match=r"missing: \[\], unexpected: \['index'\]"):
        Table.from_dict({"columns": ["A"], "data": [], "index": []})
    with pytest.raises(InvalidInputError, match=r"missing: \['columns', 'data'\]"):
        Table.from_dict({})


@pytest.mark.parametrize(
    ("data", "error", "pattern"),
    [
        ({"columns": "A", "data": []}, InvalidTypeError, "'columns' must be a list"),
        ({"columns": [1], "data": []}, InvalidTypeError, "header names must be str"),
        ({"columns": ["A", "A"], "data": []}, InvalidInputError, "duplicate header 'A'"),
        ({"columns": ["A"], "data": "x"}, InvalidTypeError, "'data' must be a list"),
        ({"columns": ["A"], "data": [[1], "x"]}, InvalidTypeError, r"data\[1\]: a row must be"),
        ({"columns": ["A"], "data": [{"A": 1}]}, InvalidTypeError, r"data\[0\]: a row must be"),
        ({"columns": ["A"], "data": [[1], [1, 2]]}, InvalidInputError, r"data\[1\]: row has 2"),
        ({"columns": ["A"], "data": [[{}]]}, InvalidTypeError, r"data\[0\]: column 'A' got"),
        ({"columns": [], "data": [[]]}, InvalidInputError, r"data\[0\]: the table has no"),
    ],
)
def test_from_dict_validates_the_shape(
    data: dict[str, object], error: type[Exception], pattern: str
) -> None:
    with pytest.raises(error, match=pattern) as info:
        Table.from_dict(data)
    assert type(info.value) is error


# --- equality and copies --------------------------------------------------------------------


def test_equality() -> None:
    assert _scores() == _scores()
    assert _scores() != _scores().add_row(["D", 0.1])
    assert Table(initial_headers=["A", "B"]) != Table(initial_headers=["B", "A"])
    assert Table().add_column("A", [1]) != Table().add_column("A", [2])
    assert Table().add_column("A", []) != Table()


def test_equality_with_nan_cells() -> None:
    table = Table().add_column("A", [math.nan, 1.0])
    assert table == table
    assert table == Table().add_column("A", [float("nan"), 1.0])
    assert table == copy.deepcopy(table)
    assert table != Table().add_column("A", [math.nan, math.nan])


def test_equality_is_type_exact() -> None:
    assert Table().add_column("A", [1]) != Table().add_column("A", [1.0])
    assert Table().add_column("A", [1]) != Table().add_column("A", [True])
    assert Table().add_column("A", [0]) != Table().add_column("A", [None])


def test_comparison_with_other_types() -> None:
    assert _scores() != _scores().to_dict()
    assert _scores() != [["A", 0.9]]
    assert _scores().__eq__(1) is NotImplemented


def test_table_is_not_hashable() -> None:
    assert Table.__hash__ is None
    with pytest.raises(TypeError):
        hash(Table())
    with pytest.raises(TypeError):
        _ = {Table()}


def test_copy_is_independent() -> None:
    table = _scores()
    for clone in (copy.copy(table), copy.deepcopy(table)):
        assert clone == table
        clone.add_row(["D", 0.5]).add_column("X", [1, 2, 3, 4])
        assert table == _scores()


def test_pickle_round_trip() -> None:
    table = _scores().add_row(["D", math.nan])
    assert pickle.loads(pickle.dumps(table)) == table


# --- pandas ---------------------------------------------------------------------------------


def test_to_pandas() -> None:
    frame = _scores().to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["Category", "Score"]
    assert frame["Category"].tolist() == ["A", "B", "C"]
    assert frame["Score"].tolist() == [0.9, 0.7, 0.85]


def test_to_pandas_headers_only_and_empty() -> None:
    frame = Table(initial_headers=["A", "B"]).to_pandas()
    assert list(frame.columns) == ["A", "B"]
    assert len(frame) == 0
    assert Table().to_pandas().shape == (0, 0)


def test_to_pandas_without_pandas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingDependencyError) as info:
        _scores().to_pandas()
    error = info.value
    assert isinstance(error, ImportError)
    assert error.package == "pandas"
    assert error.extra == "pandas"
    assert "convert a Table to a DataFrame" in str(error)
    assert "pip install 'gradewire[pandas]'" in str(error)


# --- HTML -----------------------------------------------------------------------------------

_TAG_PREFIXES = tuple(
    f"<{slash}{tag}{end}"
    for slash in ("", "/")
    for tag in ("table", "thead", "tbody", "tr", "th", "td")
    for end in (">", " ")
)


def _assert_only_known_tags(out: str) -> None:
    for match in re.finditer("<", out):
        assert out.startswith(_TAG_PREFIXES, match.start()), out[match.start() : match.start() + 20]


def _cells(out: str, tag: str = "td") -> list[str]:
    return re.findall(rf"<{tag} [^>]*>(.*?)</{tag}>", out, flags=re.DOTALL)


def test_html_structure_and_style() -> None:
    out = _scores().to_html()
    assert out.startswith("<table style=")
    assert out.endswith("</table>")
    assert out.count("<thead>") == out.count("</thead>") == 1
    assert out.count("<tbody>") == out.count("</tbody>") == 1
    assert out.count("<tr>") == 4
    assert _cells(out, "th") == ["Category", "Score"]
    assert _cells(out) == ["A", "0.9", "B", "0.7", "C", "0.85"]
    for fragment in ("border", "background", "white-space: pre-wrap", "text-align: left"):
        assert fragment in out
    _assert_only_known_tags(out)


def test_html_aligns_numbers_right_and_text_left() -> None:
    out = Table(initial_headers=["t", "i", "f", "b", "n"]).add_row(["x", 1, 2.5, True, None])
    aligns = re.findall(r"<td [^>]*text-align: (\w+)", out.to_html())
    assert aligns == ["left", "right", "right", "left", "left"]


def test_html_cell_formatting() -> None:
    values: list[Cell] = [None, 0.123456789, 1e20, 12345678.0, math.nan, -math.inf, 42, True, False]
    out = Table().add_column("A", values).to_html()
    expected = ["", "0.123457", "1e+20", "1.23457e+07", "nan", "-inf", "42", "true", "false"]
    assert _cells(out) == expected


def test_html_escapes_script_in_cells_and_headers() -> None:
    evil = "<script>alert(1)</script>"
    out = Table().add_column(evil, [evil]).to_html()
    assert "<script" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert _cells(out, "th") == [_cells(out)[0]]
    _assert_only_known_tags(out)


def test_html_escapes_quotes_and_ampersands() -> None:
    text = "a \"quoted\" & 'single' &amp; <b>"
    out = Table().add_column(text, [text]).to_html()
    expected = "a &quot;quoted&quot; &amp; &#x27;single&#x27; &amp;amp; &lt;b&gt;"
    assert _cells(out, "th") == [expected]
    assert _cells(out) == [expected]


def test_html_keeps_newlines_for_pre_wrap() -> None:
    out = Table().add_column("A", ["line 1\nline 2"]).to_html()
    assert _cells(out) == ["line 1\nline 2"]


def test_html_max_cell_chars_cuts_long_cells_only() -> None:
    header = "a long header name"
    out = Table().add_column(header, ["abcdef", "abcd", "abc", 123456]).to_html(max_cell_chars=4)
    assert _cells(out) == ["abc…", "abcd", "abc", "123…"]
    assert _cells(out, "th") == [header]


def test_html_max_cell_chars_never_splits_an_entity() -> None:
    out = Table().add_column("A", ["&&&&", "<<<<<"]).to_html(max_cell_chars=3)
    assert _cells(out) == ["&amp;&amp;…", "&lt;&lt;…"]
    out = Table().add_column("A", ["<script>"]).to_html(max_cell_chars=1)
    assert _cells(out) == ["…"]


@pytest.mark.parametrize("bad", [0, -1])
def test_html_max_cell_chars_must_be_positive(bad: int) -> None:
    with pytest.raises(InvalidInputError, match="at least 1"):
        _scores().to_html(max_cell_chars=bad)


@pytest.mark.parametrize("bad", ["3", 2.0, True])
def test_html_max_cell_chars_must_be_an_int(bad: object) -> None:
    with pytest.raises(InvalidTypeError, match="max_cell_chars must be an int"):
        _scores().to_html(max_cell_chars=bad)  # type: ignore[arg-type]


def test_html_of_empty_table() -> None:
    for table in (Table(), Table(initial_headers=["A"])):
        out = table.to_html()
        assert "<tbody>" in out
        assert "<td" not in out
        _assert_only_known_tags(out)


def test_repr_html_of_a_short_table_is_the_whole_table() -> None:
    table = _scores().add_row(["<i>", None])
    # as Adaptive Harmony's _repr_html_ is its to_html_table; the size shows under a cut
    assert table._repr_html_() == table.to_html() == table.to_html_table()


# --- properties -----------------------------------------------------------------------------

_cell_values = st.one_of(
    st.text(max_size=20),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)


@st.composite
def _tables(draw: st.DrawFn, header_prefix: str = "") -> tuple[list[str], list[list[Cell]]]:
    headers = draw(st.lists(st.text(max_size=10), min_size=1, max_size=5, unique=True))
    width = len(headers)
    rows = draw(st.lists(st.lists(_cell_values, min_size=width, max_size=width), max_size=6))
    return [header_prefix + h for h in headers], rows


def _columns(headers: list[str], rows: list[list[Cell]]) -> Iterator[tuple[str, list[Cell]]]:
    for index, header in enumerate(headers):
        yield header, [row[index] for row in rows]


def _column_wise(headers: list[str], rows: list[list[Cell]]) -> Table:
    table = Table()
    for header, values in _columns(headers, rows):
        table.add_column(header, values)
    return table


@settings(deadline=None)
@given(_tables())
def test_column_wise_and_row_wise_building_agree(spec: tuple[list[str], list[list[Cell]]]) -> None:
    headers, rows = spec
    by_column = _column_wise(headers, rows)
    by_row = Table(initial_headers=headers)
    by_mapping = Table(initial_headers=headers)
    for row in rows:
        by_row.add_row(row)
        by_mapping.add_row(dict(reversed(list(zip(headers, row, strict=True)))))
    assert by_column == by_row
    assert by_column == by_mapping
    assert by_column.headers == headers
    assert len(by_column) == len(rows)
    for header, values in _columns(headers, rows):
        assert Table().add_column("c", by_column.column(header)) == Table().add_column("c", values)


@settings(deadline=None)
@given(_tables())
def test_dict_round_trip(spec: tuple[list[str], list[list[Cell]]]) -> None:
    table = _column_wise(*spec)
    assert Table.from_dict(table.to_dict()) == table
    assert Table.from_dict(json.loads(json.dumps(table.to_dict()))) == table
    assert copy.copy(table) == table


@settings(deadline=None)
@given(_tables(header_prefix="<script>"), st.none() | st.integers(min_value=1, max_value=30))
def test_html_never_contains_raw_markup(
    spec: tuple[list[str], list[list[Cell]]], max_cell_chars: int | None
) -> None:
    headers, rows = spec
    rows = [["<script>" + c if isinstance(c, str) else c for c in row] for row in rows]
    out = _column_wise(headers, rows).to_html(max_cell_chars=max_cell_chars)
    assert "<script" not in out.lower()
    _assert_only_known_tags(out)
    assert len(_cells(out, "th")) == len(headers)
    assert len(_cells(out)) == len(headers) * len(rows)


@settings(deadline=None)
@given(_tables(), st.integers(min_value=1, max_value=50))
def test_nothing_crashes(spec: tuple[list[str], list[list[Cell]]], max_cell_chars: int) -> None:
    table = _column_wise(*spec)
    repr(table)
    table.to_html()
    table.to_html(max_cell_chars=max_cell_chars)
    table._repr_html_()
    assert len(table.to_records()) == len(table)
    frame = table.to_pandas()
    assert list(frame.columns) == table.headers
    assert len(frame) == len(table)
