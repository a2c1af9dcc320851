from __future__ import annotations

import pytest

from gradewire import InvalidInputError
from gradewire.sinks._jsonl_sink import JsonlSink
from gradewire.sinks._memory_sink import MemorySink
from gradewire.sinks._rank import RANK_VARIABLES, is_main_process, process_rank


@pytest.fixture(autouse=True)
def _no_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in RANK_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_no_variable_means_rank_zero() -> None:
    assert process_rank() == 0
    assert is_main_process()


@pytest.mark.parametrize("name", RANK_VARIABLES)
def test_each_variable_is_read(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "3")
    assert process_rank() == 3
    assert not is_main_process()


def test_the_first_variable_set_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, name in enumerate(RANK_VARIABLES, start=10):
        monkeypatch.setenv(name, str(value))
    for expected, name in enumerate(RANK_VARIABLES, start=10):
        assert process_rank() == expected
        monkeypatch.delenv(name)
    assert process_rank() == 0


def test_rank_variable_beats_local_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    # On the second node of a job, LOCAL_RANK is 0 but the process is not the main one.
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("RANK", "8")
    assert process_rank() == 8


def test_empty_value_counts_as_unset_and_spaces_are_stripped() -> None:
    assert process_rank({"RANK": "", "SLURM_PROCID": " 2 "}) == 2
    assert process_rank({"RANK": "   "}) == 0


@pytest.mark.parametrize("raw", ["abc", "-1", "1.5", "0x1", "٣", "1 2"])
def test_garbage_names_the_variable(raw: str) -> None:
    with pytest.raises(InvalidInputError, match=r"SLURM_PROCID=.*non-negative integer") as info:
        process_rank({"SLURM_PROCID": raw})
    assert "unset SLURM_PROCID" in str(info.value)


def test_an_explicit_mapping_ignores_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "5")
    assert process_rank({}) == 0
    assert is_main_process({"PMI_RANK": "0"})


def test_sink_on_another_rank_does_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("RANK", "1")
    memory = MemorySink()
    jsonl = JsonlSink(tmp_path / "sub" / "run.jsonl")
    for sink in (memory, jsonl):
        assert not sink.active
        sink.log({"a": 1.0}, 0)
        sink.log_many([(1, {"a": 2.0})])
        sink.log_config({"lr": 0.1})
        sink.close()
        sink.log({"a": 1.0}, 0)  # even after close: every call is a no-op on this rank
    assert memory.steps == []
    assert memory.config == {}
    assert not (tmp_path / "sub").exists()


def test_rank_is_read_once_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    sink = MemorySink()
    monkeypatch.setenv("RANK", "1")
    sink.log({"a": 1.0}, 0)
    assert sink.metric("a") == [(0, 1.0)]


def test_all_ranks_logs_everywhere_and_skips_the_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "not-a-rank")
    with pytest.raises(InvalidInputError, match="RANK"):
        MemorySink()
    sink = MemorySink(all_ranks=True)
    assert sink.active
    sink.log({"a": 1.0}, 0)
    assert sink.metric("a") == [(0, 1.0)]


def test_jsonl_path_can_name_the_rank(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("RANK", "2")
    sink = JsonlSink(tmp_path / "run-{rank}.jsonl", all_ranks=True)
    sink.log({"a": 1.0}, 0)
    sink.close()
    assert sink.path == tmp_path / "run-2.jsonl"
    assert sink.path.exists()
