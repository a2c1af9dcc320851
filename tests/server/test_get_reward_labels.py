"""/get_reward puts OpenRLHF's labels under the metadata key the graders read."""

from __future__ import annotations

import httpx
import pytest

from gradewire import BaseGrader, InvalidInputError, StringThread
from gradewire.server import create_app
from support.reward_server_helpers import running

SEEN: list[StringThread] = []


def exact(sample: StringThread) -> float:
    SEEN.append(sample)
    return float(sample.completion() == sample.metadata["answer"])


BODY = {
    "query": ["Q: 2+2? A: 4<|im_end|>", "Q: 3+3? A: 7</s>"],
    "prompts": ["Q: 2+2? A: ", "Q: 3+3? A: "],
    "labels": ["4", "6"],
}


async def post(base: str) -> dict:
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{base}/get_reward", json=BODY)
    response.raise_for_status()
    return response.json()


async def test_label_key_answer_feeds_a_grader_reading_metadata_answer():
    SEEN.clear()
    async with running(BaseGrader.from_function("exact", exact), label_key="answer") as base:
        answer = await post(base)
    assert answer["rewards"] == [1.0, 0.0]
    assert answer["extra_logs"]["reward_failed"] == [0.0, 0.0]
    assert answer["errors"] == [None, None]
    # sync graders run in worker threads: in any order
    seen = sorted((s.metadata["answer"], s.completion()) for s in SEEN)
    assert sorted(s.metadata["answer"] for s in SEEN) == ["4", "6"]
    assert seen == [("4", "4"), ("6", "7")]  # each label with its own completion, end markers cut


async def test_the_default_key_makes_the_failure_visible_not_a_quiet_zero():
    async with running(BaseGrader.from_function("exact", exact)) as base:
        answer = await post(base)
    assert answer["rewards"] == [0.0, 0.0]  # the server's failure_value
    assert answer["extra_logs"]["reward_failed"] == [1.0, 1.0]
    assert all("KeyError" in error and "answer" in error for error in answer["errors"])


def test_an_empty_label_key_is_refused():
    with pytest.raises(InvalidInputError, match="label_key must not be empty"):
        create_app(BaseGrader.from_function("exact", exact), label_key="")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("4</s>", "4"), ("4<|im_end|>\n", "4"), ("4 <|eot_id|></s>", "4"), ("a</s>b", "a</s>b")],
)
def test_end_markers_are_cut_from_the_end_only(text, expected):
    from gradewire.helpers._special_tokens import strip_end_tokens

    assert strip_end_tokens(text) == expected
