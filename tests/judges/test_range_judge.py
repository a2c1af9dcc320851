"""RangeJudgeGrader over real HTTP: the written score, and the expected score from logprobs."""

from __future__ import annotations

import json
import math

import pytest

from gradewire import InvalidInputError, InvalidTypeError, ModelCallError, StringThread
from gradewire.judges._range_judge import RangeJudgeGrader
from gradewire.models import TokenLogprob
from gradewire.models._score_logprobs import score_distribution
from support.judge_scripts import last_user
from support.judge_server import chat, error

CRITERION = "The answer is clear"
THREAD = StringThread([("user", "Explain DNS."), ("assistant", "DNS maps names to addresses.")])


def tokens_of(score_token: str, top: list[tuple[str, float]]):
    """The logprobs of '{"reasoning": "ok", "score": <n>}', split as a tokenizer would."""
    parts = ['{"', "reasoning", '":', ' "', "ok", '",', ' "', "score", '":', " "]
    spec = [(part, -0.01, [(part, -0.01)]) for part in parts]
    spec.append((score_token, top[0][1], top))
    spec.append(("}", -0.001, [("}", -0.001)]))
    return spec


async def test_the_written_score_without_logprobs(judge_server, make_judge):
    judge_server.script(json.dumps({"reasoning": "mostly clear", "score": 4}))
    grader = RangeJudgeGrader("clarity", make_judge(), CRITERION, use_logprobs=False)
    grade = await grader.grade(THREAD)
    assert grade.value == pytest.approx((4 - 1) / (5 - 1))
    assert grade.reasoning == "mostly clear"
    assert grade.info["source"] == "parsed"
    body = judge_server.chat_requests[0].json
    assert "logprobs" not in body
    prompt = last_user(judge_server.chat_requests[0])
    assert "from 1 to 5" in prompt
    assert list(body["response_format"]["json_schema"]["schema"]["properties"]) == [
        "reasoning",
        "score",
    ]
    logs = grader.get_logs()
    assert logs["judge_score/mean"] == 4.0


async def test_the_expected_score_from_logprobs(judge_server, make_judge):
    top = [("4", math.log(0.6)), ("3", math.log(0.25)), ("5", math.log(0.1)), ("x", -3.0)]
    text = '{"reasoning": "ok", "score": 4}'
    judge_server.script(chat(text, logprobs=tokens_of("4", top)))
    grade = await RangeJudgeGrader("clarity", make_judge(), CRITERION).grade(THREAD)

    body = judge_server.chat_requests[0].json
    assert body["logprobs"] is True
    assert body["top_logprobs"] >= 5
    valid = {4: 0.6, 3: 0.25, 5: 0.1}  # "x" is no score: left out, the rest renormalised
    mass = sum(valid.values())
    expected = sum(score * p / mass for score, p in valid.items())
    assert grade.info["source"] == "logprobs"
    assert grade.info["score"] == 4
    assert grade.info["expected_score"] == pytest.approx(expected)
    assert grade.info["distribution"] == pytest.approx({s: p / mass for s, p in valid.items()})
    assert grade.info["probability_mass"] == pytest.approx(mass)
    assert grade.value == pytest.approx((expected - 1) / 4)


async def test_missing_logprobs_fall_back_to_the_written_score(judge_server, make_judge):
    judge_server.script(json.dumps({"reasoning": "ok", "score": 2}))
    grade = await RangeJudgeGrader("clarity", make_judge(), CRITERION).grade(THREAD)
    assert judge_server.chat_requests[0].json["logprobs"] is True
    assert grade.info["source"] == "parsed"
    assert grade.value == pytest.approx(0.25)


async def test_a_score_split_over_tokens_falls_back_to_the_written_score(judge_server, make_judge):
    parts = tokens_of("1", [("1", -0.1), ("9", -2.0)])
    parts.insert(-1, ("0", -0.1, [("0", -0.1)]))  # "10" written as "1" + "0"
    judge_server.script(chat('{"reasoning": "ok", "score": 10}', logprobs=parts))
    grade = await RangeJudgeGrader("clarity", make_judge(), CRITERION, low=0, high=10).grade(THREAD)
    assert grade.info["source"] == "parsed"
    assert grade.value == 1.0


async def test_an_out_of_range_score_gets_the_repair_request(judge_server, make_judge):
    judge_server.script(
        json.dumps({"reasoning": "great", "score": 7}),
        json.dumps({"reasoning": "great", "score": 5}),
    )
    grade = await RangeJudgeGrader("clarity", make_judge(), CRITERION, use_logprobs=False).grade(
        THREAD
    )
    assert grade.value == 1.0
    repair = judge_server.chat_requests[1].json["messages"][-1]["content"]
    assert "from 1 to 5" in repair


def test_score_distribution_reads_the_token_after_the_score_field():
    spec = tokens_of(" 3", [(" 3", math.log(0.5)), ("3", math.log(0.2)), (" 2", math.log(0.3))])
    logprobs = [TokenLogprob(t, lp, tuple(top)) for t, lp, top in spec]
    found = score_distribution(logprobs, 3, 1, 5)
    assert found is not None
    assert found.probabilities == pytest.approx({2: 0.3, 3: 0.7})  # " 3" and "3" are both 3
    assert found.expected == pytest.approx(2 * 0.3 + 3 * 0.7)
    assert found.mass == pytest.approx(1.0)


def test_score_distribution_adds_the_chosen_token_when_top_lacks_it():
    spec = tokens_of("2", [("2", math.log(0.5))])
    spec[-2] = ("2", math.log(0.5), [("1", math.log(0.5))])
    logprobs = [TokenLogprob(t, lp, tuple(top)) for t, lp, top in spec]
    found = score_distribution(logprobs, 2, 1, 5)
    assert found is not None
    assert found.probabilities == pytest.approx({1: 0.5, 2: 0.5})


def test_score_distribution_refuses_what_it_cannot_read():
    spec = tokens_of("4", [("4", -0.1)])
    logprobs = [TokenLogprob(t, lp, tuple(top)) for t, lp, top in spec]
    assert score_distribution(logprobs, 3, 1, 5) is None  # disagrees with the parsed score
    assert score_distribution(logprobs[:5], 4, 1, 5) is None  # no score field
    out_of_range = [TokenLogprob(t, lp, tuple(top)) for t, lp, top in tokens_of("9", [("9", 0)])]
    assert score_distribution(out_of_range, 9, 1, 5) is None


@pytest.mark.parametrize(
    ("options", "error_type"),
    [
        ({"low": 5, "high": 5}, InvalidInputError),
        ({"low": 3, "high": 1}, InvalidInputError),
        ({"low": 1.0}, InvalidTypeError),
        ({"high": True}, InvalidTypeError),
        ({"use_logprobs": "yes"}, InvalidTypeError),
    ],
)
def test_options_are_checked(make_judge, options, error_type):
    with pytest.raises(error_type):
        RangeJudgeGrader("clarity", make_judge(), CRITERION, **options)


async def test_a_server_that_refuses_logprobs_is_asked_without_them(judge_server, make_judge):
    def refuse_logprobs(request):
        if "logprobs" in request.json:
            return error(400, "logprobs are not supported by this model")
        return json.dumps({"reasoning": "ok", "score": 3})

    judge_server.handler = refuse_logprobs
    grader = RangeJudgeGrader("clarity", make_judge(), CRITERION)
    assert (await grader.grade(THREAD)).value == 0.5
    assert (await grader.grade(THREAD)).info["source"] == "parsed"
    assert ["logprobs" in r.json for r in judge_server.chat_requests] == [True, False, False]
    # The client learnt it for the endpoint: another grader and client do not ask again.
    other = RangeJudgeGrader("other", make_judge(), CRITERION)
    assert (await other.grade(THREAD)).info["source"] == "parsed"
    assert "logprobs" not in judge_server.chat_requests[-1].json
    assert len(judge_server.chat_requests) == 4


async def test_a_500_that_names_logprobs_is_a_refusal_not_a_fault(judge_server, make_judge):
    def refuse_logprobs(request):
        if "logprobs" in request.json:
            return error(500, "1 validation error: ('body', 'top_logprobs'): unsupported")
        return json.dumps({"reasoning": "ok", "score": 3})

    judge_server.handler = refuse_logprobs
    grader = RangeJudgeGrader("clarity", make_judge(max_attempts=5), CRITERION)
    assert (await grader.grade(THREAD)).value == 0.5
    assert len(judge_server.chat_requests) == 2  # no retries spent on the refusal


async def test_other_400s_are_not_taken_for_a_logprobs_refusal(judge_server, make_judge):
    judge_server.script(error(400, "context length exceeded"))
    grader = RangeJudgeGrader("clarity", make_judge(), CRITERION)
    with pytest.raises(ModelCallError, match="context length"):
        await grader.grade(THREAD)
    assert not grader.logprobs_refused
    assert len(judge_server.chat_requests) == 1
