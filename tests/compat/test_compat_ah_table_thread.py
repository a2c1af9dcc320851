"""Adaptive Harmony's `Table` and `StringThread`, as graders and recipes use them.

Runs against adaptive-harmony and gradewire alike (see `compat_targets`).
"""

from __future__ import annotations

import pytest
from ah_target import StringThread, Table
from compat_targets import REAL


# --- Table -----------------------------------------------------------------------------
def test_columns_and_rows_build_the_same_table():
    by_columns = (
        Table()
        .add_column("Category", ["A", "B"])
        .add_column("Score", [0.9, 0.7])
        .add_column("Reason", ["Good", "Needs work"])
    )
    by_rows = Table(initial_headers=["Category", "Score", "Reason"])
    assert by_rows.add_row(["A", 0.9, "Good"]) is by_rows
    by_rows.add_row(["B", 0.7, "Needs work"])
    assert by_columns.headers == by_rows.headers == ["Category", "Score", "Reason"]
    assert by_columns.rows == by_rows.rows == [["A", 0.9, "Good"], ["B", 0.7, "Needs work"]]


def test_add_rows_chains():
    table = Table(["Prompt", "Score"]).add_rows([["p1", 1.0], ["p2", 0.0]]).add_rows([["p3", 0.5]])
    assert table.rows == [["p1", 1.0], ["p2", 0.0], ["p3", 0.5]]


def test_a_column_by_name_and_membership():
    table = Table().add_column("Prompt", ["p1", "p2"]).add_column("Score", [1.0, 0.5])
    assert table["Score"] == [1.0, 0.5]
    assert table["Prompt"] == ["p1", "p2"]
    assert "Score" in table
    assert "Reasoning" not in table
    with pytest.raises(ValueError, match="Reasoning"):
        table["Reasoning"]


def test_a_row_that_does_not_fit_is_refused():
    table = Table(["a", "b"])
    with pytest.raises((AssertionError, ValueError)):  # Adaptive Harmony asserts
        table.add_row(["only one"])
    assert table.rows == []


def test_export_gives_every_cell_as_text():
    table = Table().add_column("Prompt", ["p1"]).add_column("Score", [0.5])
    assert table.export() == (["Prompt", "Score"], [["p1", "0.5"]])


def test_html_shows_headers_and_cells():
    table = Table().add_column("Prompt", ["What is 2+2?"]).add_column("Score", [0.5])
    page = table.to_html_table()
    for text in ("<table", "Prompt", "Score", "What is 2+2?", "0.5"):
        assert text in page
    assert table._repr_html_() == page


def test_html_of_untrusted_text():
    page = Table().add_column("Completion", ["<script>alert(1)</script>"]).to_html_table()
    # Adaptive Harmony writes cells as they are; gradewire escapes model output.
    assert ("<script>" in page) is REAL
    if not REAL:
        assert "&lt;script&gt;" in page


# --- StringThread ----------------------------------------------------------------------
def test_turns_and_contents():
    thread = StringThread(
        [("system", "Be brief."), ("user", "2+2?"), ("assistant", "4")], metadata={"answer": 4}
    )
    assert [(t.role, t.content) for t in thread.get_turns()] == [
        ("system", "Be brief."),
        ("user", "2+2?"),
        ("assistant", "4"),
    ]
    assert thread.get_turns()[0].role == "system"
    assert (thread.last_content(), thread.completion()) == ("4", "4")
    assert thread.metadata == {"answer": 4}


def test_messages_is_the_prompt_without_the_final_answer():
    thread = StringThread([("system", "s"), ("user", "q"), ("assistant", "a")])
    assert thread.messages() == [("system", "s"), ("user", "q")]
    unanswered = StringThread([("user", "q"), ("assistant", "a"), ("user", "q2")])
    assert unanswered.messages() == [("user", "q"), ("assistant", "a"), ("user", "q2")]
    assert StringThread([("assistant", "a"), ("assistant", "b")]).messages() == [("assistant", "a")]
    assert StringThread([]).messages() == []


def test_threads_grow_by_returning_new_threads():
    thread = StringThread([("user", "hi")])
    longer = thread.assistant("hello").user("how are you?")
    assert [t.role for t in longer.get_turns()] == ["user", "assistant", "user"]
    assert [t.role for t in thread.get_turns()] == ["user"]
    assert StringThread().system("s").get_turns()[0].content == "s"


def test_completion_when_the_last_turn_is_not_the_assistants():
    assert StringThread([("user", "q")]).completion() is None
    thread = StringThread([("user", "q"), ("assistant", "a"), ("user", "again?")])
    # Adaptive Harmony: None; gradewire: the last assistant turn, so a transcript that ends
    # with a follow-up or a tool result is still graded on the answer it holds.
    assert thread.completion() == (None if REAL else "a")
