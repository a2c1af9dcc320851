from __future__ import annotations

import io
import math
import sys

import pytest

from gradewire import InvalidInputError, InvalidTypeError, Table
from gradewire.sinks._console_sink import ConsoleSink, format_number, printable


def test_stdout_is_looked_up_at_write_time(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sink = ConsoleSink()
    replacement = io.StringIO()
    monkeypatch.setattr(sys, "stdout", replacement)
    sink.log({"a": 1.0}, 0)
    assert "--- step 0 ---" in replacement.getvalue()
    monkeypatch.undo()
    sink.log({"a": 2.0}, 1)
    assert "--- step 1 ---" in capsys.readouterr().out


def test_a_step_block_is_aligned_and_numbers_are_readable() -> None:
    stream = io.StringIO()
    sink = ConsoleSink(stream)
    sink.log(
        {
            "judge/score/mean": 0.123456789,
            "judge/score/count": 12,
            "n": math.nan,
            "big": 123456789.0,
            "flag": True,
        },
        3,
    )
    lines = stream.getvalue().splitlines()
    assert lines[0] == "--- step 3 ---"
    assert lines[1:] == [
        "  judge/score/mean   0.123457",
        "  judge/score/count  12",
        "  n                  nan",
        "  big                1.23457e+08",
        "  flag               1",
    ]


def test_tables_are_summarised_and_optionally_shown() -> None:
    table = (
        Table()
        .add_column("Prompt", ["a\x1b[31mred", "two\nlines", "x" * 300, "d", "e", "f", "g"])
        .add_column("Score", [1.0, None, 0.5, 1, 2, 3, 4])
        .add_column("Ok", [True, False, True, True, True, True, True])
    )
    quiet = io.StringIO()
    ConsoleSink(quiet).log({"m": 1.0, "samples": table}, 0)
    assert "  samples: Table(headers=['Prompt', 'Score', 'Ok'], rows=7)" in quiet.getvalue()
    assert "red" not in quiet.getvalue()

    shown = io.StringIO()
    ConsoleSink(shown, show_tables=True, table_rows=3, width=40).log({"samples": table}, 0)
    lines = shown.getvalue().splitlines()
    assert lines[2:] == [
        "    Prompt | Score | Ok",
        "    a\\x1b[31mred | 1 | true",
        "    two\\nlines |  | false",
        "    " + "x" * 35 + "…",
        "    ... 4 more rows",
    ]
    assert all(len(line) <= 40 for line in lines[2:])
    assert "\x1b" not in shown.getvalue()


def test_config_is_printed_when_logged() -> None:
    stream = io.StringIO()
    sink = ConsoleSink(stream, width=60)
    sink.log_config({"model": "gpt\x07", "lr": 1e-5, "layers": [1, 2], "odd": {(1, 2): 3}})
    assert stream.getvalue().splitlines() == [
        "--- config ---",
        "  model   gpt\\x07",
        "  lr      1e-05",
        "  layers  [1, 2]",
        "  odd     {(1, 2): 3}",
    ]
    sink.log({"a": 1.0}, 0)
    assert stream.getvalue().count("config") == 1


def test_a_stream_that_cannot_encode_gets_escapes() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    ConsoleSink(stream, show_tables=True).log({"t": Table().add_column("T", ["naïve ✓"])}, 0)
    assert b"na\\xefve \\u2713" in raw.getvalue()


def test_helpers() -> None:
    assert format_number(3) == "3"
    assert format_number(0.1) == "0.1"
    assert format_number(-math.inf) == "-inf"
    assert printable("a\tb\r\x7f\x9b") == "a\\tb\\r\\x7f\\x9b"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"table_rows": 0}, InvalidInputError),
        ({"width": 0}, InvalidInputError),
        ({"table_rows": 2.0}, InvalidTypeError),
        ({"width": "80"}, InvalidTypeError),
    ],
)
def test_bad_settings(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        ConsoleSink(**kwargs)  # type: ignore[arg-type]
