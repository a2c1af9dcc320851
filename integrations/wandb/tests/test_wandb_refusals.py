"""What W&B can never take: cleaned where it is text, refused where it is a name.

A lone surrogate (an emoji cut in half by a tokenizer) in a table cell used to make
``wandb.Html`` fail on every attempt, and a table key with ``..`` in it is refused by W&B
as an artifact path: behind a `BackgroundSink`, either blocked every later step. Now the
HTML page carries the surrogate as a character reference, and a bad key is refused with
`InvalidInputError`, which the BackgroundSink sets aside while delivery goes on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import wandb

from gradewire import BackgroundSink, InvalidInputError, Table
from gradewire_wandb import HTML_SUFFIX, WandbSink, find_offline_runs, read_offline_run

CUT = "cut emoji \ud83d"  # the first half of U+1F600

# Each refused by W&B itself for a table (checked below against a bare wandb run).
BAD_TABLE_KEYS = ["a/../b", "../b", "/x", "C:x", "a:b", "a\\..\\b", "\\x", "a\x00b"]
# Odd, but W&B takes them: the sink must not refuse them.
ODD_TABLE_KEYS = ["a/..b", "a/..", "...", "x/c:y", "a/./b", "a//b", "é/ü", "a b"]


def _table(*cells: str) -> Table:
    table = Table(initial_headers=["completion"])
    for cell in cells:
        table.add_row([cell])
    return table


def test_the_sink_refuses_exactly_the_table_keys_w_and_b_refuses(tmp_path: Path) -> None:
    run = wandb.init(dir=tmp_path / "bare", mode="offline", project="tests")
    try:
        for step, key in enumerate(BAD_TABLE_KEYS):
            with pytest.raises(Exception):  # noqa: B017, PT011  # whatever W&B raises
                run.log({key: wandb.Table(columns=["c"], data=[["x"]])}, step=step)
        for step, key in enumerate(ODD_TABLE_KEYS, start=len(BAD_TABLE_KEYS)):
            run.log({key: wandb.Table(columns=["c"], data=[["x"]])}, step=step)
    finally:
        run.finish()
    sink = WandbSink(dir=tmp_path / "sink", mode="offline", project="tests", html=True)
    try:
        for step, key in enumerate(BAD_TABLE_KEYS):
            with pytest.raises(InvalidInputError, match="rename the key"):
                sink.log({key: _table("x")}, step)
        for step, key in enumerate(ODD_TABLE_KEYS):
            sink.log({key: _table("x")}, step)
        with pytest.raises(InvalidInputError, match="surrogate"):
            sink.log({f"score{CUT[-1]}": 1.0}, 100)  # no key W&B can encode holds one
        with pytest.raises(InvalidInputError, match="surrogate"):
            sink.log_config({f"lr{CUT[-1]}": 0.1})
        sink.log({"a/../b": 1.0}, 101)  # a number's key is no file path: W&B takes it
    finally:
        sink.close()


def test_background_wandb_sink_delivers_every_step_after_a_bad_cell_and_a_bad_key(
    tmp_path: Path,
) -> None:
    sink = WandbSink(dir=tmp_path, mode="offline", project="tests", html=True)
    background = BackgroundSink(sink, spill_dir=tmp_path / "spill", exit_timeout=None)
    for step in range(20):
        logs = {"score/mean": step / 20, "samples": _table(f"answer {step}")}
        if step == 1:
            logs["samples"] = _table(f"answer {step}", CUT)
        if step == 2:
            logs["a/../b"] = _table("x")
        background.log(logs, step)
    report = background.flush(timeout=120)
    assert report.delivered == 19
    assert report.rejected == 1
    (rejection,) = report.rejections
    assert rejection.step == 2
    assert "outside its folder" in rejection.error
    background.close()
    assert background.report is not None
    assert background.report.spill_path is None
    (path,) = find_offline_runs(tmp_path)
    run = read_offline_run(path)
    steps = [row["_step"] for row in run.history]
    assert steps == [s for s in range(20) if s != 2]  # every later step arrived, in order
    (page_ref,) = [row[f"samples{HTML_SUFFIX}"] for row in run.history if row["_step"] == 1]
    page = run.html[f"samples{HTML_SUFFIX}"][1]
    assert run.media_file(page_ref).read_text(encoding="utf-8") == page
    assert "cut emoji &#55357;" in page  # the half character as a reference, as MLflow's
    (table_ref,) = [row["samples"] for row in run.history if row["_step"] == 1]
    assert run.table(table_ref).to_dict()["data"] == [["answer 1"], [CUT]]  # the cell as logged


def test_the_wandb_target_takes_no_settings_from_the_spill_files():
    from gradewire_wandb._spill_target import sink_for_target

    planted = {
        "kind": "wandb",
        "run": {"project": "p", "id": "abc"},
        "init": {"settings": {"base_url": "http://127.0.0.1:9"}, "entity": "e", "tags": ["t"]},
    }
    sink = sink_for_target(planted, closed=True)
    kwargs = sink._source.init_kwargs  # type: ignore[attr-defined]
    assert "settings" not in kwargs  # it would send the API key to that base_url
    assert "tags" not in kwargs  # only the plain values the sink itself writes
    assert (kwargs["entity"], kwargs["id"], kwargs["resume"]) == ("e", "abc", "allow")
