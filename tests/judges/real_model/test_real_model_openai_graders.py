"""OpenAI's score_model and label_model against the real llama.cpp server and 135M model.

As for the judges here: what a 135M model can deliver is checked, not verdict quality.
Every sample is scored or a counted error of an OpenAI kind (never a 0), the scores are in
the config's range, and the templated messages reach the real server.
"""

from __future__ import annotations

import asyncio

import gradewire as gw

N = 6
QUESTIONS = [
    ("What is the capital of France?", "Paris is the capital of France."),
    ("How many legs has a spider?", "A spider has eight legs."),
    ("What colour is the sky on a clear day?", "It is blue."),
]


def samples() -> list[gw.StringThread]:
    return [
        gw.StringThread([("user", q), ("assistant", a)], metadata={"question": q})
        for q, a in (QUESTIONS * N)[:N]
    ]


def accounted(grader: gw.BaseGrader) -> dict[str, object]:
    logs = grader.get_logs()
    scored = int(logs.get("score/count", 0))
    errors = int(logs["score/error_count"])
    assert scored + errors == N
    kinds = sum(
        int(value)
        for key, value in logs.items()
        if key.endswith("_error_count") and key != "score/error_count"
    )
    assert kinds == errors  # each error counted under exactly one OpenAI kind
    assert scored >= N // 2, [r.get("error") for r in grader._logs if "error" in r]
    return logs


async def test_score_model_and_label_model_on_the_real_model(llama_server):
    options = {"base_url": llama_server, "served_model": "smollm2"}
    score = gw.openai_grader(
        {
            "type": "score_model",
            "name": "helpful",
            "model": "gpt-4o-2024-08-06",
            "input": [
                {"role": "system", "content": "Rate from 0 to 10 how well the answer helps."},
                {
                    "role": "user",
                    "content": "Question: {{item.question}}\nAnswer: {{sample.output_text}}",
                },
            ],
            "range": [0, 10],
            "pass_threshold": 5,
            "sampling_params": {"temperature": 0, "max_completions_tokens": 256},
        },
        **options,
    )
    label = gw.openai_grader(
        {
            "type": "label_model",
            "name": "answers",
            "model": "gpt-4o-mini",
            "input": [
                {
                    "role": "user",
                    "content": "Does '{{sample.output_text}}' answer '{{item.question}}'?",
                }
            ],
            "labels": ["yes", "no"],
            "passing_labels": ["yes"],
        },
        **options,
    )
    for grader in (score, label):
        for sample in samples():  # the server answers one request at a time
            await asyncio.wait_for(grader(sample), 600)
    score_logs = accounted(score)
    assert 0.0 <= score_logs["score/min"] <= score_logs["score/max"] <= 10.0
    assert "passed/mean" in score_logs
    label_logs = accounted(label)
    assert label_logs["score/min"] in (0.0, 1.0)
    assert label_logs["prompt_tokens/mean"] > 0
