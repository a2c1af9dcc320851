from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pytest

from gradewire import InvalidInputError, SinkError, Table
from gradewire.sinks._jsonl_sink import JsonlSink, read_jsonl


def _strict(line: str) -> dict[str, object]:
    def refuse(token: str) -> object:
        raise AssertionError(f"non-strict JSON token {token}")

    record = json.loads(line, parse_constant=refuse)
    assert isinstance(record, dict)
    return record


def test_line_layout(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    sink = JsonlSink(path)
    table = Table().add_column("Prompt", ["hi"]).add_column("Score", [0.5])
    sink.log_config({"lr": 0.1})
    sink.log({"score/mean": 0.5, "score/count": 3, "samples": table}, 7)
    sink.close()
    config_line, step_line = path.read_text(encoding="utf-8").splitlines()
    assert _strict(config_line) == {"config": {"lr": 0.1}}
    record = _strict(step_line)
    assert sorted(record) == ["metrics", "step", "tables", "time"]
    assert record["step"] == 7
    assert isinstance(record["time"], float)
    assert record["metrics"] == {"score/mean": 0.5, "score/count": 3}
    assert record["tables"] == {"samples": table.to_dict()}


def test_non_finite_floats_are_strict_json_and_come_back_as_floats(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    table = (
        Table()
        .add_column("F", [math.nan, math.inf, -math.inf, 1.5])
        .add_column("S", ["NaN", "Infinity", "-Infinity", "ok"])
    )
    with JsonlSink(path) as sink:
        sink.log({"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "t": table}, 0)
        sink.log_config({"limits": [math.inf, 1.0]})
    [line, config_line] = path.read_text(encoding="utf-8").splitlines()
    record = _strict(line)
    assert record["metrics"] == {"nan": "NaN", "inf": "Infinity", "ninf": "-Infinity"}
    assert record["nonfinite"] == {"t": [[0, 0], [1, 0], [2, 0]]}
    assert _strict(config_line) == {"config": {"limits": ["Infinity", 1.0]}}
    run = read_jsonl(path)
    [(step, logs)] = run.steps
    assert step == 0
    assert math.isnan(logs["nan"])  # type: ignore[arg-type]
    assert logs["inf"] == math.inf
    assert logs["ninf"] == -math.inf
    assert logs["t"] == table  # str cells that spell a token stay str
    assert run.config == {"limits": ["Infinity", 1.0]}


def test_each_line_is_flushed_and_folders_are_created_on_first_write(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "run.jsonl"
    sink = JsonlSink(path)
    assert not (tmp_path / "a").exists()
    sink.log({"x": 1.0}, 0)
    assert len(path.read_text(encoding="utf-8").splitlines()) == 1  # before close
    sink.log({"x": 2.0}, 1)
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2
    sink.close()
    assert read_jsonl(path).metric("x") == [(0, 1.0), (1, 2.0)]


def test_log_many_writes_a_line_per_step(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with JsonlSink(path) as sink:
        sink.log_many([(0, {"x": 1.0}), (1, {"x": 2.0}), (1, {"y": 3.0})])
    run = read_jsonl(path)
    assert run.steps == [(0, {"x": 1.0}), (1, {"x": 2.0}), (1, {"y": 3.0})]


def test_appending_to_an_existing_file_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with JsonlSink(path) as sink:
        sink.log({"x": 1.0}, 0)
    with JsonlSink(path) as sink:
        sink.log({"x": 2.0}, 1)
    assert read_jsonl(path).metric("x") == [(0, 1.0), (1, 2.0)]


def test_a_cut_last_line_is_reported_and_the_rest_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "run.jsonl"
    with JsonlSink(path) as sink:
        sink.log_config({"lr": 0.1})
        sink.log({"x": 1.0}, 0)
        sink.log({"x": 2.0}, 1)
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: -len(text.splitlines()[-1]) // 2 - 1], encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        run = read_jsonl(path)
    assert run.config == {"lr": 0.1}
    assert run.metric("x") == [(0, 1.0)]
    assert run.skipped_lines == [3]
    assert "skipped 1 unreadable line(s) [3]" in caplog.text


def test_appending_after_a_crash_starts_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"step": 0, "time": 1.0, "metrics": {"x": 1.0}, "tables": {}}\n{"step": 1, "me'
    )
    with JsonlSink(path) as sink:
        sink.log({"x": 3.0}, 2)
    run = read_jsonl(path)
    assert run.metric("x") == [(0, 1.0), (2, 3.0)]
    assert run.skipped_lines == [2]


def test_text_of_any_kind_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    text = ["naïve ✓ 漢字", "lone \ud800 surrogate", "line\nbreak\u2028sep", "\x00nul", ""]
    table = Table().add_column("Text", text)
    with JsonlSink(path) as sink:
        sink.log({"t": table}, 0)
    assert path.read_bytes().isascii()
    assert read_jsonl(path).table("t") == [(0, table)]


def test_config_values_json_cannot_hold_are_written_readably(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with JsonlSink(path) as sink:
        sink.log_config(
            {
                "dir": Path("/data/x"),
                "tags": {"b", "a"},
                "shape": (2, 3),
                "nested": {1: {"deep": math.nan}},
                "table": Table().add_column("A", [1]),
                "obj": object,
            }
        )
    config = read_jsonl(path).config
    assert config == {
        "dir": "/data/x",
        "tags": ["a", "b"],
        "shape": [2, 3],
        "nested": {"1": {"deep": "NaN"}},
        "table": {"columns": ["A"], "data": [[1]]},
        "obj": "<class 'object'>",
    }


def test_a_write_that_fails_raises_sink_error(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path)  # a directory cannot be appended to
    with pytest.raises(SinkError, match=r"could not write step 0 to .*not written"):
        sink.log({"x": 1.0}, 0)
    assert sink.last_step is None
    sink.close()


def test_reading_problems_raise_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="cannot read"):
        read_jsonl(tmp_path / "missing.jsonl")
    other = tmp_path / "other.jsonl"
    other.write_text('{"name": "a"}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(InvalidInputError, match="no gradewire step or config line"):
        read_jsonl(other)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert read_jsonl(empty).steps == []


def test_repr_and_path(tmp_path: Path) -> None:
    sink = JsonlSink(str(tmp_path / "r.jsonl"))
    assert sink.path == tmp_path / "r.jsonl"
    assert repr(sink) == f"JsonlSink({str(tmp_path / 'r.jsonl')!r})"
    with pytest.raises(TypeError, match="path must be a str or Path"):
        JsonlSink(3)  # type: ignore[arg-type]


def test_lines_of_the_wrong_shape_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    good = '{"step": 0, "time": 1.0, "metrics": {"x": 1.0}, "tables": {}}'
    bad = [
        '{"step": 1, "metrics": [1, 2]}',
        '{"step": "2", "metrics": {}}',
        '{"step": 3, "metrics": {"x": "many"}}',
        '{"step": 4, "metrics": {}, "tables": {"t": {"columns": ["A"], "data": [[1, 2]]}}}',
        '{"step": 5, "metrics": {}, "tables": {"t": {"columns": ["A"], "data": [["x"]]}},'
        ' "nonfinite": {"t": [[0, 0]]}}',
        '{"config": [1]}',
        "[]",
    ]
    path.write_text("\n".join([good, *bad, good.replace('"step": 0', '"step": 9')]) + "\n")
    run = read_jsonl(path)
    assert run.metric("x") == [(0, 1.0), (9, 1.0)]
    assert run.skipped_lines == list(range(2, 2 + len(bad)))
