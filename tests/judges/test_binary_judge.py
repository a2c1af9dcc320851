"""BinaryJudgeGrader over real HTTP: verdicts, NA as abstention, context, shots."""

from __future__ import annotations

import json

import pytest

from gradewire import IgnoreGradeException, InvalidInputError, InvalidTypeError, StringThread
from gradewire.judges._binary_judge import BinaryJudgeGrader, BinaryJudgeShot, JudgeShot
from support.judge_scripts import last_user, sections, verdict

CRITERION = "The answer names the correct capital city"
CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Peru": "Lima"}


def capital_judge(request):
    """Answers like a correct judge: PASS when the answer names the capital asked about."""
    prompt = last_user(request)
    [question] = sections(prompt, "question")
    [answer] = sections(prompt, "answer")
    if "Atlantis" in question:
        return verdict("NA", "Atlantis has no capital, so the criterion does not apply.")
    country = question.split()[-1].rstrip("?")
    ok = CAPITALS[country] in answer
    return verdict("PASS" if ok else "FAIL", f"{answer!r} for {country}")


def ask(country: str, answer: str) -> StringThread:
    return StringThread([("user", f"What is the capital of {country}?"), ("assistant", answer)])


async def test_pass_fail_and_na(judge_server, make_judge):
    judge_server.handler = capital_judge
    grader = BinaryJudgeGrader("capital", make_judge(), CRITERION)
    samples = [ask("France", "Paris."), ask("Japan", "Kyoto."), ask("Atlantis", "Poseidonia.")]
    grades = await grader.grade_many(samples)
    assert [g.value if g else None for g in grades] == [1.0, 0.0, None]
    assert grades[0] is not None
    assert grades[0].info["verdict"] == "PASS"
    assert grades[0].reasoning == "'Paris.' for France"
    logs = grader.get_logs()
    assert (logs["score/mean"], logs["score/count"]) == (0.5, 2)
    assert (logs["score/abstained_count"], logs["score/error_count"]) == (1, 0)
    [abstained] = logs["score/unscored_samples"].column("Error")
    assert abstained.startswith("abstained: ")
    assert "Atlantis has no capital" in abstained
    assert logs["judge_calls/count"] == 3  # the abstained sample's call is counted too

    with pytest.raises(IgnoreGradeException, match="does not apply"):
        await grader.grade(ask("Atlantis", "Poseidonia."))


async def test_the_criterion_and_the_verdict_format_are_in_the_prompt(judge_server, make_judge):
    judge_server.handler = capital_judge
    await BinaryJudgeGrader("capital", make_judge(), CRITERION).grade(ask("Peru", "Lima"))
    body = judge_server.chat_requests[0].json
    prompt = last_user(judge_server.chat_requests[0])
    assert sections(prompt, "criterion") == [CRITERION]
    assert '"verdict": "PASS" | "FAIL" | "NA"' in prompt
    schema = body["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["reasoning", "verdict"]  # reasoning first


async def test_a_prose_answer_with_json_inside_is_read(judge_server, make_judge):
    judge_server.script(
        "Let me check the answer.\nThe capital of Japan is Tokyo, so it fails.\n"
        '```json\n{"reasoning": "Kyoto is not the capital", "verdict": "fail"}\n```'
    )
    grade = await BinaryJudgeGrader("capital", make_judge(), CRITERION).grade(ask("Japan", "Kyoto"))
    assert (grade.value, grade.reasoning) == (0.0, "Kyoto is not the capital")


async def test_the_schema_goes_in_the_prompt_for_servers_without_json_schema(
    judge_server, make_judge
):
    judge_server.handler = capital_judge
    grade = await BinaryJudgeGrader("capital", make_judge(json_schema=False), CRITERION).grade(
        ask("France", "Paris")
    )
    assert grade.value == 1.0
    body = judge_server.chat_requests[0].json
    assert "response_format" not in body
    asked = last_user(judge_server.chat_requests[0])
    assert '{"reasoning": "...", "verdict": "PASS"}' in asked  # an example, not the schema
    assert '"verdict" is one of "PASS", "FAIL", "NA"' in asked
    assert "JSON schema" not in asked


async def test_the_judge_sees_the_conversation_context(judge_server, make_judge):
    judge_server.handler = lambda request: verdict("PASS")
    thread = StringThread(
        [
            ("system", "You are a geography tutor."),
            ("document", "Lima is the capital of Peru."),
            ("user", "Let's talk about Peru."),
            ("assistant", "Sure!"),
            ("user", "What is its capital?"),
            ("assistant", "Lima"),
        ]
    )
    await BinaryJudgeGrader("capital", make_judge(), CRITERION).grade(thread)
    prompt = last_user(judge_server.chat_requests[0])
    assert sections(prompt, "document") == ["Lima is the capital of Peru."]
    assert sections(prompt, "turn") == [
        "You are a geography tutor.",
        "Let's talk about Peru.",
        "Sure!",
    ]
    assert '<turn role="system">' in prompt
    assert sections(prompt, "question") == ["What is its capital?"]
    assert sections(prompt, "answer") == ["Lima"]


async def test_documents_from_metadata_are_shown(judge_server, make_judge):
    judge_server.handler = lambda request: verdict("PASS")
    thread = ask("Peru", "Lima").with_metadata(documents=["Peru's capital is Lima."])
    await BinaryJudgeGrader("capital", make_judge(), CRITERION).grade(thread)
    assert sections(last_user(judge_server.chat_requests[0]), "document") == [
        "Peru's capital is Lima."
    ]


async def test_shots_come_before_the_sample_as_earlier_exchanges(judge_server, make_judge):
    judge_server.handler = capital_judge
    shots = [
        JudgeShot("What is the capital of France?", "Paris", "pass", "Paris is right."),
        JudgeShot(
            StringThread([("system", "Be terse."), ("user", "What is the capital of Japan?")]),
            "Kyoto",
            "FAIL",
            "Kyoto was the old capital.",
        ),
        {"question": "Capital of Atlantis?", "completion": "X", "verdict": "NA"},
    ]
    grader = BinaryJudgeGrader("capital", make_judge(), CRITERION, shots=shots)
    assert (await grader.grade(ask("Peru", "Lima"))).value == 1.0
    messages = judge_server.chat_requests[0].json["messages"]
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    first_shot, first_answer = messages[1], messages[2]
    assert sections(first_shot["content"], "answer") == ["Paris"]
    assert sections(first_shot["content"], "criterion") == [CRITERION]
    assert json.loads(first_answer["content"]) == {
        "reasoning": "Paris is right.",
        "verdict": "PASS",
    }
    assert sections(messages[3]["content"], "turn") == ["Be terse."]
    assert json.loads(messages[6]["content"])["verdict"] == "NA"
    assert sections(messages[-1]["content"], "answer") == ["Lima"]


def test_shots_are_checked():
    with pytest.raises(InvalidInputError, match="verdict"):
        JudgeShot("q", "a", "MAYBE")
    with pytest.raises(InvalidTypeError, match="thread_or_question"):
        JudgeShot(3, "a", "PASS")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="exactly one of"):
        JudgeShot.from_dict({"completion": "a", "verdict": "PASS"})
    with pytest.raises(InvalidInputError, match="optionally 'reasoning'"):
        JudgeShot.from_dict({"question": "q", "completion": "a", "verdict": "PASS", "x": 1})
    thread = StringThread([("user", "q")])
    shot = JudgeShot.from_dict(
        {"thread": thread.to_dict(), "completion": "a", "verdict": "fail", "reasoning": "r"}
    )
    assert shot == JudgeShot(thread, "a", "FAIL", "r")
    assert shot.thread().completion() == "a"


def test_criteria_and_shots_are_checked_at_construction(make_judge):
    with pytest.raises(InvalidInputError, match="criteria"):
        BinaryJudgeGrader("judge", make_judge(), "  ")
    with pytest.raises(InvalidTypeError, match="shots"):
        BinaryJudgeGrader("judge", make_judge(), CRITERION, shots="PASS")  # type: ignore[arg-type]


async def test_adaptive_harmony_shots_with_their_own_criterion(judge_server, make_judge):
    judge_server.handler = capital_judge
    in_french = BinaryJudgeShot(
        StringThread(
            [("system", "Be short."), ("user", "What is the capital of France?")]
        ).assistant("Paris"),
        None,
        "FAIL",
        "The answer is in French",
    )
    plain = BinaryJudgeShot(ask("Japan", "Tokyo"), "Tokyo is right.", "PASS")
    grader = BinaryJudgeGrader("capital", make_judge(), CRITERION, shots=[in_french, plain])
    assert grader.shots[0] == JudgeShot(
        StringThread([("system", "Be short."), ("user", "What is the capital of France?")]),
        "Paris",
        "FAIL",
        "The completion does not comply with the criteria",
        "The answer is in French",
    )
    assert (await grader.grade(ask("Peru", "Lima"))).value == 1.0
    messages = judge_server.chat_requests[0].json["messages"]
    assert sections(messages[1]["content"], "criterion") == ["The answer is in French"]
    assert sections(messages[1]["content"], "answer") == ["Paris"]
    assert json.loads(messages[2]["content"])["verdict"] == "FAIL"
    assert sections(messages[3]["content"], "criterion") == [CRITERION]
    assert sections(messages[-1]["content"], "criterion") == [CRITERION]


def test_an_adaptive_harmony_shot_must_end_with_the_answer():
    with pytest.raises(InvalidInputError, match="must end with the assistant"):
        BinaryJudgeShot(StringThread([("user", "q")]), None, "PASS").to_judge_shot()
