from __future__ import annotations

import copy
import dataclasses
import logging
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradewire import InvalidInputError, InvalidTypeError, Table
from gradewire.core._table import Cell
from gradewire.sinks._table_policy import PolicyState, TablePolicy, cut_text, spread_positions


def _scored(scores: list[float | None]) -> Table:
    return (
        Table()
        .add_column("Id", list(range(len(scores))))
        .add_column("Text", [f"row {i}" for i in range(len(scores))])
        .add_column("Score", scores)
    )


def _apply(policy: TablePolicy, table: Table, key: str = "t", step: int = 0) -> Table:
    out = PolicyState(policy).apply({key: table}, step)[key]
    assert isinstance(out, Table)
    return out


# --- the policy itself ------------------------------------------------------------------


def test_defaults() -> None:
    policy = TablePolicy()
    assert (policy.max_rows, policy.sort_by, policy.max_cell_chars) == (100, "Score", 2000)
    assert (policy.table_every, policy.metrics_every) == (1, 1)


def test_policy_is_frozen_and_keyword_only() -> None:
    policy = TablePolicy(max_rows=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.max_rows = 6  # type: ignore[misc]
    with pytest.raises(TypeError):
        TablePolicy(5)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"max_rows": 0}, InvalidInputError),
        ({"max_rows": 2.5}, InvalidTypeError),
        ({"max_rows": True}, InvalidTypeError),
        ({"max_cell_chars": 0}, InvalidInputError),
        ({"table_every": 0}, InvalidInputError),
        ({"table_every": None}, InvalidTypeError),
        ({"metrics_every": -2}, InvalidInputError),
        ({"sort_by": 3}, InvalidTypeError),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error, match="TablePolicy"):
        TablePolicy(**kwargs)  # type: ignore[arg-type]


def test_state_needs_a_policy() -> None:
    with pytest.raises(InvalidTypeError, match="TablePolicy"):
        PolicyState({"max_rows": 3})  # type: ignore[arg-type]


# --- cadence ----------------------------------------------------------------------------


def test_cadence_uses_step_modulo_every() -> None:
    state = PolicyState(TablePolicy(table_every=3, metrics_every=2))
    logs = {"m": 1.0, "t": _scored([0.5])}
    kept = {step: sorted(state.apply(logs, step)) for step in range(7)}
    assert kept == {
        0: ["m", "t"],
        1: [],
        2: ["m"],
        3: ["t"],
        4: ["m"],
        5: [],
        6: ["m", "t"],
    }


# --- rows -------------------------------------------------------------------------------


def test_short_table_is_kept_whole_as_a_new_object() -> None:
    table = _scored([0.1, 0.9, 0.5])
    out = _apply(TablePolicy(max_rows=3), table)
    assert out == table
    assert out is not table


def test_sampling_by_score_keeps_best_worst_and_an_even_spread_in_original_order() -> None:
    scores = [3.0, 9.0, 0.0, 7.0, 1.0, 5.0, 8.0, 2.0, 6.0, 4.0]
    out = _apply(TablePolicy(max_rows=4), _scored(list(scores)))
    # Ranks 0, 3, 6, 9 of the scores sorted high to low are 9, 6, 3, 0.
    assert sorted(out.column("Score"), reverse=True) == [9.0, 6.0, 3.0, 0.0]
    ids = out.column("Id")
    assert ids == sorted(ids)  # original order
    assert [scores[i] for i in ids] == out.column("Score")  # type: ignore[index]


def test_sampling_is_deterministic() -> None:
    table = _scored([float((i * 7) % 13) for i in range(40)])
    policy = TablePolicy(max_rows=7)
    assert _apply(policy, table) == _apply(policy, table)


def test_missing_and_nan_scores_sort_last_but_the_worst_number_is_kept() -> None:
    scores: list[float | None] = [None, 0.5, math.nan, 0.9, None, 0.1, 0.7, None]
    out = _apply(TablePolicy(max_rows=3), _scored(scores))
    kept = out.column("Score")
    assert len(kept) == 3
    assert 0.9 in kept
    assert 0.1 in kept


def test_max_rows_one_keeps_the_best_row() -> None:
    out = _apply(TablePolicy(max_rows=1), _scored([0.2, 0.8, 0.5]))
    assert out.column("Score") == [0.8]


@pytest.mark.parametrize(
    "table",
    [
        Table().add_column("Id", list(range(10))),  # no Score column
        Table().add_column("Id", list(range(10))).add_column("Score", ["a"] * 10),  # not numbers
        Table().add_column("Id", list(range(10))).add_column("Score", [None] * 10),  # no value
    ],
)
def test_without_a_usable_sort_column_the_spread_follows_row_order(table: Table) -> None:
    out = _apply(TablePolicy(max_rows=4), table)
    assert out.column("Id") == [0, 3, 6, 9]


def test_sort_by_another_column_or_none() -> None:
    table = Table().add_column("Loss", [5.0, 1.0, 3.0, 4.0, 2.0]).add_column("Score", [1.0] * 5)
    assert sorted(_apply(TablePolicy(max_rows=2, sort_by="Loss"), table).column("Loss")) == [
        1.0,
        5.0,
    ]
    by_order = _apply(TablePolicy(max_rows=2, sort_by=None), table)
    assert by_order.column("Loss") == [5.0, 2.0]


def test_no_row_limit() -> None:
    table = _scored([float(i) for i in range(300)])
    assert len(_apply(TablePolicy(max_rows=None), table)) == 300
    assert len(_apply(TablePolicy(), table)) == 100


# --- cells ------------------------------------------------------------------------------


def test_long_cells_are_cut_with_a_visible_marker() -> None:
    table = Table().add_column("Text", ["x" * 5000, "short"]).add_column("N", [10**30, 2])
    out = _apply(TablePolicy(max_cell_chars=100), table)
    cut, short = out.column("Text")
    assert isinstance(cut, str)
    assert len(cut) <= 100
    assert cut.endswith(f"… [+{5000 - cut.index('…')} chars]")
    assert cut.startswith("x" * 80)
    assert short == "short"
    assert out.column("N") == [10**30, 2]  # only text is cut


def test_headers_are_never_cut() -> None:
    table = Table().add_column("H" * 50, ["y" * 50])
    out = _apply(TablePolicy(max_cell_chars=20), table)
    assert out.headers == ["H" * 50]


@pytest.mark.parametrize("limit", [1, 2, 5, 12, 13, 14, 20])
def test_cut_text_fits_even_tiny_limits(limit: int) -> None:
    text = "abcdefghij" * 10
    cut = cut_text(text, limit)
    assert len(cut) <= limit
    assert cut.endswith(("…", "chars]"))
    assert text.startswith(cut.split("…")[0])


def test_cut_text_uses_the_whole_budget_when_it_can() -> None:
    assert cut_text("z" * 1000, 50) == "z" * 36 + "… [+964 chars]"
    # Dropping one more character shortens the count by a digit: still exactly the limit.
    assert cut_text("z" * 1012, 25) == "z" * 10 + "… [+1002 chars]"
    for n in range(20, 1200, 7):
        assert len(cut_text("z" * n, 19)) == 19


# --- column types -----------------------------------------------------------------------


def test_ints_in_a_float_column_become_floats_and_bools_in_an_int_column_ints() -> None:
    state = PolicyState(TablePolicy())
    state.apply({"t": Table().add_column("F", [0.5]).add_column("I", [3])}, 0)
    out = state.apply({"t": Table().add_column("F", [2, True]).add_column("I", [True, 4])}, 1)
    table = out["t"]
    assert isinstance(table, Table)
    assert table.rows == [[2.0, 1], [1.0, 4]]
    assert [type(c) for c in table.column("F")] == [float, float]
    assert [type(c) for c in table.column("I")] == [int, int]


def test_a_float_in_an_int_column_widens_it_for_good(caplog: pytest.LogCaptureFixture) -> None:
    state = PolicyState(TablePolicy())
    with caplog.at_level(logging.INFO, logger="gradewire"):
        first = state.apply({"t": Table().add_column("N", [1, 2.5, 3])}, 0)["t"]
        later = state.apply({"t": Table().add_column("N", [4])}, 1)["t"]
    assert isinstance(first, Table)
    assert isinstance(later, Table)
    assert [type(c) for c in first.column("N")] == [float, float, float]
    assert first.column("N") == [1.0, 2.5, 3.0]
    assert later.column("N") == [4.0]
    assert type(later.column("N")[0]) is float
    assert sum("widen" in r.getMessage() or "floats" in r.getMessage() for r in caplog.records) == 1


def test_anything_goes_into_a_str_column_via_str() -> None:
    state = PolicyState(TablePolicy())
    state.apply({"t": Table().add_column("S", [None, "a"])}, 0)
    out = state.apply({"t": Table().add_column("S", [1, 2.5, True, None])}, 1)["t"]
    assert isinstance(out, Table)
    assert out.column("S") == ["1", "2.5", "True", None]


def test_uncoercible_values_become_none_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    state = PolicyState(TablePolicy())
    state.apply({"t": Table().add_column("Score", [0.5]).add_column("Ok", [True])}, 0)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        for step in (1, 2):
            out = state.apply(
                {"t": Table().add_column("Score", ["high", 0.25]).add_column("Ok", [1, False])},
                step,
            )["t"]
            assert isinstance(out, Table)
            assert out.rows == [[None, None], [0.25, False]]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2  # one per column, not one per step
    assert "'Score'" in warnings[0].getMessage()
    assert "str" in warnings[0].getMessage()


def test_columns_keep_their_first_order_vanished_ones_are_none_new_ones_appended(
    caplog: pytest.LogCaptureFixture,
) -> None:
    state = PolicyState(TablePolicy())
    state.apply({"t": Table().add_column("A", [1]).add_column("B", ["x"])}, 0)
    with caplog.at_level(logging.INFO, logger="gradewire"):
        for step in (1, 2):
            out = state.apply({"t": Table().add_column("C", [0.5]).add_column("A", [2])}, step)
            table = out["t"]
            assert isinstance(table, Table)
            assert table.headers == ["A", "B", "C"]
            assert table.rows == [[2, None, 0.5]]
    messages = [r.getMessage() for r in caplog.records]
    assert sum("gained column 'C'" in m for m in messages) == 1
    assert sum("lost column 'B'" in m for m in messages) == 1


def test_type_memory_is_per_table_key() -> None:
    state = PolicyState(TablePolicy())
    state.apply({"a": Table().add_column("X", [1.5])}, 0)
    out = state.apply({"b": Table().add_column("X", ["text"])}, 0)["b"]
    assert isinstance(out, Table)
    assert out.column("X") == ["text"]


def test_numbers_pass_through_and_the_input_is_untouched() -> None:
    table = _scored([float(i) for i in range(20)]).add_column("Long", ["q" * 300] * 20)
    logs = {"m": 0.5, "c": 3, "t": table}
    before = copy.deepcopy(logs)
    out = PolicyState(TablePolicy(max_rows=5, max_cell_chars=50)).apply(logs, 0)
    assert logs == before
    assert out["m"] == 0.5
    assert out["c"] == 3
    assert len(out["t"]) == 5  # type: ignore[arg-type]


# --- properties -------------------------------------------------------------------------

_texts = st.text(max_size=40)
_numbers = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers())
_other: st.SearchStrategy[Cell] = st.one_of(st.none(), _texts, st.booleans(), st.floats())


@st.composite
def _tables(draw: st.DrawFn) -> Table:
    n = draw(st.integers(0, 60))
    table = Table()
    if draw(st.booleans()):
        table.add_column("Score", draw(st.lists(_numbers, min_size=n, max_size=n)))
    for name in draw(st.lists(st.sampled_from(["A", "B", "C"]), unique=True, max_size=3)):
        column_kind = draw(st.sampled_from([_texts, _numbers, _other]))
        table.add_column(name, draw(st.lists(column_kind, min_size=n, max_size=n)))
    return table


_policies = st.builds(
    TablePolicy,
    max_rows=st.one_of(st.none(), st.integers(1, 70)),
    sort_by=st.sampled_from(["Score", "A", None]),
    max_cell_chars=st.one_of(st.none(), st.integers(1, 30)),
)


def _score(cell: Cell) -> float | None:
    if isinstance(cell, bool) or not isinstance(cell, int | float):
        return None
    try:
        value = float(cell)
    except OverflowError:  # an int beyond float range ranks as infinite
        return math.copysign(math.inf, cell)
    return None if math.isnan(value) else value


@settings(max_examples=150, deadline=None)
@given(table=_tables(), policy=_policies)
def test_any_table_fits_the_policy_and_the_input_is_never_mutated(
    table: Table, policy: TablePolicy
) -> None:
    before = copy.deepcopy(table)
    out = _apply(policy, table)
    assert table == before
    assert out.headers == table.headers
    if policy.max_rows is not None:
        assert len(out) == min(len(table), policy.max_rows)
    else:
        assert len(out) == len(table)
    if policy.max_cell_chars is not None:
        for row in out.rows:
            for cell in row:
                if isinstance(cell, str):
                    assert len(cell) <= policy.max_cell_chars


@settings(max_examples=150, deadline=None)
@given(
    scores=st.lists(_numbers, min_size=1, max_size=80),
    max_rows=st.integers(1, 20),
)
def test_best_and_worst_rows_are_kept_when_sort_by_applies(
    scores: list[float | None], max_rows: int
) -> None:
    table = _scored(scores)
    out = _apply(TablePolicy(max_rows=max_rows), table)
    coerced = _apply(TablePolicy(max_rows=None), table).column("Score")
    values = [v for v in map(_score, coerced) if v is not None]
    kept = [v for v in map(_score, out.column("Score")) if v is not None]
    if values:
        assert max(values) in kept
        if max_rows >= 2:
            assert min(values) in kept
    ids = out.column("Id")
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


@given(n=st.integers(0, 500), k=st.integers(1, 500))
def test_spread_positions_are_distinct_sorted_and_span_the_range(n: int, k: int) -> None:
    positions = spread_positions(n, k)
    assert len(positions) == min(n, k)
    assert positions == sorted(set(positions))
    if n:
        assert positions[0] == 0
        assert positions[-1] == (n - 1 if k > 1 else 0)
        assert positions[-1] < n


@given(text=st.text(max_size=3000), limit=st.integers(1, 2500))
def test_cut_text_never_exceeds_the_limit(text: str, limit: int) -> None:
    cut = cut_text(text, limit)
    assert len(cut) <= limit
    if len(text) <= limit:
        assert cut == text
    else:
        assert "…" in cut
        assert text.startswith(cut[: cut.rindex("…")])


def test_huge_ints_do_not_break_float_columns_or_sorting() -> None:
    state = PolicyState(TablePolicy(max_rows=2))
    state.apply({"t": Table().add_column("Score", [0.5])}, 0)
    out = state.apply({"t": Table().add_column("Score", [10**400, -(10**400), 1])}, 1)["t"]
    assert isinstance(out, Table)
    assert out.column("Score") == [math.inf, -math.inf]
    ints = _apply(TablePolicy(max_rows=2), Table().add_column("Score", [1, 10**400, 3]))
    assert ints.column("Score") == [1, 10**400]
