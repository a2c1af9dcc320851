"""Key cleaning and the JSON table state, checked against MLflow's own validator (no server)."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mlflow.exceptions import MlflowException
from mlflow.utils.validation import _validate_metric_name

from gradewire import Table
from gradewire_mlflow._keys import MAX_KEY_LENGTH, KeyCleaner, is_valid_key
from gradewire_mlflow._tables import (
    ALWAYS_REWRITE_BYTES,
    STEP_COLUMN,
    TableState,
    rename_column,
    restore_column,
)

NASTY = [
    "",
    ".",
    "..",
    "...",
    "..x",
    "/",
    "//",
    "a//b",
    "/a",
    "a/",
    "a/./b",
    "a/../b",
    "a\n",
    "tab\there",
    "emoji 😀",
    "Résumé/naïve",
    "q?&=%",
    "x" * 251,
    "y/" * 200,
    "a:b c-d.e_f/g",
]


def mlflow_accepts(key: str) -> bool:
    try:
        _validate_metric_name(key)  # type: ignore[no-untyped-call]
    except MlflowException:
        return False
    return len(key) <= MAX_KEY_LENGTH


@pytest.mark.parametrize("key", NASTY)
def test_is_valid_key_agrees_with_mlflow(key: str) -> None:
    # MLflow's regex ends in `$`, which lets one final "\n" through; the cleaner is stricter.
    expected = mlflow_accepts(key) and not key.endswith("\n")
    assert is_valid_key(key) == expected


def test_nasty_keys_become_distinct_valid_keys(caplog: pytest.LogCaptureFixture) -> None:
    clean = KeyCleaner("metric")
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        names = [clean(key) for key in NASTY]
    assert all(mlflow_accepts(name) for name in names), names
    assert len(set(names)) == len(NASTY)
    assert clean("a:b c-d.e_f/g") == "a:b c-d.e_f/g"
    assert names == [clean(key) for key in NASTY]  # stable
    assert clean("a/./b") == "a/_/b"
    assert clean("x" * 251).startswith("x" * 200)


def test_a_valid_key_taken_by_a_cleaned_one_gets_a_suffix() -> None:
    clean = KeyCleaner("metric")
    assert clean("a b!") == "a b_"
    renamed = clean("a b_")
    assert renamed != "a b_"
    assert renamed.startswith("a b_-")
    assert mlflow_accepts(renamed)


def test_long_keys_with_one_prefix_stay_apart() -> None:
    clean = KeyCleaner("metric")
    first, second = clean("k" * 300 + "1"), clean("k" * 300 + "2")
    assert first != second
    assert len(first) == len(second) == MAX_KEY_LENGTH


def test_path_keys_have_no_colon() -> None:
    clean = KeyCleaner("table", allow_colon=False)
    assert clean("eval:gsm8k/samples") == "eval_gsm8k/samples"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=300), min_size=1, max_size=8, unique=True))
def test_any_keys_map_one_to_one_onto_valid_keys(keys: list[str]) -> None:
    clean = KeyCleaner("metric")
    names = [clean(key) for key in keys]
    assert len(set(names)) == len(keys)
    assert all(mlflow_accepts(name) for name in names)


def test_step_like_columns_round_trip() -> None:
    for name in ["step", "step_", "step__", "Step", "steps", "x"]:
        assert restore_column(rename_column(name)) == name
    assert rename_column(STEP_COLUMN) != STEP_COLUMN
    assert len({rename_column(n) for n in ["step", "step_", "step__"]}) == 3


def test_table_state_pads_rows_when_columns_grow() -> None:
    state = TableState("t")
    state.add(Table(initial_headers=["A"]).add_row([1]), 0)
    state.add(Table(initial_headers=["B", "A"]).add_row(["b", float("nan")]), 1)
    data = json.loads(state.render())
    assert data == {"columns": ["step", "A", "B"], "data": [[0, 1, None], [1, None, "b"]]}


def test_table_state_rewrites_a_big_file_only_after_it_grew_by_an_eighth() -> None:
    state = TableState("t")
    row = Table(initial_headers=["Text"]).add_row(["x" * 1000])
    step = 0
    while state.size <= ALWAYS_REWRITE_BYTES:
        state.add(row, step)
        step += 1
        assert state.due()
    state.mark_uploaded()
    uploaded = state.size
    assert not state.due()
    while (state.size - uploaded) * 8 < uploaded:
        assert not state.due()
        state.add(row, step)
        step += 1
    assert state.due()


def test_a_sealed_part_keeps_its_rows_and_the_next_starts_empty() -> None:
    state = TableState("t")
    for step in range(3):
        state.add(Table(initial_headers=["A"]).add_row([step]).add_row([step + 10]), step)
    first = json.loads(state.seal(4))
    assert [row[0] for row in first["data"]] == [0, 0, 1, 1]
    assert state.part == 2
    assert state.path == "tables/t/rows-0002.json"
    assert json.loads(state.render())["data"] == [[2, 2], [2, 12]]
    clone = state.clone()
    clone.add(Table(initial_headers=["A"]).add_row([5]), 3)
    assert len(state.rows) == 2  # the clone's rows are its own
