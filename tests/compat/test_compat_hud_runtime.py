"""HUD's own task runner turns a task's result into the frame the platform receives.

A HUD environment yields an `EvaluationResult` as its grade; HUD's ``TaskRunner`` sends it
on as the wire frame, whose fields HUD's client reads back (``hud.eval.run.Grade``). The
runner forwards every field only for its own model, so this is where a copy of the model
that is not HUD's own would lose all but the score. Needs HUD installed: ``make compat``
runs it against HUD's models and against ``gradewire.hud``'s.
"""

from __future__ import annotations

import pytest

pytest.importorskip("hud.environment.server", reason="HUD's runtime is installed by make compat")

from hud.environment.server import TaskRunner
from hud.eval.run import Grade as PlatformGrade
from hud_target import BashGrader, EvaluationResult, SubScore, combine

from hud import Environment


async def frame_of(result_factory):
    """Run a one-task environment whose grade is ``await result_factory(answer)``."""
    env = Environment("compat")

    @env.template()
    async def task(country: str = "France"):
        answer = yield f"What is the capital of {country}?"
        yield await result_factory(answer)

    runner = TaskRunner(env.tasks["task"], {"country": "Italy"})
    started = await runner.start()
    assert started == {"prompt": "What is the capital of Italy?"}
    return await runner.grade({"answer": "Rome"})


async def test_every_field_of_a_result_reaches_the_platform():
    async def graded(answer: str) -> EvaluationResult:
        return EvaluationResult(
            reward=0.25,
            content=f"answered {answer}",
            info={"attempts": [1, 2]},
            isError=True,
            subscores=[SubScore(name="capital", value=0.25, info={"expected": "Rome"})],
        )

    frame = await frame_of(graded)
    assert frame == {
        "score": 0.25,
        "done": True,
        "content": "answered Rome",
        "info": {"attempts": [1, 2]},
        "isError": True,
        "subscores": [
            {
                "name": "capital",
                "weight": 1.0,
                "value": 0.25,
                "children": None,
                "info": {"expected": "Rome"},
            }
        ],
    }
    grade = PlatformGrade.from_dict(frame)
    assert (grade.reward, grade.is_error, grade.content) == (0.25, True, "answered Rome")
    assert grade.info == {"attempts": [1, 2]}
    assert grade.evaluation["subscores"] == [
        {"name": "capital", "weight": 1.0, "value": 0.25, "children": None}
    ]


async def test_a_combined_result_keeps_its_tree_and_extra_fields(tmp_path):
    async def graded(answer: str) -> EvaluationResult:
        result = await combine(
            BashGrader.grade(weight=0.5, command="echo ok", cwd=str(tmp_path)),
            SubScore(name="answer", value=1.0 if answer == "Rome" else 0.0, weight=0.5),
        )
        result.info["answer"] = answer
        result.trace_note = "extra fields are kept"
        return result

    frame = await frame_of(graded)
    assert frame["score"] == 1.0
    assert frame["info"] == {"answer": "Rome"}
    assert frame["trace_note"] == "extra fields are kept"
    bash, answer = frame["subscores"]
    assert (bash["name"], bash["info"]["exit_code"], bash["info"]["stdout"]) == (
        "BashGrader",
        0,
        "ok\n",
    )
    assert bash["info"]["_parameters"] == {"command": "echo ok", "cwd": str(tmp_path)}
    assert answer == {"name": "answer", "weight": 0.5, "value": 1.0, "children": None, "info": None}


async def test_a_plain_float_is_only_a_score():
    async def graded(answer: str) -> float:
        return 1.0

    assert await frame_of(graded) == {"score": 1.0}
