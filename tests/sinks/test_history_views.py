"""Logged steps in a notebook and in pandas: the means over steps drawn, the last step shown."""

from __future__ import annotations

import re

import pytest

from gradewire import Histogram, InvalidInputError, Table
from gradewire.sinks import JsonlSink, MemorySink, read_jsonl

PAYLOAD = '<script>alert(1)</script><img src=x onerror="alert(2)">'


def _table(rows: int, step: int) -> Table:
    return Table(initial_headers=["Prompt", "Completion", "Reasoning", "Score"]).add_rows(
        [f"q{i}", PAYLOAD if i == 0 else f"a{i}", f"why {step}.{i}", i / max(rows, 1)]
        for i in range(rows)
    )


def _sink(steps: int = 50, last_rows: int = 10_000) -> MemorySink:
    sink = MemorySink()
    for step in range(steps):
        sink.log(
            {
                "score/mean": step / steps,
                f"{PAYLOAD}/score/mean": 0.5,
                "score/std": 0.25,
                "score/scored_samples": _table(last_rows if step == steps - 1 else 3, step),
                "score/histogram": Histogram.of([0.1, 0.9]),
            },
            step * 10,
        )
    return sink


def test_the_view_of_many_steps_and_a_10000_row_table_stays_a_few_kilobytes():
    view = _sink()._repr_html_()
    assert len(view.encode()) < 16_000
    assert "50 logged, steps 0 to 490" in view
    lines = re.findall(r'<polyline class="series" points="([^"]*)"', view)
    assert len(lines) == 2  # the two score means, not the std
    assert len(lines[0].split()) == 50
    assert "10,000 rows × 4 columns" in view
    assert view.count('<svg class="hist"') == 1  # the last step's histogram


def test_every_key_and_cell_is_escaped_in_the_view():
    view = _sink(steps=3, last_rows=3)._repr_html_()
    assert "<script" not in view
    assert "<img" not in view
    assert view.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 3  # legend, value, cell


def test_a_long_history_is_drawn_from_a_sample_of_its_points():
    sink = MemorySink()
    for step in range(5_000):
        sink.log({"score/mean": (step % 7) / 7}, step)
    view = sink._repr_html_()
    points = re.findall(r'points="([^"]*)"', view)[0].split()
    assert len(points) == 500
    assert len(view.encode()) < 12_000


def test_to_pandas_gives_a_row_per_step_and_a_column_per_number(tmp_path):
    sink = _sink(steps=4, last_rows=2)
    sink.log({"kl": 0.1}, 100)
    frame = sink.to_pandas()
    assert list(frame.columns) == ["step", "score/mean", f"{PAYLOAD}/score/mean", "score/std", "kl"]
    assert frame["step"].tolist() == [0, 10, 20, 30, 100]
    assert frame["score/mean"].tolist()[:4] == [0, 0.25, 0.5, 0.75]
    assert frame["kl"].isna().sum() == 4
    path = tmp_path / "run.jsonl"
    jsonl = JsonlSink(path)
    for step, logs in sink.steps:
        jsonl.log(logs, step)
    jsonl.close()
    assert read_jsonl(path).to_pandas().equals(frame)


def test_to_pandas_of_a_table_key_stacks_the_samples_with_their_step_and_reasoning():
    sink = _sink(steps=3, last_rows=4)
    frame = sink.to_pandas("score/scored_samples")
    assert list(frame.columns) == ["step", "Prompt", "Completion", "Reasoning", "Score"]
    assert frame["step"].tolist() == [0, 0, 0, 10, 10, 10, 20, 20, 20, 20]
    assert frame["Reasoning"].tolist()[3] == "why 1.0"
    with pytest.raises(InvalidInputError, match=r"the table keys are \['score/scored_samples'\]"):
        sink.to_pandas("nope")
    sink.log({"score/scored_samples": Table().add_column("Other", [1])}, 30)
    with pytest.raises(InvalidInputError, match="different headers"):
        sink.to_pandas("score/scored_samples")
