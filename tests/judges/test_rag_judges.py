"""The RAG judges over real HTTP, with a server that answers like a correct judge."""

from __future__ import annotations

import json

import pytest

from gradewire import InvalidInputError, StringThread
from gradewire.judges._rag_judges import (
    AnswerRelevancyGrader,
    ContextRelevancyGrader,
    FaithfulnessGrader,
)
from support.judge_scripts import last_user, sections, verdicts

DOCUMENTS = [
    "Tim Berners-Lee created the first website.",
    "Tim Berners-Lee invented the world wide web.",
]
QUESTION = "Who published the first website?"
ANSWER = "Tim Berners-Lee published the first website in August 1990."
CLAIMS = [
    "Tim Berners-Lee published the first website.",
    "The first website was published in August 1990.",
]


def reference_thread(answer: str = ANSWER) -> StringThread:
    return StringThread(
        [("document", DOCUMENTS[0]), ("document", DOCUMENTS[1]), ("user", QUESTION)]
    ).assistant(answer)


def split_claims(request):
    """A correct judge's claims: the name and the date are two facts."""
    [answer] = sections(last_user(request), "answer")
    assert answer == ANSWER  # think blocks were removed before the judge saw it
    return json.dumps({"claims": CLAIMS})


def check_support(request):
    """A correct judge: a claim is supported when a document states it (no date in any)."""
    prompt = last_user(request)
    documents = " ".join(sections(prompt, "document"))
    labels = [
        "UNSUPPORTED" if "1990" in claim and "1990" not in documents else "SUPPORTED"
        for claim in sections(prompt, "claim")
    ]
    return verdicts(*labels)


async def test_the_reference_example_scores_one_half(judge_rules, judge_server, make_judge):
    judge_rules.when("atomic factual claims", split_claims)
    judge_rules.when("context documents support it", check_support)
    grader = FaithfulnessGrader("faithfulness", make_judge())
    grade = await grader.grade(reference_thread(f"<think>Recall 1990.</think>{ANSWER}"))

    assert grade.value == 0.5
    assert [c.name for c in grade.children] == CLAIMS
    assert [c.value for c in grade.children] == [1.0, 0.0]
    assert grade.children[1].info["verdict"] == "UNSUPPORTED"
    assert grade.children[1].info["reason"] == "item 2"
    assert "Unsupported: The first website was published in August 1990." in (grade.reasoning or "")
    extract, check = judge_server.chat_requests
    assert sections(last_user(check), "document") == DOCUMENTS
    assert sections(last_user(check), "claim") == CLAIMS
    assert sections(last_user(extract), "document") == []  # claims come from the answer only
    logs = grader.get_logs()
    assert (logs["claims/mean"], logs["supported_claims/mean"]) == (2.0, 1.0)
    assert logs["judge_calls/mean"] == 2.0


async def test_documents_can_come_from_metadata(judge_rules, make_judge):
    judge_rules.when("atomic factual claims", json.dumps({"claims": CLAIMS}))
    judge_rules.when("context documents support it", check_support)
    thread = StringThread([("user", QUESTION), ("assistant", ANSWER)], {"documents": DOCUMENTS})
    assert (await FaithfulnessGrader("f", make_judge()).grade(thread)).value == 0.5


async def test_a_verdict_count_mismatch_gets_the_repair_request(
    judge_rules, judge_server, make_judge
):
    judge_rules.when("atomic factual claims", json.dumps({"claims": CLAIMS}))
    judge_rules.when("context documents support it", verdicts("SUPPORTED"))  # one short
    judge_rules.when("could not be used", verdicts("SUPPORTED", "SUPPORTED"))
    grade = await FaithfulnessGrader("f", make_judge()).grade(reference_thread())
    assert grade.value == 1.0
    repair = judge_server.chat_requests[-1].json["messages"][-1]["content"]
    assert "expected exactly 2 verdicts" in repair


async def test_rag_judges_abstain_without_documents(judge_server, make_judge):
    thread = StringThread([("user", QUESTION), ("assistant", ANSWER)])
    for grader in (
        FaithfulnessGrader("f", make_judge()),
        ContextRelevancyGrader("c", make_judge()),
    ):
        assert await grader(thread) is None
        logs = grader.get_logs()
        assert logs["score/abstained_count"] == 1
        [reason] = logs["score/unscored_samples"].column("Error")
        assert "no context documents" in reason
        assert 'metadata["documents"]' in reason
    assert judge_server.chat_requests == []


async def test_an_answer_without_claims_abstains(judge_rules, make_judge):
    judge_rules.when("atomic factual claims", json.dumps({"claims": [" ", ""]}))
    grader = FaithfulnessGrader("f", make_judge())
    assert await grader(reference_thread("Happy to help with anything else!")) is None
    logs = grader.get_logs()
    assert logs["score/abstained_count"] == 1
    assert logs["judge_calls/mean"] == 1.0  # the extraction call was made, and is counted


def judge_relevance(request):
    """Relevant when the item mentions the first website."""
    prompt = last_user(request)
    items = sections(prompt, "document") or sections(prompt, "statement")
    return verdicts(*("RELEVANT" if "first website" in i else "IRRELEVANT" for i in items))


async def test_context_relevancy(judge_rules, judge_server, make_judge):
    judge_rules.when("relevant to the user's question", judge_relevance)
    # Retrieval can be judged before anything is generated: no assistant turn needed.
    thread = StringThread(
        [*(("document", d) for d in [*DOCUMENTS, "Paris is in France."]), ("user", QUESTION)]
    )
    grader = ContextRelevancyGrader("context", make_judge())
    grade = await grader.grade(thread)
    assert grade.value == pytest.approx(1 / 3)
    assert [c.name for c in grade.children] == ["document 1", "document 2", "document 3"]
    assert [c.value for c in grade.children] == [1.0, 0.0, 0.0]
    assert grade.children[2].info["text"] == "Paris is in France."
    [request] = judge_server.chat_requests
    assert sections(last_user(request), "question") == [QUESTION]
    assert grader.get_logs()["relevant_documents/mean"] == 1.0


async def test_answer_relevancy_counts_extra_information_against_the_answer(
    judge_rules, judge_server, make_judge
):
    statements = [
        "Tim Berners-Lee published the first website.",
        "The first website was published in August 1990.",
        "Berners-Lee was knighted in 2004.",
    ]
    judge_rules.when(
        "Break the assistant's answer into statements", json.dumps({"statements": statements})
    )
    judge_rules.when("relevant to what the user asked", judge_relevance)
    answer = f"{ANSWER} He was knighted in 2004."
    grader = AnswerRelevancyGrader("answer", make_judge())
    grade = await grader.grade(StringThread([("user", QUESTION), ("assistant", answer)]))
    assert grade.value == pytest.approx(2 / 3)
    assert [c.value for c in grade.children] == [1.0, 1.0, 0.0]
    judged = last_user(judge_server.chat_requests[1])
    assert sections(judged, "statement") == statements
    assert sections(judged, "question") == [QUESTION]
    assert "extra information the user did not ask for" in judged


async def test_answer_relevancy_of_an_empty_answer_is_zero_without_a_call(judge_server, make_judge):
    thread = StringThread([("user", QUESTION), ("assistant", "<think>no idea</think>")])
    grade = await AnswerRelevancyGrader("answer", make_judge()).grade(thread)
    assert grade.value == 0.0
    assert "empty" in (grade.reasoning or "")
    assert judge_server.chat_requests == []


async def test_answer_relevancy_needs_a_question(judge_server, make_judge):
    grader = AnswerRelevancyGrader("answer", make_judge())
    with pytest.raises(InvalidInputError, match="question"):
        await grader.grade(StringThread([("system", "s"), ("assistant", ANSWER)]))
    assert judge_server.chat_requests == []


async def test_faithfulness_claims_are_written_in_the_answers_language(
    judge_server, judge_rules, make_judge
):
    judge_rules.when("atomic factual claims", json.dumps({"claims": CLAIMS[:1]}))
    judge_rules.when("context documents support it", verdicts("SUPPORTED"))
    grader = FaithfulnessGrader(model=make_judge(), language="fr")
    assert (grader.grader_key, grader.language) == ("faithfulness_judge", "fr")
    assert (await grader.grade(reference_thread())).value == 1.0
    extract, _ = judge_server.chat_requests
    assert "The answer is written in French" in last_user(extract)
    plain = FaithfulnessGrader("f", make_judge())
    await plain.grade(reference_thread())
    assert "written in" not in last_user(judge_server.chat_requests[2])
