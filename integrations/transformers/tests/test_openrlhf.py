"""openrlhf_reward_func and the server's /get_reward, called by OpenRLHF 0.11.2's own code.

`SingleTurnAgentExecutor.execute` generates (here with a stand-in for vLLM), decodes the
query with its tokenizer (the byte tokenizer, special tokens kept), and fetches the reward
from a ``.py`` file's ``reward_func`` or by POSTing to the server, exactly as in a run. The
reward then goes through the conversion OpenRLHF applies (``torch.tensor([reward])``).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import ByT5Tokenizer

from gradewire import BaseGrader, StringThread
from openrlhf_support import FakeEngine, load_agent, sampling_params
from support.reward_server_helpers import running

PROMPTS = {"What is 2+2? ": "4", "What is 3+3? ": "7", "Name a colour. ": "blue", "Shout! ": "!!"}
LABELS = {"What is 2+2? ": "4", "What is 3+3? ": "6", "Name a colour. ": None, "Shout! ": "x"}

REWARD_FILE = """
from gradewire import BaseGrader
from gradewire.train import FailurePolicy, openrlhf_reward_func


def check(sample):
    answer = sample.metadata.get("answer")
    if answer is None:
        return None  # no label: abstain
    if sample.completion().startswith("!"):
        raise ValueError("cannot grade shouting")
    return float(sample.completion() == answer)


reward_func = openrlhf_reward_func(
    BaseGrader.from_function("exact", check), label_key="answer",
    failure=FailurePolicy(failure_value={failure}),
)
"""


def answer(sample: StringThread) -> float:
    return float(sample.completion() == sample.metadata["answer"])


async def execute_all(agent: Any, url: str | list[str]) -> list[dict[str, Any]]:
    tokenizer = ByT5Tokenizer()
    executor = agent.SingleTurnAgentExecutor(remote_rm_url=url)
    engine = FakeEngine(tokenizer, PROMPTS)
    return await asyncio.gather(
        *(
            executor.execute(prompt, LABELS[prompt], sampling_params(), 64, tokenizer, engine)
            for prompt in PROMPTS
        )
    )


def as_openrlhf_tensors(output: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    # samples_generator._process_response_into_experience (0.11.2), the lines that read
    # the reward and the extra logs.
    reward = torch.tensor([output["reward"]])
    extra = {}
    for key, value in output["extra_logs"].items():
        if isinstance(value, torch.Tensor):
            value = value.flatten()[0].item()
        extra[key] = torch.tensor([value])
    return reward, extra


def write_reward_file(tmp_path: Path, failure: str) -> str:
    path = tmp_path / "reward.py"
    path.write_text(REWARD_FILE.format(failure=failure), encoding="utf-8")
    return str(path)


def test_reward_func_file_with_a_failure_reward(tmp_path: Path) -> None:
    agent = load_agent(tmp_path)
    outputs = asyncio.run(execute_all(agent, write_reward_file(tmp_path, "-1.0")))
    rewards = [float(as_openrlhf_tensors(o)[0].flatten()[0]) for o in outputs]
    assert rewards == [1.0, 0.0, -1.0, -1.0]
    extra = [
        {k: float(v.flatten()[0]) for k, v in as_openrlhf_tensors(o)[1].items()} for o in outputs
    ]
    assert [e["exact/abstained_count"] for e in extra] == [0.0, 0.0, 1.0, 0.0]
    assert [e["exact/error_count"] for e in extra] == [0.0, 0.0, 0.0, 1.0]
    assert {e["exact/prompt_not_in_query"] for e in extra} == {0.0}
    assert [o["scores"] for o in outputs] == [[r] for r in rewards]


def test_reward_func_file_without_one_refuses_loudly(tmp_path, caplog) -> None:
    agent = load_agent(tmp_path)
    with caplog.at_level(logging.ERROR, logger="gradewire"):
        outputs = asyncio.run(execute_all(agent, write_reward_file(tmp_path, "None")))
    # OpenRLHF swallows the exception (INFO) and leaves the reward empty: no invented 0.
    assert [o["reward"] for o in outputs] == [[1.0], [0.0], None, None]
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("abstained" in m and "failure_value" in m for m in messages)
    assert any("ValueError: cannot grade shouting" in m for m in messages)


@pytest.mark.parametrize(
    ("label_key", "rewards", "failed"),
    # With the default key the grader finds no metadata["answer"]: every sample fails, and
    # the reply says so (reward_failed, errors) instead of passing off 0.0 as a reward.
    [("answer", [1.0, 0.0, 0.0, 0.0], [0.0] * 4), ("label", [0.0] * 4, [1.0] * 4)],
)
async def test_get_reward_maps_labels_to_the_key_asked_for(tmp_path, label_key, rewards, failed):
    agent = load_agent(tmp_path)
    grader = BaseGrader.from_function("exact", answer)
    async with running(grader, label_key=label_key) as base:
        outputs = await execute_all(agent, [f"{base}/get_reward"])
    assert [o["reward"] for o in outputs] == [[r] for r in rewards]
    assert [o["extra_logs"]["reward_failed"] for o in outputs] == [[f] for f in failed]
    for output in outputs:
        reward, extra = as_openrlhf_tensors(output)
        assert torch.isfinite(reward).all()
        assert set(extra) >= {"reward_failed", "reward_abstained"}
