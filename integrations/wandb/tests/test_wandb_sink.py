"""WandbSink against W&B in offline mode, read back from the run files it leaves."""

from __future__ import annotations

import logging
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import wandb

import gradewire_wandb
from gradewire import InvalidInputError, InvalidTypeError, SinkError, Table
from gradewire.core import LogValue
from gradewire.sinks import BaseSink, Sink
from gradewire_wandb import (
    DEFAULT_TABLE_POLICY,
    HTML_SUFFIX,
    OfflineRun,
    WandbSink,
    find_offline_runs,
    read_offline_run,
)
from support.sink_conformance import SCRIPT, assert_table_matches

BIG = wandb.Table.MAX_ROWS + 1


class Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append((record.levelno, record.getMessage()))

    def warnings(self, text: str) -> list[str]:
        return [m for level, m in self.messages if level == logging.WARNING and text in m]


@dataclass
class Recorded:
    run: OfflineRun
    history: list[tuple[int, dict[str, LogValue]]]
    warnings: Captured
    sink: WandbSink


def record(folder: Path, sink: WandbSink, steps: list[tuple[int, dict[str, Any]]]) -> Recorded:
    """Log ``steps`` (and a config) through ``sink``, close it, and read the run back."""
    captured = Captured()
    logger = logging.getLogger("gradewire")
    logger.addHandler(captured)
    try:
        sink.log_config({"seed": 7})
        for step, logs in steps:
            sink.log(logs, step)
        sink.close()
    finally:
        logger.removeHandler(captured)
    (path,) = find_offline_runs(folder)
    run = read_offline_run(path)
    history = run.steps(sink.step_metric or "_step")
    return Recorded(run, history, captured, sink)


def scored(n: int) -> Table:
    """``n`` rows whose Score rises with the row, except a best row in the middle."""
    table = Table(initial_headers=["Completion", "Score"])
    for i in range(n):
        table.add_row([f"completion {i}", 2.0 if i == n // 2 else i / n])
    return table


# --- a run the sink starts, with a prefix and its own x axis -------------------------


@pytest.fixture(scope="module")
def stepped(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    folder = tmp_path_factory.mktemp("stepped")
    sink = WandbSink(
        dir=folder,
        mode="offline",
        project="tests",
        config={"grader": "judge"},
        prefix="rewards",
        step_metric="grader_step",
        table_policy=None,
    )
    small = Table(initial_headers=["Completion", "Score"]).add_row(["late", 0.5])
    return record(
        folder,
        sink,
        [
            (3, {"judge/score/mean": 0.5, "judge/samples": scored(BIG)}),
            (7, {"judge/score/mean": 0.75, "judge/samples": small}),
        ],
    )


def test_config_of_init_and_log_config_is_in_the_run(stepped: Recorded) -> None:
    assert stepped.run.config["grader"] == "judge"
    assert stepped.run.config["seed"] == 7


def test_step_metric_is_defined_and_logged_instead_of_the_step(stepped: Recorded) -> None:
    assert stepped.run.step_metrics == {"rewards/*": "grader_step"}
    assert stepped.run.x_axis("rewards/judge/score/mean") == "grader_step"
    assert stepped.run.x_axis("grader_step") == "_step"
    rows = stepped.run.history
    assert [row["grader_step"] for row in rows] == [3, 7]
    # No step= was passed: W&B numbered the rows itself.
    assert [row["_step"] for row in rows] == [0, 1]
    assert rows[1]["rewards/judge/score/mean"] == 0.75


def test_a_table_longer_than_max_rows_is_sampled_with_a_warning(stepped: Recorded) -> None:
    (message,) = stepped.warnings.warnings("wandb.Table.MAX_ROWS")
    assert f"{BIG} rows" in message
    table = dict(stepped.history)[3]["rewards/judge/samples"]
    assert isinstance(table, Table)
    assert len(table) == wandb.Table.MAX_ROWS
    completions = table.column("Completion")
    # W&B alone would keep the first MAX_ROWS rows; the sample keeps the best, the last
    # and the worst row instead.
    assert f"completion {BIG - 1}" in completions
    assert f"completion {BIG // 2}" in completions
    assert "completion 0" in completions
    assert max(s for s in table.column("Score") if isinstance(s, float)) == 2.0


def test_a_table_key_logged_at_several_steps_is_readable_per_step(stepped: Recorded) -> None:
    steps = dict(stepped.history)
    late = steps[7]["rewards/judge/samples"]
    assert isinstance(late, Table)
    assert late.to_dict() == {"columns": ["Completion", "Score"], "data": [["late", 0.5]]}
    paths = [row["rewards/judge/samples"]["path"] for row in stepped.run.history]
    assert len(set(paths)) == 2, "each step has a table file of its own"


# --- html, mixed columns, non-finite numbers -----------------------------------------


@pytest.fixture(scope="module")
def paged(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    folder = tmp_path_factory.mktemp("paged")
    sink = WandbSink(dir=folder, mode="offline", project="tests", html=True, table_policy=None)
    first = Table(initial_headers=["Completion", "Note", "Score"])
    first.add_row([SCRIPT, "Q&A ✓", 1.0])
    first.add_row(["fine", 3, None])  # Note mixes text and a number
    first.add_row(["nan", None, math.nan])
    return record(
        folder,
        sink,
        [(1, {"judge/rows": first, "judge/score/max": math.inf, "judge/score/min": -math.inf})],
    )


def test_html_page_is_the_escaped_table_byte_for_byte(paged: Recorded) -> None:
    (ref,) = [row[f"judge/rows{HTML_SUFFIX}"] for row in paged.run.history]
    written = paged.run.media_file(ref).read_bytes()
    # As logged: the Note column mixes types, so it went to W&B (and to the page) as text.
    expected = Table(initial_headers=["Completion", "Note", "Score"])
    expected.add_row([SCRIPT, "Q&A ✓", 1.0])
    expected.add_row(["fine", "3", None])
    expected.add_row(["nan", None, math.nan])
    assert written == expected.to_html().encode("utf-8")
    assert b"<script" not in written
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in written
    assert b"stylesheet" not in written  # inject=False: nothing added


def test_a_column_of_mixed_types_is_logged_as_text(paged: Recorded) -> None:
    (message,) = paged.warnings.warnings("mixes value types")
    assert "'Note'" in message
    table = dict(paged.history)[1]["judge/rows"]
    assert isinstance(table, Table)
    assert table.column("Note") == ["Q&A ✓", "3", None]
    score = table.column("Score")
    assert score[0] == 1.0
    assert score[1] is None
    assert isinstance(score[2], float)
    assert math.isnan(score[2])


def test_infinities_are_kept_as_w_and_b_stores_them(paged: Recorded) -> None:
    row = paged.run.history[0]
    assert row["judge/score/max"] == math.inf
    assert row["judge/score/min"] == -math.inf
    assert paged.run.summary["judge/score/max"] == math.inf


# --- a run someone else started --------------------------------------------------------


@pytest.fixture
def own_run(tmp_path: Path) -> Iterator[wandb.Run]:
    run = wandb.init(dir=tmp_path, mode="offline", project="tests")
    yield run
    if wandb.run is run:
        run.finish()


def test_an_existing_run_is_used_and_left_running(
    own_run: wandb.Run, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    own_run.log({"train/loss": 1.0}, step=10)
    sink = WandbSink(project="ignored", config={"lr": 0.1})
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        sink.log({"judge/score/mean": 0.5}, step=10)  # the trainer's open row
    assert "ignores ['project']" in caplog.text
    assert sink.run is own_run
    assert not sink.started_run
    own_run.log({"train/loss": 2.0}, step=20)
    with pytest.raises(InvalidInputError, match="already at step 20"):
        sink.log({"judge/score/mean": 0.25}, step=15)
    sink.log({"judge/score/mean": 0.75}, step=20)
    sink.close()
    assert wandb.run is own_run, "close() must not finish a run the sink did not start"
    own_run.log({"train/loss": 3.0}, step=21)
    own_run.finish()
    run = read_offline_run(find_offline_runs(tmp_path)[0])
    rows = {row["_step"]: row for row in run.history}
    assert sorted(rows) == [10, 20, 21]
    assert rows[10]["judge/score/mean"] == 0.5
    assert rows[10]["train/loss"] == 1.0
    assert rows[20]["judge/score/mean"] == 0.75
    assert run.config["lr"] == 0.1


def test_a_step_metric_sink_shares_a_run_with_a_trainer(own_run: wandb.Run, tmp_path: Path) -> None:
    sink = WandbSink(step_metric="grader_step")
    own_run.log({"train/loss": 1.0})
    sink.log({"judge/score/mean": 0.5, "judge/samples": scored(3)}, step=3)
    own_run.log({"train/loss": 2.0})
    sink.log({"judge/score/mean": 0.75}, step=6)
    sink.close()
    own_run.finish()
    run = read_offline_run(find_offline_runs(tmp_path)[0])
    rows = run.history
    assert [row.get("train/loss") for row in rows] == [1.0, None, 2.0, None]
    assert [row.get("grader_step") for row in rows] == [None, 3, None, 6]
    # Without a prefix, each key the sink logs gets the step metric, and nothing else.
    assert run.step_metrics == {
        "judge/score/mean": "grader_step",
        "judge/samples": "grader_step",
    }
    assert run.x_axis("train/loss") == "_step"
    table = run.steps("grader_step")[0][1]["judge/samples"]
    assert isinstance(table, Table)
    assert_table_matches(table, scored(3))


def test_a_run_finished_by_its_owner_raises_sink_error(own_run: wandb.Run) -> None:
    sink = WandbSink(run=own_run)
    own_run.finish()
    with pytest.raises(SinkError, match="finished"):
        sink.log({"a": 1.0}, step=1)
    sink.close()


# --- no run at all --------------------------------------------------------------------


def test_a_non_zero_rank_starts_no_run_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "1")
    folder = tmp_path / "w"
    sink = WandbSink(dir=folder, mode="offline", project="tests")
    sink.log_config({"a": 1})
    sink.log({"judge/score/mean": 0.5, "judge/samples": scored(3)}, step=1)
    sink.log_many([(2, {"judge/score/mean": 0.5})])
    sink.close()
    assert not sink.active
    assert sink.run is None
    assert wandb.run is None
    assert not folder.exists()


def test_importing_and_an_inactive_sink_never_import_wandb(tmp_path: Path) -> None:
    script = (
        "import sys, gradewire_wandb\n"
        "sink = gradewire_wandb.WandbSink(mode='offline', dir=sys.argv[1])\n"
        "sink.log({'a': 1.0}, step=0)\n"
        "sink.close()\n"
        "assert 'wandb' not in sys.modules, 'wandb was imported'\n"
    )
    env = {**os.environ, "RANK": "2"}
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, check=True, timeout=60)
    assert list(tmp_path.iterdir()) == []


def test_a_reserved_key_is_refused_before_a_run_starts(tmp_path: Path) -> None:
    sink = WandbSink(dir=tmp_path, mode="offline", project="tests", step_metric="grader_step")
    with pytest.raises(InvalidInputError, match="'_step'"):
        sink.log({"_step": 1.0}, step=1)
    with pytest.raises(InvalidInputError, match="'grader_step'"):
        sink.log({"grader_step": 1.0}, step=1)
    assert sink.run is None
    sink.close()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"mode": "dryrun"}, InvalidInputError, "mode"),
        ({"project": "a", "init_kwargs": {"project": "b"}}, InvalidInputError, "once"),
        ({"init_kwargs": {"config": {}}}, InvalidInputError, "config="),
        ({"init_kwargs": ["project"]}, InvalidTypeError, "init_kwargs"),
        ({"run": object()}, InvalidInputError, "run="),
        ({"prefix": "rewards/"}, InvalidInputError, "prefix"),
        ({"prefix": "a*"}, InvalidInputError, "prefix"),
        ({"prefix": 3}, InvalidTypeError, "prefix"),
        ({"step_metric": "_step"}, InvalidInputError, "step_metric"),
        ({"html": "yes"}, InvalidTypeError, "html"),
        ({"config": [1]}, InvalidTypeError, "config"),
        ({"table_policy": 5}, InvalidTypeError, "table_policy"),
        ({"dir": 3}, InvalidTypeError, "dir"),
    ],
)
def test_bad_arguments_are_refused_at_construction(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        WandbSink(**kwargs)


def test_public_api() -> None:
    assert sorted(gradewire_wandb.__all__) == [
        "DEFAULT_TABLE_POLICY",
        "HTML_SUFFIX",
        "IncompleteRunError",
        "OfflineRun",
        "OfflineRunError",
        "WandbSink",
        "__version__",
        "find_offline_runs",
        "read_offline_run",
    ]
    sink = WandbSink(mode="offline")
    assert isinstance(sink, Sink)
    assert isinstance(sink, BaseSink)
    assert sink.table_policy is DEFAULT_TABLE_POLICY
    assert DEFAULT_TABLE_POLICY.max_rows is not None
    assert DEFAULT_TABLE_POLICY.max_rows < wandb.Table.MAX_ROWS
    sink.close()
