"""NeMo Gym's /verify on the reward server, with rollouts recorded by nemo-gym 0.4.0.

``nemo_gym_rollouts.json`` holds the request part of rollouts shipped in the nemo-gym 0.4.0
wheel (its math_with_judge and example_single_tool_call example data): what NeMo Gym's
agent posts to a resources server's /verify. The shapes themselves are checked against
nemo-gym's pydantic models in ``tests/compat/test_compat_nemo_gym.py`` (``make compat``,
Python 3.12).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import httpx
import pytest

import gradewire as gw
from support.reward_server_helpers import running

ROLLOUTS = json.loads((Path(__file__).with_name("nemo_gym_rollouts.json")).read_text())
# The second math rollout's answer, (1+√3)^4033 - (1-√3)^4033 over 2^2017·√3, takes sympy
# about 25 s to compare on 2 cores: its shape is checked, its reward left out here.
FAST_MATH = [r for i, r in enumerate(ROLLOUTS["math"]) if i != 1]


def seen_by(record: list[gw.StringThread]) -> gw.BaseGrader:
    def grade(sample: gw.StringThread) -> float:
        record.append(sample)
        return 1.0

    return gw.BaseGrader.from_function("seen", grade)


async def verify(graders: Any, body: Any, path: str = "/verify", **options: Any) -> httpx.Response:
    async with running(graders, **options) as base, httpx.AsyncClient() as client:
        return await client.post(f"{base}{path}", json=body, timeout=60)


async def test_math_rollouts_get_math_verifys_recorded_rewards() -> None:
    # NeMo Gym's math_with_judge scored these with Math-Verify (its library_reward):
    # MathGrader behind /verify gives the same rewards.
    grader = gw.MathGrader("math", expected_key="expected_answer")
    async with running({"math": grader}) as base, httpx.AsyncClient() as client:
        for rollout in FAST_MATH:
            request = rollout["request"]
            answer = (await client.post(f"{base}/verify", json=request, timeout=60)).json()
            assert answer["reward"] == rollout["library_reward"]
            assert answer["reward_components"] == {"math": rollout["library_reward"]}
            assert answer["error"] is None
            assert answer["abstained"] is False
            assert answer["grade"]["grader_key"] == "math"
            # The request comes back whole: NeMo Gym's BaseVerifyResponse extends the request.
            for key, value in request.items():
                assert answer[key] == value
    rewards = [r["library_reward"] for r in FAST_MATH]
    assert 0.0 in rewards
    assert 1.0 in rewards
    logs = grader.get_logs()
    assert logs["score/count"] == len(rewards)
    assert logs["score/mean"] == pytest.approx(sum(rewards) / len(rewards))


async def test_turns_and_task_fields_reach_the_grader() -> None:
    seen: list[gw.StringThread] = []
    math_request = ROLLOUTS["math"][2]["request"]
    tool_request = ROLLOUTS["tool_call"][0]["request"]
    for request in (math_request, tool_request):
        assert (await verify(seen_by(seen), request)).status_code == 200
    math_thread, tool_thread = seen
    prompt = math_request["responses_create_params"]["input"][0]["content"]
    # The reasoning item is the model's work, not its answer: only the message is a turn.
    [message] = [o for o in math_request["response"]["output"] if o["type"] == "message"]
    assert math_thread.turns == (
        gw.core.Turn("user", prompt),
        gw.core.Turn("assistant", message["content"][0]["text"]),
    )
    assert math_thread.metadata == {"expected_answer": math_request["expected_answer"]}
    # A developer message is a system turn; the tool definitions stay with the request.
    assert [t.role for t in tool_thread.turns] == ["system", "user", "assistant"]
    assert tool_thread.metadata == {}


async def test_instructions_input_str_and_tool_outputs() -> None:
    seen: list[gw.StringThread] = []
    body = {
        "responses_create_params": {
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
                {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            ],
        },
        "response": {
            "output": [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [
                        {"type": "output_text", "text": "It is "},
                        {"type": "output_text", "text": "sunny."},
                    ],
                }
            ]
        },
        "city": "Paris",
    }
    assert (await verify(seen_by(seen), body)).status_code == 200
    [thread] = seen
    assert thread.turns == (
        gw.core.Turn("system", "Be brief."),
        gw.core.Turn("user", "Weather?"),
        gw.core.Turn("tool", "sunny"),
        gw.core.Turn("assistant", "It is sunny."),
    )
    assert thread.metadata == {"city": "Paris"}
    body["responses_create_params"] = {"input": "Weather?"}
    assert (await verify(seen_by(seen), body)).status_code == 200
    assert seen[-1].turns[0] == gw.core.Turn("user", "Weather?")


async def test_combined_grader_gives_reward_components() -> None:
    request = ROLLOUTS["math"][2]["request"]
    reward = gw.CombinedGrader(
        "reward",
        [
            gw.MathGrader("math", expected_key="expected_answer"),
            gw.BaseGrader.from_function("short", lambda s: float(len(s.completion() or "") < 20)),
        ],
        weights=[0.75, 0.25],
    )
    answer = (await verify(reward, request)).json()
    completion = request["response"]["output"][-1]["content"][0]["text"]
    short = float(len(completion) < 20)
    assert answer["reward_components"] == {"math": 1.0, "short": short}
    assert answer["reward"] == pytest.approx(0.75 * 1.0 + 0.25 * short)


async def test_no_grade_is_flagged_and_gets_the_failure_reward() -> None:
    def judge(sample: gw.StringThread) -> float | None:
        if "expected_answer" not in sample.metadata:
            return None
        raise RuntimeError("the checker broke")

    grader = gw.BaseGrader.from_function("judge", judge)
    math_request = ROLLOUTS["math"][0]["request"]
    tool_request = ROLLOUTS["tool_call"][0]["request"]
    failed = (await verify(grader, math_request, failure_reward=-1.0)).json()
    assert failed["reward"] == -1.0
    assert failed["reward_components"] == {}
    assert failed["abstained"] is False
    assert failed["error"] == "RuntimeError: the checker broke"
    abstained = (await verify(grader, tool_request)).json()
    assert abstained["reward"] == 0.0
    assert abstained["abstained"] is True
    assert "returned None" in abstained["error"]
    logs = grader.get_logs()
    assert logs["score/error_count"] == 1
    assert logs["score/abstained_count"] == 1


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ([1], 422, "/verify takes a JSON object"),
        ({"response": {"output": []}}, 422, "needs 'responses_create_params'"),
        ({"responses_create_params": {}, "response": {}}, 422, "response.output must be a list"),
        (
            {
                "responses_create_params": {"input": [{"role": "robot", "content": "x"}]},
                "response": {"output": []},
            },
            422,
            "has role 'robot'",
        ),
        (
            {
                "responses_create_params": {
                    "input": [
                        {"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}
                    ]
                },
                "response": {"output": []},
            },
            422,
            "'input_image' cannot be graded as text",
        ),
    ],
)
async def test_bad_requests_are_refused_with_a_reason(body: Any, status: int, message: str) -> None:
    answer = await verify(gw.BaseGrader.from_function("one", lambda s: 1.0), body)
    assert answer.status_code == status
    assert message in answer.json()["error"]


async def test_several_graders_are_picked_by_query() -> None:
    graders = {
        "one": gw.BaseGrader.from_function("one", lambda s: 1.0),
        "half": gw.BaseGrader.from_function("half", lambda s: 0.5),
    }
    request = ROLLOUTS["tool_call"][0]["request"]
    assert (await verify(graders, request, "/verify?grader=half")).json()["reward"] == 0.5
    refused = await verify(graders, request)
    assert refused.status_code == 422
    assert "?grader=" in refused.json()["error"]
    assert not math.isnan((await verify(graders, request, "/verify?grader=one")).json()["reward"])


async def test_a_padded_request_is_not_echoed_whole_and_says_what_it_left_out() -> None:
    from gradewire.server._nemo_gym import ECHO_CHARS

    request = dict(ROLLOUTS["tool_call"][0]["request"])
    padded = {**request, "padding": "x" * (4 * ECHO_CHARS), "small": [1, 2, 3]}
    answer = await verify(gw.BaseGrader.from_function("one", lambda s: 1.0), padded)
    assert answer.status_code == 200
    assert len(answer.content) < len(json.dumps(request)) + ECHO_CHARS  # not the 4 MB again
    data = answer.json()
    assert data["reward"] == 1.0
    assert data["not_echoed"] == ["padding"]
    assert "padding" not in data
    for key, value in {**request, "small": [1, 2, 3]}.items():
        assert data[key] == value  # the exchange and the task's fields come back


async def test_a_body_of_countless_empty_objects_is_refused_before_it_is_read() -> None:
    from gradewire.server._app import MAX_CONTAINERS

    request = dict(ROLLOUTS["tool_call"][0]["request"])
    flood = {**request, "flood": [{}] * (MAX_CONTAINERS + 1)}
    answer = await verify(gw.BaseGrader.from_function("one", lambda s: 1.0), flood)
    assert answer.status_code == 413
    assert f"more than {MAX_CONTAINERS:,} JSON objects and lists" in answer.json()["error"]
    assert (
        await verify(gw.BaseGrader.from_function("one", lambda s: 1.0), request)
    ).status_code == 200
