"""HUD's `BashGrader`: real commands through ``/bin/bash -lc``, scored by exit code.

Runs against ``hud.graders`` and ``gradewire.hud`` alike (see `compat_targets`).
"""

from __future__ import annotations

import pytest
from compat_targets import REAL
from hud_target import BashGrader, SubScore, combine

from support.hud_helpers import login_home


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """A fresh ``$HOME``: the login shell reads its profile, not the machine user's."""
    return login_home(tmp_path, monkeypatch)


async def test_a_command_that_exits_zero_scores_one():
    result = await BashGrader.compute_score(command="echo hello")
    assert type(result) is SubScore
    assert (result.name, result.value, result.weight) == ("BashGrader", 1.0, 1.0)
    assert result.info["exit_code"] == 0
    assert result.info["stdout"] == "hello\n"
    assert result.info["stderr"] == ""


async def test_a_failing_command_scores_zero_with_its_output():
    result = await BashGrader.compute_score(command="echo oops >&2; exit 3")
    assert result.value == 0.0
    assert result.info["exit_code"] == 3
    assert result.info["stderr"] == "oops\n"


@pytest.mark.parametrize("command", ["exit 127", "no-such-command-here", "exit 126"])
async def test_cannot_execute_codes_are_ordinary_failures(command):
    result = await BashGrader.compute_score(command=command)
    assert result.value == 0.0
    assert result.info["exit_code"] in (126, 127)


async def test_a_command_is_required():
    with pytest.raises(ValueError, match="requires command"):
        await BashGrader.compute_score()


async def test_a_timeout_scores_zero_and_keeps_the_output_so_far():
    result = await BashGrader.compute_score(
        command="echo progress; echo still working >&2; sleep 5", timeout_seconds=1
    )
    assert result.value == 0.0
    assert result.info["exit_code"] is None
    assert result.info["timed_out"] is True
    assert result.info["timeout"] == 1
    assert result.info["stdout"] == "progress\n"
    assert result.info["stderr"] == "still working\n"


async def test_it_runs_in_cwd_and_in_a_login_shell(tmp_path):
    (tmp_path / "marker.txt").write_text("here")
    result = await BashGrader.compute_score(
        command='cat marker.txt; echo " $GRADEWIRE_LOGIN_PROFILE_READ"', cwd=str(tmp_path)
    )
    assert result.info["stdout"] == "here yes\n"


async def test_a_missing_cwd_scores_zero_as_a_command_that_could_not_run(tmp_path):
    result = await BashGrader.compute_score(command="true", cwd=str(tmp_path / "absent"))
    assert result.value == 0.0
    assert result.info["exit_code"] is None
    assert result.info["timed_out"] is False
    if REAL:
        assert result.info["stderr"] == "/bin/bash not found"  # whatever the reason
    else:
        assert "absent" in result.info["stderr"]


async def test_grade_records_the_call_and_applies_weight_and_name(tmp_path):
    result = await BashGrader.grade(weight=0.5, name="tests", command="true", cwd=str(tmp_path))
    assert (result.name, result.weight, result.value) == ("tests", 0.5, 1.0)
    assert result.info["_parameters"] == {"command": "true", "cwd": str(tmp_path)}


async def test_two_bash_graders_combine_under_distinct_names():
    result = await combine(
        BashGrader.grade(weight=0.5, command="true"),
        BashGrader.grade(weight=0.5, command="false"),
    )
    assert result.reward == 0.5
    first, second = result.subscores
    assert (first.name, first.info["exit_code"]) == ("BashGrader-1", 0)
    assert (second.name, second.info["exit_code"]) == ("BashGrader-2", 1)
    assert result.info == {}


async def test_unknown_arguments():
    if REAL:  # HUD drops them: a misspelt timeout runs with the 600 s default
        result = await BashGrader.compute_score(command="true", timeout=1)
        assert result.value == 1.0
    else:
        with pytest.raises(TypeError, match="timeout"):
            await BashGrader.compute_score(command="true", timeout=1)
