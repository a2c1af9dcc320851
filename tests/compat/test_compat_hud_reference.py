"""Every code example of HUD's graders page, run as written against HUD and gradewire.hud.

Each example is copied from the reference page; only its import is changed, from
``hud.graders`` to `hud_target` (which gives HUD's names from ``hud.graders`` or from
``gradewire.hud``, see `compat_targets`). What the page leaves to HUD's runtime is set up
around the examples, never inside them:

- ``env``: a stand-in whose ``template()`` decorator returns the task unchanged, and
  `run_task`, which runs a task as HUD does: the first yield is the prompt, the answer is
  sent in, the second yield is the reward.
- The workspace the commands run in (``/workspace``, or the current directory), with a
  trivial test file, and a login profile that puts this venv's ``pytest`` on ``PATH``.
- The judge endpoint: HUD's gateway settings (``HUD_API_KEY``, ``HUD_GATEWAY_URL``) point
  at the loopback judge server, whose verdicts each test scripts.

The one-line examples of the page's "Approaches" table are wrapped in a minimal task; the
``...`` placeholders of its ``combine`` line are filled in.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# --- the page's import, changed from hud.graders to hud_target -------------------------
from hud_target import (
    BashGrader,
    EvaluationResult,
    Grader,
    LLMJudgeGrader,
    SubScore,
    combine,
    combine_all,
    combine_any,
    contains,
    contains_all,
    contains_any,
    exact_match,
    f1_score,
    normalize,
    numeric_match,
)

from conftest import both_formats
from support.hud_helpers import FAILING_TEST, PASSING_TEST, login_home
from support.judge_scripts import last_user


# --- HUD's runtime, reduced to what the examples use ----------------------------------
class StandInEnv:
    """HUD's environment object: ``template()`` registers a task; here it returns it as is."""

    def template(self, *args, **kwargs):
        def register(task):
            return task

        return register


env = StandInEnv()


async def run_task(task, answer, **arguments):
    """Run a task as HUD does: prompt out, answer in, reward out, and the task is over."""
    episode = task(**arguments)
    prompt = await episode.asend(None)
    reward = await episode.asend(answer)
    with pytest.raises(StopAsyncIteration):
        await episode.asend(None)
    return prompt, reward


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The current directory holds a passing test; ``bash -lc`` finds this venv's pytest."""
    login_home(tmp_path, monkeypatch)
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "test_project.py").write_text(PASSING_TEST)
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def judge(hud_gateway):
    """The judge endpoint of the examples is the loopback judge server."""
    return hud_gateway


def shown(text: str) -> str:
    """A line of its own in the judge prompt (a criterion, the question, the answer)."""
    return f"\n{text}\n"


def test_every_name_of_the_import_is_there():
    helpers = [exact_match, contains, contains_any, contains_all, numeric_match, f1_score]
    assert all(callable(helper) for helper in helpers)
    assert normalize("The Answer!") == "answer"
    assert issubclass(BashGrader, Grader)
    assert issubclass(LLMJudgeGrader, Grader)
    assert EvaluationResult.from_float(0.25).reward == 0.25
    assert callable(combine_any)
    assert callable(combine_all)


# --- "Comparison helpers" ---------------------------------------------------------------
@env.template()
async def capital(country: str = "France"):
    answer = yield f"What is the capital of {country}?"
    yield exact_match(answer, "Paris")


async def test_comparison_helper_example():
    prompt, reward = await run_task(capital, "Paris.")
    assert prompt == "What is the capital of France?"
    assert reward == 1.0
    prompt, reward = await run_task(capital, "Lyon", country="Italy")
    assert prompt == "What is the capital of Italy?"
    assert reward == 0.0


# --- "Approaches": plain Python ---------------------------------------------------------
@env.template()
async def triangle():
    answer = yield "How many sides does a triangle have?"
    yield numeric_match(answer, 3)


async def test_plain_python_approach():
    assert (await run_task(triangle, "It has 3 sides."))[1] == 1.0
    assert (await run_task(triangle, "It has 4 sides."))[1] == 0.0


# --- "Approaches": async grader ---------------------------------------------------------
@env.template()
async def make_tests_pass():
    answer = yield "Make the tests pass."
    yield (await BashGrader.grade(weight=1.0, command="pytest -q")).value


async def test_async_grader_approach(project):
    assert (await run_task(make_tests_pass, "done"))[1] == 1.0
    (project / "test_project.py").write_text(FAILING_TEST)
    assert (await run_task(make_tests_pass, "done"))[1] == 0.0


# --- "Approaches": composed (the page's ``...`` filled in) ------------------------------
@env.template()
async def fix_and_explain():
    answer = yield "Fix the bug and explain the fix."
    yield await combine(
        BashGrader.grade(weight=0.6, command="pytest -q"),
        LLMJudgeGrader.grade(weight=0.4, answer=answer, criteria=["Explains the fix"]),
    )


async def test_composed_approach(project, judge):
    judge.when(shown("Explains the fix"), both_formats("UNMET", "no explanation"))
    _, reward = await run_task(fix_and_explain, "fixed")
    assert isinstance(reward, EvaluationResult)
    assert reward.reward == pytest.approx(0.6)
    assert [(s.name, s.value) for s in reward.subscores] == [
        ("BashGrader", 1.0),
        ("LLMJudgeGrader", 0.0),
    ]


# --- "BashGrader" -----------------------------------------------------------------------
@env.template()
async def fix_tests():
    answer = yield "Make the tests pass."
    result = await BashGrader.grade(weight=1.0, command="pytest -q", cwd="/workspace")
    yield result.value


async def test_bash_grader_example(tmp_path, monkeypatch):
    # The example runs in the host's /workspace; the tests never create or touch one (the
    # same task scored against a project folder of the test's own is tested below).
    login_home(tmp_path, monkeypatch)
    prompt, reward = await run_task(fix_tests, "done")
    assert prompt == "Make the tests pass."
    result = await BashGrader.grade(weight=1.0, command="pytest -q", cwd="/workspace")
    if Path("/workspace").is_dir():
        assert reward == result.value == (1.0 if result.info["exit_code"] == 0 else 0.0)
    else:
        # A command that cannot run scores 0.0, with no exit code.
        assert reward == result.value == 0.0
        assert result.info["exit_code"] is None


# --- "LLMJudgeGrader" -------------------------------------------------------------------
async def test_llm_judge_grader_example(judge, judge_server):
    judge.when(shown("Correct"), both_formats("MET", "6 * 7 is 42"))
    judge.when(shown("Well-reasoned"), both_formats("UNMET", "no working shown"))
    prompt = "What is 6 * 7?"
    answer = "42"

    result = await LLMJudgeGrader.grade(
        weight=1.0,
        answer=answer,
        criteria=["Correct", ("Well-reasoned", 2.0)],
        question=prompt,
        model="claude-haiku-4-5",
    )

    assert isinstance(result, SubScore)
    assert result.value == pytest.approx(1 / 3)  # 1 of 3 positive weight met
    assert [(c.name, c.value, c.weight, c.info["reason"]) for c in result.children] == [
        ("Correct", 1.0, 1.0, "6 * 7 is 42"),
        ("Well-reasoned", 0.0, 2.0, "no working shown"),
    ]
    requests = judge_server.chat_requests
    assert len(requests) == 2
    for request in requests:
        assert request.json["model"] == "claude-haiku-4-5"
        assert request.headers["authorization"] == "Bearer test-key"
        assert shown(prompt) in last_user(request)
        assert shown(answer) in last_user(request)


# --- "combine - compose multiple graders" -----------------------------------------------
@env.template()
async def composed(answer: str = ""):
    answer = yield "Solve the task."
    yield await combine(
        BashGrader.grade(weight=0.5, command="pytest -q"),
        LLMJudgeGrader.grade(weight=0.3, answer=answer, criteria=["Matches the spec"]),
        SubScore(name="format", value=exact_match(answer, "42"), weight=0.2),
    )


async def test_combine_example(project, judge):
    def spec(request):
        met = shown("42") in last_user(request)
        return both_formats("MET" if met else "UNMET", "compared with the spec")

    judge.when(shown("Matches the spec"), spec)

    prompt, reward = await run_task(composed, "42")
    assert prompt == "Solve the task."
    assert isinstance(reward, EvaluationResult)
    assert reward.reward == pytest.approx(1.0)
    assert [s.name for s in reward.subscores] == ["BashGrader", "LLMJudgeGrader", "format"]
    assert [s.weight for s in reward.subscores] == pytest.approx([0.5, 0.3, 0.2])
    assert reward.subscores[0].info["exit_code"] == 0
    assert reward.subscores[1].children[0].name == "Matches the spec"

    # Partial credit: the tests pass, but the answer is neither right nor well formatted.
    _, reward = await run_task(composed, "41")
    assert reward.reward == pytest.approx(0.5)
    assert [s.value for s in reward.subscores] == [1.0, 0.0, 0.0]


# --- "Custom graders" -------------------------------------------------------------------
class LengthGrader(Grader):
    name = "length"

    @classmethod
    async def compute_score(cls, answer: str = "", target: int = 100, **kwargs):
        return SubScore(name=cls.name, value=1.0 if len(answer) >= target else 0.0)


@pytest.mark.parametrize(("answer", "expected"), [("x" * 200, 1.0), ("x" * 199, 0.0)])
async def test_custom_grader_example(answer, expected):
    result = await LengthGrader.grade(weight=1.0, answer=answer, target=200)

    assert isinstance(result, SubScore)
    assert (result.name, result.value, result.weight) == ("length", expected, 1.0)
    assert result.info["_parameters"] == {"answer": answer, "target": 200}


# --- "SubScore and EvaluationResult" ----------------------------------------------------
def test_field_defaults_of_the_tables():
    leaf = SubScore(name="format", value=1.0)
    assert (leaf.weight, leaf.children, leaf.info) == (1.0, None, None)
    result = EvaluationResult()
    assert (result.reward, result.done, result.subscores, result.info) == (
        0.0,
        True,
        None,
        {},
    )
    assert (result.content, result.isError) == (None, False)
    wrapped = EvaluationResult.from_float(0.75)
    assert (wrapped.reward, wrapped.done) == (0.75, True)
