"""gradewire.plot draws with matplotlib's Agg backend: bars, points and lines counted."""

from __future__ import annotations

import json
import sys

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")  # before pyplot: no display, the same pixels everywhere

from matplotlib import pyplot

import gradewire as gw
from gradewire import Histogram, MissingDependencyError, Table
from gradewire.eval import compare_runs
from gradewire.plot import plot_comparison, plot_histogram, plot_steps
from gradewire.sinks import JsonlSink, MemorySink, read_jsonl


def make_run(folder, scores):
    """A real run of graders that give ``scores[key][i]`` to sample i."""
    n = len(next(iter(scores.values())))
    data = folder.parent / f"{folder.name}.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"s{i}", "prompt": f"q{i}", "completion": f"a{i}", "i": i}) + "\n"
            for i in range(n)
        )
    )

    def grader(key):
        return gw.BaseGrader.from_function(key, lambda s: scores[key][s.metadata["i"]])

    return gw.run_sync(gw.run_eval(data, [grader(k) for k in scores], folder)).run


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    pyplot.close("all")


def _sink(steps: int = 6) -> MemorySink:
    sink = MemorySink()
    for step in range(steps):
        table = Table(initial_headers=["Prompt", "Reasoning", "Score"]).add_row(
            [f"q{step}", "<b>why</b>", step / 10]
        )
        logs = {
            "correct/score/mean": step / 10,
            "brief/score/mean": 1 - step / 10,
            "correct/score/std": 0.1,
            "score/scored_samples": table,
        }
        if step == 3:
            del logs["brief/score/mean"]  # a step that did not log one key
        sink.log(logs, step)
    return sink


def test_plot_steps_draws_a_line_per_score_mean_with_its_points():
    sink = _sink()
    ax = plot_steps(sink)
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"correct/score/mean", "brief/score/mean"}
    assert list(lines["correct/score/mean"].get_xdata()) == [0, 1, 2, 3, 4, 5]
    assert np.allclose(lines["correct/score/mean"].get_ydata(), [0, 0.1, 0.2, 0.3, 0.4, 0.5])
    assert list(lines["brief/score/mean"].get_xdata()) == [0, 1, 2, 4, 5]
    assert ax.get_xlabel() == "step"


def test_plot_steps_from_a_dataframe_and_from_a_jsonl_file_draw_the_same(tmp_path):
    sink = _sink()
    frame = sink.to_pandas()
    from_frame = plot_steps(frame, "brief/score/mean").get_lines()[0]
    assert list(from_frame.get_xdata()) == [0, 1, 2, 4, 5]  # the step without it is left out
    jsonl = JsonlSink(tmp_path / "run.jsonl")
    for step, logs in sink.steps:
        jsonl.log(logs, step)
    jsonl.close()
    from_file = plot_steps(read_jsonl(tmp_path / "run.jsonl"), ["correct/score/mean"])
    assert np.allclose(from_file.get_lines()[0].get_ydata(), frame["correct/score/mean"])


def test_plot_steps_draws_on_the_axes_given_and_refuses_unknown_keys():
    _, ax = pyplot.subplots()
    assert plot_steps(_sink(), "correct/score/std", ax=ax) is ax
    with pytest.raises(Exception, match="nothing to draw for \\['nope'\\]"):
        plot_steps(_sink(), "nope")
    with pytest.raises(Exception, match="no 'step' column"):
        plot_steps(_sink().to_pandas().drop(columns="step"))


def test_plot_histogram_of_a_run_has_one_bar_per_bin_and_counts_every_score(tmp_path):
    scores = [i / 99 for i in range(100)]
    run = make_run(tmp_path, {"quality": scores, "correct": [1.0] * 100})
    ax = plot_histogram(run, "quality", bins=10)
    heights = [patch.get_height() for patch in ax.patches]
    assert len(heights) == 10
    assert heights == list(np.histogram(scores, bins=10)[0])
    assert ax.get_title() == "quality"
    with pytest.raises(Exception, match="pass the one to draw"):
        plot_histogram(run)
    with pytest.raises(Exception, match="no grader 'nope'"):
        plot_histogram(run, "nope")


def test_plot_histogram_of_a_logged_histogram_keeps_its_bins():
    h = Histogram.of([0.1, 0.2, 0.7, 0.9, 0.95], edges=[0, 0.5, 0.8, 1])
    ax = plot_histogram(h)
    assert [p.get_height() for p in ax.patches] == [2, 1, 2]
    assert [p.get_x() for p in ax.patches] == [0, 0.5, 0.8]
    assert [p.get_width() for p in ax.patches] == pytest.approx([0.5, 0.3, 0.2])


def test_plot_comparison_draws_a_point_and_interval_per_grader(tmp_path):
    rng = np.random.default_rng(0)
    a = make_run(tmp_path / "a", {"x": rng.random(80).tolist(), "y": [0.0] * 80})
    b = make_run(tmp_path / "b", {"x": (rng.random(80) + 0.5).tolist(), "y": [0.0] * 80})
    comparison = compare_runs(a, b)
    ax = plot_comparison(comparison)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["x", "y"]
    drawn = list(ax.containers)  # one errorbar container per grader with an interval
    x = next(g for g in comparison.graders if g.grader == "x")
    assert len(drawn) >= 1
    point = drawn[0].lines[0]
    assert point.get_xdata()[0] == pytest.approx(x.diff)
    assert "B − A" in ax.get_xlabel()


def test_without_matplotlib_a_plot_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'gradewire\[plot\]'"):
        plot_steps(_sink())


def test_importing_gradewire_plot_does_not_import_matplotlib():
    import subprocess

    code = (
        "import sys, gradewire.plot, gradewire.plot._steps_plot, gradewire.plot._histogram_plot, "
        "gradewire.plot._comparison_plot; print('matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
