"""read_offline_run against real W&B offline runs: what was logged comes back, or a refusal."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import wandb

from gradewire import GradewireError, Histogram, Table
from gradewire_wandb import (
    IncompleteRunError,
    OfflineRun,
    OfflineRunError,
    WandbSink,
    find_offline_runs,
    read_offline_run,
)

SCORES = [0.25, math.nan, 0.75, math.inf, -math.inf, 1.0]
COUNTS = np.array([3, 0, 5, 2])
EDGES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])


def samples(step: int) -> Table:
    table = Table(initial_headers=["Completion", "Score", "Note"])
    table.add_row([f"<b>answer {step}</b> ✓", step / 10, None])
    table.add_row(["second", math.nan, "Q&A"])
    return table


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One offline run with numbers, histograms, tables, HTML, config and summary."""
    folder = tmp_path_factory.mktemp("logged")
    run = wandb.init(
        dir=folder, mode="offline", project="reader", config={"lr": 0.1, "model": {"n": 2}}
    )
    sink = WandbSink(run=run, prefix="rewards", html=True, table_policy=None)
    for step, score in enumerate(SCORES):
        raw = np.histogram(np.arange(step + 1) / 8, bins=EDGES)
        run.log(
            {"train/loss": score, "text": f"step {step}", "raw": wandb.Histogram(np_histogram=raw)},
            step=step,
        )
        logs = {"judge/score/mean": float(step), "judge/samples": samples(step)}
        if step == 2:
            logs["judge/score/histogram"] = Histogram(tuple(EDGES), tuple(int(c) for c in COUNTS))
        sink.log(logs, step)
    run.config.update({"seed": 7})
    run.summary["best"] = 0.75
    run.summary["dropped"] = 1.0
    del run.summary["dropped"]
    sink.close()
    run.finish()
    (path,) = find_offline_runs(folder)
    return path


@pytest.fixture(scope="module")
def run(logged: Path) -> OfflineRun:
    return read_offline_run(logged)


def test_numbers_come_back_as_logged_with_non_finite_ones(run: OfflineRun) -> None:
    assert run.complete
    assert run.exit_code == 0
    assert run.project == "reader"
    assert run.path.name.endswith(run.run_id)
    assert [row["_step"] for row in run.history] == list(range(len(SCORES)))
    losses = [row["train/loss"] for row in run.history]
    assert math.isnan(losses[1])
    assert [x for x in losses if not math.isnan(x)] == [s for s in SCORES if not math.isnan(s)]
    assert [row["rewards/judge/score/mean"] for row in run.history] == list(range(len(SCORES)))
    assert run.history[3]["text"] == "step 3"


def test_config_is_the_init_config_and_its_updates(run: OfflineRun) -> None:
    assert run.config == {"lr": 0.1, "model": {"n": 2}, "seed": 7}


def test_summary_holds_last_values_and_what_was_set_or_removed(run: OfflineRun) -> None:
    assert run.summary["best"] == 0.75
    assert "dropped" not in run.summary
    assert run.summary["train/loss"] == SCORES[-1]
    assert run.summary["_step"] == len(SCORES) - 1
    assert not any(key.startswith("_wandb") for key in run.summary)


def test_tables_come_back_as_the_tables_logged(run: OfflineRun) -> None:
    tables = run.tables["rewards/judge/samples"]
    assert sorted(tables) == list(range(len(SCORES)))
    for step, table in tables.items():
        assert table == samples(step)
    ref = run.history[4]["rewards/judge/samples"]
    assert run.table(ref) == samples(4)
    assert ref["_type"] == "table-file"
    assert run.media_file(ref).parent.name == "judge"


def test_histograms_match_numpy(run: OfflineRun) -> None:
    raw = run.histograms["raw"]
    for step, histogram in raw.items():
        counts, edges = np.histogram(np.arange(step + 1) / 8, bins=EDGES)
        assert histogram.counts == tuple(counts)
        assert histogram.edges == tuple(edges)
    (sunk,) = run.histograms["rewards/judge/score/histogram"].items()
    assert sunk[0] == 2
    assert sunk[1].counts == tuple(COUNTS)


def test_html_pages_are_the_escaped_tables(run: OfflineRun) -> None:
    pages = run.html["rewards/judge/samples_html"]
    assert pages[0] == samples(0).to_html()
    assert "&lt;b&gt;answer 0&lt;/b&gt;" in pages[0]


def test_steps_give_back_what_the_sink_was_given(run: OfflineRun) -> None:
    steps = dict(run.steps())
    assert steps[2]["rewards/judge/score/mean"] == 2.0
    assert steps[2]["rewards/judge/samples"] == samples(2)
    histogram = steps[2]["rewards/judge/score/histogram"]
    assert isinstance(histogram, Histogram)
    assert histogram.counts == tuple(COUNTS)
    assert "text" not in steps[2]  # text is no grader log value: it stays in history
    assert "rewards/judge/samples_html" not in steps[2]


def test_to_pandas_has_one_row_per_step_and_no_media(run: OfflineRun) -> None:
    frame = run.to_pandas()
    assert list(frame["_step"]) == list(range(len(SCORES)))
    assert frame["rewards/judge/score/mean"].tolist() == [float(s) for s in range(len(SCORES))]
    assert "rewards/judge/samples" not in frame.columns
    assert "raw" not in frame.columns


def test_the_run_file_reads_as_its_folder(logged: Path, run: OfflineRun) -> None:
    (file,) = logged.glob("run-*.wandb")
    again = read_offline_run(file)
    assert again.file == run.file
    assert again.path == run.path
    assert len(again.history) == len(run.history)
    assert again.summary["best"] == run.summary["best"]
    assert again.tables["rewards/judge/samples"][5] == samples(5)


# --- refusals ----------------------------------------------------------------------------


def test_a_path_that_is_no_run_is_refused_saying_what_to_pass(tmp_path: Path, logged: Path) -> None:
    with pytest.raises(OfflineRunError, match="does not exist; pass an offline-run-"):
        read_offline_run(tmp_path / "nowhere")
    (tmp_path / "notes.txt").write_text("hi", encoding="utf-8")
    with pytest.raises(OfflineRunError, match=r"not a W&B run file \(\*\.wandb\)"):
        read_offline_run(tmp_path / "notes.txt")
    with pytest.raises(OfflineRunError, match=r"holds no run-\*\.wandb file"):
        read_offline_run(tmp_path)
    # W&B's own directory, one level up: the message names the run in it.
    with pytest.raises(OfflineRunError, match="folder of 1 W&B run") as refused:
        read_offline_run(logged.parent)
    assert str(logged) in str(refused.value)
    assert issubclass(OfflineRunError, GradewireError)


def test_a_file_that_is_no_wandb_log_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "offline-run-20260101_000000-fake"
    fake.mkdir()
    (fake / "run-fake.wandb").write_bytes(b"garbage, not a run\n")
    with pytest.raises(OfflineRunError, match=r"wandb cannot read .* as a run file"):
        read_offline_run(fake)


def copy_with(logged: Path, tmp_path: Path, change: object) -> Path:
    """A copy of the run folder whose run file went through ``change(bytes) -> bytes``."""
    copy = tmp_path / logged.name
    shutil.copytree(logged, copy)
    (file,) = copy.glob("run-*.wandb")
    file.write_bytes(change(file.read_bytes()))  # type: ignore[operator]
    return copy


def test_a_truncated_file_is_refused_and_read_in_part_on_request(
    logged: Path, run: OfflineRun, tmp_path: Path
) -> None:
    size = run.file.stat().st_size
    cut = copy_with(logged, tmp_path, lambda data: data[: size * 2 // 3])
    with pytest.raises(IncompleteRunError, match=r"has not finished .*cut record.*partial=True"):
        read_offline_run(cut, wait=0)
    part = read_offline_run(cut, partial=True)
    assert not part.finished
    assert not part.complete
    assert any("incomplete" in problem for problem in part.problems)
    assert 0 < len(part.history) < len(run.history)
    assert list(part.history) == list(run.history[: len(part.history)])


def test_a_corrupted_file_is_refused_and_what_survives_is_read_on_request(
    logged: Path, run: OfflineRun, tmp_path: Path
) -> None:
    size = run.file.stat().st_size

    def flip(data: bytes) -> bytes:
        damaged = bytearray(data)
        damaged[size // 2] ^= 0xFF
        return bytes(damaged)

    broken = copy_with(logged, tmp_path, flip)
    with pytest.raises(IncompleteRunError, match="damaged records"):
        read_offline_run(broken)  # refused at once: waiting would not mend it
    part = read_offline_run(broken, partial=True)
    assert part.problems
    assert not part.complete
    assert len(part.history) < len(run.history)
    steps = [row["_step"] for row in part.history]
    assert steps == sorted(steps)


def test_a_live_run_is_refused_until_it_finishes(tmp_path: Path) -> None:
    live = wandb.init(dir=tmp_path, mode="offline", project="reader")
    try:
        live.log({"x": 1.0}, step=0)
        (folder,) = find_offline_runs(tmp_path)
        with pytest.raises(IncompleteRunError, match="still running, or its process was killed"):
            read_offline_run(folder, wait=0)
        assert not read_offline_run(folder, partial=True).finished
    finally:
        live.finish()
    finished = read_offline_run(folder)
    assert finished.complete
    assert [row["x"] for row in finished.history] == [1.0]


def test_media_outside_the_run_folder_or_missing_is_refused(
    logged: Path, tmp_path: Path, run: OfflineRun
) -> None:
    with pytest.raises(OfflineRunError, match="leaves the run folder"):
        run.media_file({"_type": "table-file", "path": "../../../etc/passwd"})
    with pytest.raises(OfflineRunError, match="is not a W&B table value"):
        run.table({"_type": "html-file", "path": "x"})
    copy = copy_with(logged, tmp_path, lambda data: data)
    shutil.rmtree(copy / "files" / "media" / "table")
    with pytest.raises(OfflineRunError, match="lost its media files"):
        _ = read_offline_run(copy).tables


def test_a_damaged_table_file_is_refused(logged: Path, tmp_path: Path) -> None:
    copy = copy_with(logged, tmp_path, lambda data: data)
    damaged = read_offline_run(copy)
    ref = damaged.history[0]["rewards/judge/samples"]
    damaged.media_file(ref).write_text(json.dumps({"columns": ["a"]}), encoding="utf-8")
    with pytest.raises(OfflineRunError, match="is not a W&B table file"):
        damaged.table(ref)


def test_the_repr_stays_short(run: OfflineRun) -> None:
    text = repr(run)
    assert len(text) < 400
    assert run.run_id in text
    assert "exit_code=0" in text


def test_histograms_are_keyed_by_the_training_step_like_the_other_figures(
    tmp_path: Path,
) -> None:
    # A trainer's run: its own rows advance W&B's _step between the sink's, and the sink
    # logs at the trainer's step (train/global_step), as GradewireCallback does.
    run = wandb.init(dir=tmp_path, mode="offline", project="axis")
    run.define_metric("train/global_step")
    run.define_metric("*", step_metric="train/global_step", step_sync=True)
    sink = WandbSink(run=run, step_metric="train/global_step")
    histogram = Histogram(tuple(EDGES), tuple(int(c) for c in COUNTS))
    for step in (5, 10):
        run.log({"train/loss": 1.0 / step, "train/global_step": step})
        run.log({"train/lr": 0.1, "train/global_step": step})
        sink.log(
            {"rewards/judge/score/mean": 0.5, "rewards/judge/score/histogram": histogram}, step
        )
    sink.close()
    run.finish()
    (path,) = find_offline_runs(tmp_path)
    read = read_offline_run(path)
    key = "rewards/judge/score/histogram"
    assert read.x_axis(key) == "train/global_step"
    assert [row["_step"] for row in read.history if key in row] == [2, 5]  # W&B's own
    assert sorted(read.histograms[key]) == [5, 10]  # the trainer's, as the means are
    steps = dict(read.steps("train/global_step"))
    assert steps[10][key] == histogram
    assert steps[10]["rewards/judge/score/mean"] == 0.5
