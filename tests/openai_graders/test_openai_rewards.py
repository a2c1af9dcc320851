"""One OpenAI config object, as a reward through TRL, veRL, OpenRLHF and the reward server."""

from __future__ import annotations

import json

import httpx

import gradewire as gw
from support.reward_server_helpers import running

CONFIG = {
    "type": "multi",
    "name": "reward",
    "graders": {
        "exact": {
            "type": "string_check",
            "name": "exact",
            "input": "{{sample.output_text}}",
            "reference": "{{item.answer}}",
            "operation": "ilike",
        },
        "overlap": {
            "type": "text_similarity",
            "name": "overlap",
            "input": "{{sample.output_text}}",
            "reference": "{{item.answer}}",
            "evaluation_metric": "rouge_1",
        },
    },
    "calculate_output": "0.5 * exact + 0.5 * overlap",
}


def expected(completion: str, answer: str) -> float:
    from rouge_score.rouge_scorer import RougeScorer

    exact = 1.0 if answer.casefold() in completion.casefold() else 0.0
    overlap = RougeScorer(["rouge1"]).score(answer, completion)["rouge1"].fmeasure
    return 0.5 * exact + 0.5 * overlap


ROWS = [("It is Paris", "paris"), ("Lyon", "Paris"), ("paris", "Paris")]


async def test_trl_reward_takes_the_config():
    from gradewire_transformers import trl_reward

    reward = trl_reward(gw.openai_grader(CONFIG))
    values = await reward(
        prompts=["Capital of France?"] * 3,
        completions=[c for c, _ in ROWS],
        answer=[a for _, a in ROWS],
    )
    assert values == [expected(c, a) for c, a in ROWS]
    assert reward.__name__ == "reward"


async def test_verl_compute_score_takes_the_config():
    from gradewire_ray import verl_compute_score

    compute_score = verl_compute_score(gw.openai_grader(CONFIG), channel=None)
    for completion, answer in ROWS:
        result = await compute_score(
            data_source="t",
            solution_str=completion,
            ground_truth=answer,
            extra_info={"answer": answer},
        )
        assert result["score"] == expected(completion, answer)
        assert result["error"] == 0.0


def test_openrlhf_reward_func_takes_the_config():
    reward_func = gw.openrlhf_reward_func(gw.openai_grader(CONFIG), label_key="answer")
    prompt = "Capital of France?"
    for completion, answer in ROWS:
        reply = reward_func([prompt + completion], [prompt], [answer])
        assert reply["rewards"] == [expected(completion, answer)]


async def test_the_reward_server_serves_a_grader_file_of_openai_configs(tmp_path):
    path = tmp_path / "graders.json"
    path.write_text(json.dumps([CONFIG]))
    graders = gw.load_graders(path)
    async with running(graders) as url, httpx.AsyncClient(base_url=url) as client:
        for completion, answer in ROWS:
            thread = gw.StringThread(
                [("user", "Capital of France?"), ("assistant", completion)],
                metadata={"answer": answer},
            )
            answer_body = (
                await client.post(
                    "/v1/grade", json={"grader": "reward", "thread": thread.to_dict()}
                )
            ).json()
            assert answer_body["error"] is None
            grade = gw.Grade.from_dict(answer_body["grade"])
            assert grade.value == expected(completion, answer)
            assert [c.grader_key for c in grade.children] == ["exact", "overlap"]
