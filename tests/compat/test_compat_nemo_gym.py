"""gradewire's /verify against NeMo Gym's own request and response models (nemo-gym 0.4.0).

nemo-gym ships for Python 3.12 only: ``make compat`` runs this module in
``.venv-compat-nemo``; elsewhere it is skipped (the main suite checks /verify on the same
recorded rollouts, ``tests/server/test_nemo_gym_verify.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

import gradewire as gw
from support.reward_server_helpers import running

pytest.importorskip(
    "nemo_gym", reason="nemo-gym needs Python 3.12: `make compat` runs this in .venv-compat-nemo"
)

from nemo_gym.base_resources_server import BaseVerifyRequest, BaseVerifyResponse
from nemo_gym.openai_utils import (
    NeMoGymResponse,
    NeMoGymResponseCreateParamsNonStreaming,
)
from resources_servers.math_with_judge.app import LibraryJudgeMathVerifyRequest
from responses_api_agents.simple_agent.app import (
    SimpleAgentVerifyRequest,
    SimpleAgentVerifyResponse,
)

ROLLOUTS = json.loads((Path(__file__).parents[1] / "server" / "nemo_gym_rollouts.json").read_text())
REQUESTS = [r["request"] for r in ROLLOUTS["math"] + ROLLOUTS["tool_call"]]


@pytest.mark.parametrize("request_body", REQUESTS)
def test_the_recorded_requests_are_nemo_gyms_shape(request_body: dict[str, Any]) -> None:
    # What NeMo Gym's simple agent builds and posts: the fixture is that shape.
    agent = SimpleAgentVerifyRequest.model_validate(request_body)
    assert agent.model_dump(mode="json")["response"]["output"] is not None
    BaseVerifyRequest.model_validate(request_body)
    if "expected_answer" in request_body:
        LibraryJudgeMathVerifyRequest.model_validate({**request_body, "question": "q"})


def agent_request(text: str, expected: str) -> dict[str, Any]:
    """A /verify body built from NeMo Gym's own models, dumped as its agent dumps it."""
    params = NeMoGymResponseCreateParamsNonStreaming.model_validate(
        {"input": [{"role": "user", "content": "What is 1/2 + 1/4?", "type": "message"}]}
    )
    response = NeMoGymResponse.model_validate(
        {
            "id": "resp_1",
            "created_at": 0.0,
            "model": "policy",
            "object": "response",
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "output": [
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ],
        }
    )
    body = SimpleAgentVerifyRequest.model_validate(
        {
            "responses_create_params": params.model_dump(),
            "response": response.model_dump(),
            "expected_answer": expected,
        }
    )
    return body.model_dump()


async def test_gradewire_answers_are_nemo_gyms_verify_responses() -> None:
    grader = gw.CombinedGrader(
        "reward",
        [
            gw.MathGrader("math", expected_key="expected_answer"),
            gw.BaseGrader.from_function("short", lambda s: float(len(s.completion() or "") < 40)),
        ],
        weights=[0.5, 0.5],
    )
    bodies = [
        agent_request("$\\boxed{\\frac{3}{4}}$", "0.75"),
        agent_request("$\\boxed{1}$", "0.75"),
        *[r["request"] for r in ROLLOUTS["math"][2:]],
    ]
    async with running(grader) as base, httpx.AsyncClient() as client:
        for body in bodies:
            raw = await client.post(f"{base}/verify", json=body, timeout=60)
            assert raw.status_code == 200
            answer = raw.json()
            # What NeMo Gym's agent reads back, and the resources server's own model.
            read = SimpleAgentVerifyResponse.model_validate(answer)
            base_read = BaseVerifyResponse.model_validate(answer)
            assert read.reward == base_read.reward == answer["reward"]
            assert base_read.response == NeMoGymResponse.model_validate(body["response"])
            assert set(answer["reward_components"]) == {"math", "short"}
            components = answer["reward_components"]
            assert read.reward == pytest.approx(
                0.5 * components["math"] + 0.5 * components["short"]
            )
    assert [b["expected_answer"] for b in bodies[:2]] == ["0.75", "0.75"]
    assert grader.get_logs()["math/score/mean"] == pytest.approx(
        (1.0 + 0.0 + sum(r["library_reward"] for r in ROLLOUTS["math"][2:])) / len(bodies)
    )


async def test_a_failed_rollout_is_still_a_verify_response() -> None:
    def broken(sample: gw.StringThread) -> float:
        raise RuntimeError("the checker broke")

    body = agent_request("$\\boxed{1}$", "1")
    grader = gw.BaseGrader.from_function("b", broken)
    async with running(grader, failure_value=0.0) as base, httpx.AsyncClient() as client:
        answer = (await client.post(f"{base}/verify", json=body, timeout=60)).json()
    read = SimpleAgentVerifyResponse.model_validate(answer)
    assert read.reward == 0.0
    assert answer["error"] == "RuntimeError: the checker broke"
