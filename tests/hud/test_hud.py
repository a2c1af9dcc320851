"""gradewire.hud beyond what HUD itself does: the native boundary, the judge endpoint, and the
deliberate differences (what both sides share is in tests/compat, run against HUD too)."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

import gradewire
from gradewire import (
    Grade,
    GradingError,
    InvalidInputError,
    InvalidTypeError,
    ModelCallError,
    OutputParserException,
    StringThread,
    hud,
)
from gradewire.hud import (
    BashGrader,
    Grader,
    LLMJudgeGrader,
    SubScore,
    combine,
    combine_all,
    combine_any,
)
from gradewire.hud._judge import shared_judge_model
from support.hud_helpers import PASSING_TEST, judge_at, login_home, mistake, requirement
from support.judge_scripts import last_user, sections, verdict
from support.judge_server import chat, error

DEAD_URL = "http://127.0.0.1:9/v1"  # the discard port: nothing answers there


def group_running(pgid: int) -> bool:
    """Whether any live process (zombies aside) is in process group ``pgid``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # ended while we looked
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            return True
    return False


@pytest.fixture
def judge(monkeypatch, judge_server, judge_rules):
    judge_at(monkeypatch, judge_server.base_url)
    return judge_rules


# --- the module ----------------------------------------------------------------------


def test_public_names():
    assert hud.__all__ == sorted(hud.__all__)
    assert set(hud.__all__) <= set(dir(hud))
    for name in ["exact_match", "numeric_match", "normalize", "f1_score", "contains_any"]:
        assert getattr(hud, name) is getattr(gradewire, name)
    # HUD's result models, combinators and class-method graders are HUD's names: they live
    # here only, and the root says where they went.
    for name in ["SubScore", "EvaluationResult", "combine", "combine_any", "BashGrader"]:
        assert getattr(hud, name) is not None
        with pytest.raises(AttributeError, match=r"gradewire\.hud"):
            getattr(gradewire, name)
    assert "_combine_subscores" in hud.__all__


def test_import_gradewire_leaves_the_hud_module_out():
    code = (
        "import sys, gradewire\n"
        "print(sorted(m for m in sys.modules if m.startswith('gradewire') and 'hud' in m))\n"
        "import gradewire.hud\n"
        "print(gradewire.hud.BashGrader.name)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "BashGrader"]


# --- Grader ---------------------------------------------------------------------------


class Echo(Grader):
    """Returns what it is told to, to test what `grade` makes of it."""

    name = "echo"

    @classmethod
    async def compute_score(cls, result=None, **kwargs):
        return result


async def test_grade_applies_weight_and_name_and_records_parameters():
    given = SubScore(name="inner", value=0.5, info={"detail": "kept"})
    result = await Echo.grade(weight=0.25, name="renamed", result=given, note="n")
    assert (result.name, result.value, result.weight) == ("renamed", 0.5, 0.25)
    assert result.info["detail"] == "kept"
    assert result.info["_parameters"] == {"result": given.model_dump(mode="json"), "note": "n"}
    # As in HUD, the result takes the grader's name unless the caller names it.
    assert (await Echo.grade(weight=1.0, result=given)).name == "echo"
    assert (await Echo.grade(weight=1.0, name="", result=given)).name == "echo"


async def test_legacy_float_and_pair_returns_become_subscores():
    plain = await Echo.grade(weight=2.0, result=0.75)
    assert isinstance(plain, SubScore)
    assert (plain.name, plain.value, plain.weight) == ("echo", 0.75, 2.0)
    assert type(plain.value) is float
    pair = await Echo.grade(weight=1.0, result=(1, {"stdout": "ok"}))
    assert (pair.value, pair.info["stdout"]) == (1.0, "ok")
    assert set(pair.info) == {"stdout", "_parameters"}
    bare_pair = await Echo.grade(weight=1.0, result=(0.0, None))
    assert bare_pair.value == 0.0
    assert (await Echo.grade(weight=1.0, result=np.float32(0.5))).value == 0.5
    native = Grade(0.5, "native", "why", children=[Grade(1.0, "child")], info={"k": 1})
    converted = await Echo.grade(weight=1.0, result=native)
    assert isinstance(converted, SubScore)
    assert (converted.name, converted.value) == ("echo", 0.5)
    assert converted.children == [SubScore(name="child", value=1.0)]
    assert (converted.info["k"], converted.info["reasoning"]) == (1, "why")


@pytest.mark.parametrize(
    ("result", "error", "message"),
    [
        (None, TypeError, "NoneType"),
        ((1.0, 2.0, 3.0), ValueError, "too many values"),
        ((1.0, "info"), ValidationError, "info"),
        (1.5, ValidationError, "less than or equal to 1"),
        (float("nan"), ValidationError, "value"),
        (Grade(2.0, "unbounded"), ValidationError, "less than or equal to 1"),
    ],
)
async def test_results_that_are_no_score_are_refused_as_hud_refuses_them(result, error, message):
    with pytest.raises(error, match=message):
        await Echo.grade(weight=1.0, result=result)


async def test_a_str_score_is_read_as_a_number_as_in_hud():
    assert (await Echo.grade(weight=1.0, result="0.5")).value == 0.5


async def test_a_plain_classmethod_compute_score_also_works():
    class Synchronous(Grader):
        @classmethod
        def compute_score(cls, **kwargs):
            return 0.5

    assert (await Synchronous.grade(weight=1.0)).value == 0.5


def test_names():
    class Unnamed(Grader):
        pass

    class Named(Grader):
        name = "named"

    class Child(Named):
        pass

    assert Grader.name == "BaseGrader"  # HUD's
    assert (Unnamed.name, Named.name, Child.name) == ("Unnamed", "named", "named")
    assert (BashGrader.name, LLMJudgeGrader.name) == ("BashGrader", "LLMJudgeGrader")
    with pytest.raises(InvalidTypeError, match="name must be a non-empty str"):

        class Broken(Grader):
            name = 3


async def test_parameters_that_cannot_be_json_are_placeholders_as_in_hud():
    loop = [1]
    loop.append(loop)
    result = await Echo.grade(
        weight=1.0,
        result=1.0,
        numbers=(np.int64(3), 0.5, float("nan")),
        keys={2: "int", None: "none"},
        blob=b"\x00",
        loop=loop,
    )
    parameters = result.info["_parameters"]
    assert parameters["numbers"][:2] == ["<int64: not serializable>", 0.5]
    assert math.isnan(parameters["numbers"][2])
    assert parameters["keys"] == {"2": "int", "None": "none"}
    assert parameters["blob"] == "\x00"
    assert parameters["loop"] == "<list: not serializable>"  # a cycle
    assert parameters["result"] == 1.0


# --- BashGrader -----------------------------------------------------------------------


async def test_exit_code_zero_scores_one(tmp_path):
    result = await BashGrader.grade(weight=0.5, command="echo out; echo err >&2", cwd=tmp_path)
    assert (result.name, result.value, result.weight) == ("BashGrader", 1.0, 0.5)
    info = result.info
    assert (info["exit_code"], info["stdout"], info["stderr"]) == (0, "out\n", "err\n")
    assert (info["timed_out"], info["command"], info["cwd"]) == (
        False,
        "echo out; echo err >&2",
        str(tmp_path),
    )
    assert info["_parameters"] == {"command": "echo out; echo err >&2", "cwd": str(tmp_path)}


async def test_a_failing_command_scores_zero(tmp_path):
    result = await BashGrader.grade(
        weight=1.0, command="echo broken >&2; exit 3", cwd=str(tmp_path)
    )
    assert result.value == 0.0
    assert (result.info["exit_code"], result.info["stderr"]) == (3, "broken\n")


async def test_commands_run_in_a_login_shell_in_cwd(tmp_path, monkeypatch):
    login_home(tmp_path, monkeypatch)
    command = 'test "$GRADEWIRE_LOGIN_PROFILE_READ" = yes && pwd && command -v pytest'
    result = await BashGrader.grade(weight=1.0, command=command, cwd=str(tmp_path))
    assert result.value == 1.0, result.info
    where, pytest_path = result.info["stdout"].split()
    assert where == str(tmp_path)
    assert pytest_path == os.path.join(os.path.dirname(sys.executable), "pytest")


async def test_the_command_reads_an_empty_stdin():
    result = await BashGrader.grade(weight=1.0, command="cat; echo done", timeout_seconds=60)
    assert (result.value, result.info["stdout"]) == (1.0, "done\n")


async def test_a_timeout_scores_zero_and_ends_the_command(tmp_path):
    pid_file = tmp_path / "pid"
    # "started" is written before the pid file, so once the pid file is there the output
    # must hold it; 2 s leaves a loaded machine time to start bash.
    command = f"echo started; echo $$ > {pid_file}; sleep 60"
    result = await BashGrader.grade(weight=1.0, command=command, timeout_seconds=2)
    assert result.value == 0.0
    info = result.info
    assert (info["timed_out"], info["exit_code"], info["timeout"]) == (True, None, 2)
    assert info["stdout"] == "started\n"  # what it wrote before the kill is kept
    assert not group_running(int(pid_file.read_text()))


async def test_default_timeout_is_hud_s_and_a_subclass_can_change_it():
    class Quick(BashGrader):
        default_timeout = 0.3

    assert BashGrader.default_timeout == 600.0
    result = await Quick.grade(weight=1.0, command="sleep 60")
    assert (result.value, result.info["timed_out"], result.info["timeout"]) == (0.0, True, 0.3)
    assert result.name == "BashGrader"


async def test_a_command_that_cannot_run_scores_zero_with_the_error(tmp_path):
    missing = tmp_path / "missing"
    result = await BashGrader.grade(weight=1.0, command="true", cwd=str(missing))
    assert result.value == 0.0
    assert result.info["exit_code"] is None
    assert f"cwd {str(missing)!r} does not exist" in result.info["error"]
    assert result.info["stderr"] == result.info["error"]
    # The native grader refuses to call this a failed answer.
    native = gradewire.CommandGrader("tests", "true", cwd=str(missing))
    with pytest.raises(GradingError, match="does not exist"):
        await native.grade(StringThread([]))


async def test_without_bash_the_score_is_zero_with_the_error(tmp_path):
    class NoBash(BashGrader):
        shell = str(tmp_path / "no" / "bash")

    result = await NoBash.grade(weight=1.0, command="true")
    assert result.value == 0.0
    assert "not found" in result.info["error"]
    assert result.info["exit_code"] is None


async def test_command_not_found_is_a_failure_not_an_error():
    result = await BashGrader.grade(weight=1.0, command="gradewire-no-such-program")
    assert (result.value, result.info["exit_code"]) == (0.0, 127)
    assert "not found" in result.info["stderr"]


async def test_output_is_kept_whole_as_hud_keeps_it():
    result = await BashGrader.grade(weight=1.0, command="head -c 200000 /dev/zero | tr '\\0' x")
    assert result.info["stdout"] == "x" * 200_000


async def test_a_subclass_can_cap_the_output():
    class Short(BashGrader):
        output_cap = 1000

    result = await Short.grade(weight=1.0, command="head -c 100000 /dev/zero | tr '\\0' x")
    stdout = result.info["stdout"]
    assert result.value == 1.0
    assert len(stdout) <= 1000
    assert "chars cut" in stdout
    assert stdout.startswith("xxx")
    assert stdout.endswith("xxx")


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({}, InvalidTypeError, "requires command="),
        ({"command": ["pytest", "-q"]}, InvalidTypeError, "shell string"),
        ({"command": "  "}, InvalidInputError, "command is empty"),
        (
            {"command": "true", "timeout": 5},
            InvalidTypeError,
            "unexpected keyword arguments: timeout",
        ),
        ({"command": "true", "timeout_seconds": 0}, InvalidInputError, "positive"),
    ],
)
async def test_bad_bash_arguments_are_refused(arguments, error, message):
    with pytest.raises(error, match=message):
        await BashGrader.grade(weight=1.0, **arguments)


# --- LLMJudgeGrader -------------------------------------------------------------------


async def test_rubric_with_a_penalty(judge, judge_server):
    judge.when(requirement("Correct"), verdict("MET", "right"))
    judge.when(requirement("Cites a source"), verdict("MET", "cites Smith"))
    judge.when(mistake("Invents a citation"), verdict("MET", "Smith 2031 does not exist"))
    criteria = ["Correct", ("Cites a source", 2.0), ("Invents a citation", -1.0)]
    result = await LLMJudgeGrader.grade(
        weight=0.5, answer="Rayleigh scattering [Smith 2031].", criteria=criteria, question="Why?"
    )
    assert result.value == pytest.approx((1 + 2 - 1) / 3)
    assert result.weight == 0.5
    assert [(c.name, c.value, c.weight) for c in result.children] == [
        ("Correct", 1.0, 1.0),
        ("Cites a source", 1.0, 2.0),
        ("Invents a citation", 1.0, -1.0),
    ]
    assert result.children[2].info["reason"] == "Smith 2031 does not exist"
    assert result.info["model"] == "claude-sonnet-5-5"  # hud 0.6.21's default
    assert result.info["usage"]["judge_calls"] == 3
    assert result.info["_parameters"]["criteria"] == [
        "Correct",
        ["Cites a source", 2.0],
        ["Invents a citation", -1.0],
    ]
    assert len(judge_server.chat_requests) == 3


async def test_answer_is_text_and_the_question_optional(judge, judge_server):
    judge.when(requirement("Is a number"), verdict("MET"))
    result = await LLMJudgeGrader.grade(weight=1.0, answer=42, criteria=["Is a number"])
    assert result.value == 1.0
    [request] = judge_server.chat_requests
    assert sections(last_user(request), "answer") == ["42"]
    assert sections(last_user(request), "question") == ["(no user question)"]


async def test_a_judge_model_of_your_own(monkeypatch, judge_server, judge_rules, make_judge):
    judge_at(monkeypatch, DEAD_URL)  # proves the environment's endpoint is not used
    judge_rules.when(requirement("Polite"), verdict("UNMET", "curt"))
    own = make_judge("my-judge")
    result = await LLMJudgeGrader.grade(weight=1.0, answer="No.", criteria=["Polite"], judge=own)
    assert (result.value, result.info["model"]) == (0.0, "my-judge")
    assert result.info["_parameters"]["judge"] == "<OpenAIChatModel: not serializable>"
    assert [r.json["model"] for r in judge_server.chat_requests] == ["my-judge"]


async def test_calls_share_one_client_per_endpoint(judge, judge_server, monkeypatch):
    judge.when(requirement("Short"), verdict("MET"))
    for _ in range(3):
        await LLMJudgeGrader.grade(weight=1.0, answer="ok", criteria=["Short"])
    # One client keeps its connection alive for the next call; a client per call would not.
    assert judge_server.connections_opened == 1
    first = shared_judge_model("claude-haiku-4-5")
    assert shared_judge_model("claude-haiku-4-5") is first
    assert shared_judge_model("other-model") is not first
    monkeypatch.setenv("OPENAI_BASE_URL", DEAD_URL)
    moved = shared_judge_model("claude-haiku-4-5")
    assert moved is not first
    assert moved.base_url == DEAD_URL


async def test_concurrent_calls_keep_to_the_endpoint_limit(judge, judge_server, make_judge):
    judge.when(requirement("A"), chat(verdict("MET"), delay=0.02))
    judge.when(requirement("B"), chat(verdict("UNMET"), delay=0.02))
    # Another client of the same endpoint asks for at most 3 calls in flight: that limit
    # binds the HUD-style calls too.
    strict = make_judge("claude-haiku-4-5", max_concurrency=3)
    results = await asyncio.gather(
        *(
            LLMJudgeGrader.grade(
                weight=1.0, answer=str(i), criteria=["A", "B"], model="claude-haiku-4-5"
            )
            for i in range(10)
        )
    )
    assert [r.value for r in results] == [0.5] * 10
    assert len(judge_server.chat_requests) == 20
    assert judge_server.max_in_flight <= 3
    del strict


async def test_a_judge_endpoint_of_its_own(monkeypatch, judge_server, judge_rules):
    judge_at(monkeypatch, DEAD_URL, api_key="sk-openai-secret")
    monkeypatch.setenv("GRADEWIRE_JUDGE_BASE_URL", judge_server.base_url)
    judge_rules.when(requirement("Correct"), verdict("MET"))
    result = await LLMJudgeGrader.grade(weight=1.0, answer="4", criteria=["Correct"])
    assert result.value == 1.0
    [request] = judge_server.chat_requests
    assert "authorization" not in request.headers  # the OpenAI key stays with OpenAI
    monkeypatch.setenv("GRADEWIRE_JUDGE_API_KEY", "gateway-key")
    await LLMJudgeGrader.grade(weight=1.0, answer="4", criteria=["Correct"])
    assert judge_server.chat_requests[-1].headers["authorization"] == "Bearer gateway-key"


async def test_a_judge_that_cannot_answer_raises(judge):
    # No rule matches: the server answers 400, which is not retried.
    with pytest.raises(ModelCallError, match="400"):
        await LLMJudgeGrader.grade(weight=1.0, answer="x", criteria=["Unscripted"])


async def test_an_unreadable_verdict_raises(judge, judge_server):
    judge_server.script("I think it is fine.", "Still no JSON, sorry.")
    with pytest.raises(OutputParserException):
        await LLMJudgeGrader.grade(weight=1.0, answer="x", criteria=["Anything"])
    assert len(judge_server.chat_requests) == 2  # the question and one repair request


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({}, InvalidInputError, "needs criteria="),
        ({"criteria": []}, InvalidInputError, "criteria is empty"),
        ({"criteria": [("Rude", -1.0)]}, InvalidInputError, "positive weight"),
        (
            {"criteria": ["A"], "rubric": "x"},
            InvalidTypeError,
            "unexpected keyword arguments: rubric",
        ),
        ({"criteria": ["A"], "model": ""}, InvalidInputError, "model must be"),
    ],
)
async def test_bad_judge_arguments_are_refused(judge, judge_server, arguments, error, message):
    with pytest.raises(error, match=message):
        await LLMJudgeGrader.grade(weight=1.0, answer="x", **arguments)
    assert judge_server.chat_requests == []


# --- combining HUD-style calls --------------------------------------------------------


class Fixed(Grader):
    name = "fixed"

    @classmethod
    async def compute_score(cls, value: float = 1.0, **kwargs):
        return value


async def test_combine_normalises_weights_keeps_penalties_and_names_apart():
    with pytest.warns(UserWarning, match="weights sum to 4.0000"):
        result = await combine(
            BashGrader.grade(weight=2.0, command="true"),
            BashGrader.grade(weight=1.0, command="false"),
            Fixed.grade(weight=1.0, value=1.0),
            Fixed.grade(weight=-0.25, name="unsafe", value=1.0),
        )
    subscores = result.subscores
    assert [s.name for s in subscores] == ["BashGrader-1", "BashGrader-2", "fixed", "unsafe"]
    assert [s.weight for s in subscores] == pytest.approx([0.5, 0.25, 0.25, -0.25])
    assert result.reward == pytest.approx(0.5 + 0.25 - 0.25)
    assert subscores[1].info["_parameters"] == {"command": "false"}


async def test_a_failing_judge_fails_combine_and_ends_the_command(tmp_path, judge):
    pid_file = tmp_path / "pid"

    async def after_the_command_started(request):
        while not pid_file.exists():
            await asyncio.sleep(0.01)
        return error(400, "the judge refuses")

    judge.when(requirement("Anything"), after_the_command_started)
    with pytest.raises(ModelCallError):
        await combine(
            BashGrader.grade(weight=0.5, command=f"echo $$ > {pid_file}; sleep 60"),
            LLMJudgeGrader.grade(weight=0.5, answer="x", criteria=["Anything"]),
        )
    assert not group_running(int(pid_file.read_text()))


async def test_either_way_of_passing_tests_as_one_subscore(tmp_path, monkeypatch):
    login_home(tmp_path, monkeypatch)
    (tmp_path / "test_it.py").write_text(PASSING_TEST)
    monkeypatch.chdir(tmp_path)  # pytest passes; there is no Makefile, so `make test` fails
    via_pytest, via_make = await asyncio.gather(
        BashGrader.grade(weight=1.0, command="pytest -q"),
        BashGrader.grade(weight=1.0, command="make test"),
    )
    either = combine_any(0.7, [via_pytest, via_make], name="tests")
    both = combine_all(0.3, [via_pytest, via_make])
    assert (either.value, both.value) == (1.0, 0.0)
    assert [c.name for c in either.children] == ["BashGrader-1", "BashGrader-2"]
    nested = combine_all(1.0, [either, combine_any(1.0, [via_make])], name="strict")
    assert nested.value == 0.0
    assert nested.children[0].children[0].info["exit_code"] == 0
    result = await combine(either, both)
    assert result.reward == pytest.approx(0.7)
    assert not math.isnan(result.reward)
