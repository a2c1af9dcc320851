"""JudgePanel over real HTTP: verdicts in the tree, quorum, ties, lean and α in the logs."""

from __future__ import annotations

import json
import math

import krippendorff
import numpy as np
import pytest

import gradewire as gw
from gradewire import IgnoreGradeException, InvalidInputError, StringThread
from gradewire.judges import BinaryJudgeGrader, JudgePanel
from gradewire.specs import build_grader, grader_config, load_graders
from support.judge_scripts import last_user, sections, verdict
from support.judge_server import error

# Three judges read three criteria; each passes an answer by its own rule, so their
# verdicts differ in known ways.
RULES = {
    "lenient": lambda answer: True,
    "mentions_paris": lambda answer: "Paris" in answer,
    "short": lambda answer: len(answer.split()) <= 3,
}


def panel_judge(request):
    prompt = last_user(request)
    [criterion] = sections(prompt, "criterion")
    [answer] = sections(prompt, "answer")
    if criterion == "broken":
        return error(400, "this judge is down")
    if "Atlantis" in answer and criterion == "short":
        return verdict("NA", "no such city")
    ok = RULES[criterion](answer)
    return verdict("PASS" if ok else "FAIL", f"{criterion} on {answer!r}")


ANSWERS = ["Paris", "It is Paris, the capital of France", "Lyon", "Marseille is a big city"]


def sample(answer: str) -> StringThread:
    return StringThread([("user", "What is the capital of France?"), ("assistant", answer)])


def judges(make_judge, criteria=tuple(RULES)):
    model = make_judge()
    return [BinaryJudgeGrader(c, model, c) for c in criteria]


async def test_majority_keeps_every_verdict_and_logs_lean_and_alpha(judge_server, make_judge):
    judge_server.handler = panel_judge
    panel = JudgePanel("capital", judges(make_judge), aggregate="majority")
    grades = await panel.grade_many([sample(a) for a in ANSWERS])
    expected = {a: {k: float(rule(a)) for k, rule in RULES.items()} for a in ANSWERS}
    majority = [float(sum(v.values()) >= 2) for v in expected.values()]
    assert [g.value if g else None for g in grades] == majority == [1.0, 1.0, 1.0, 0.0]
    first = grades[0]
    assert first is not None
    assert [c.grader_key for c in first.children] == list(RULES)
    assert [c.value for c in first.children] == [1.0, 1.0, 1.0]
    assert first.children[1].reasoning == "mentions_paris on 'Paris'"
    assert first.info["verdicts"] == expected["Paris"]
    assert "mentions_paris: 1 - mentions_paris on 'Paris'" in (first.reasoning or "")

    logs = panel.get_logs()
    assert logs["score/mean"] == 0.75
    for key in RULES:
        leans = [expected[a][key] - m for a, m in zip(ANSWERS, majority, strict=True)]
        assert logs[f"{key}/lean/mean"] == pytest.approx(np.mean(leans), abs=1e-12)
        assert logs[f"{key}/score/count"] == 4  # each judge's own logs, under its key
    data = np.array([[expected[a][k] for a in ANSWERS] for k in RULES])
    reference = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert logs["krippendorff_alpha/mean"] == pytest.approx(reference, abs=1e-9)
    assert logs["krippendorff_alpha/count"] == 1
    # Each step covers its own window.
    panel.get_logs(clear=True)
    assert panel.get_logs() == {}


async def test_a_failing_judge_is_left_to_the_quorum(judge_server, make_judge):
    judge_server.handler = panel_judge
    panel = JudgePanel("capital", judges(make_judge, ("lenient", "mentions_paris", "broken")))
    assert panel.quorum == 2
    grades = await panel.grade_many([sample("Paris"), sample("Lyon")])
    assert grades[0] is not None
    assert grades[0].value == 1.0
    assert set(grades[0].info["failed"]) == {"broken"}
    assert "this judge is down" in grades[0].info["failed"]["broken"]
    assert [c.grader_key for c in grades[0].children] == ["lenient", "mentions_paris"]
    # Lyon: lenient PASS, mentions_paris FAIL, broken gives nothing: a tie of two.
    assert grades[1] is None
    logs = panel.get_logs()
    assert logs["score/abstained_count"] == 1
    assert logs["score/error_count"] == 0
    assert logs["broken/score/error_count"] == 2  # the judge's own failures are counted
    [reason] = [r["abstained"] for r in panel._logs if "abstained" in r]
    assert "split with no majority" in reason
    assert "tie_break='abstain'" in reason


async def test_below_quorum_the_sample_abstains_never_zero(judge_server, make_judge):
    judge_server.handler = panel_judge
    panel = JudgePanel(
        "capital", judges(make_judge, ("lenient", "mentions_paris", "short")), quorum=3
    )
    # Atlantis: short says NA, the others answer: an abstention, named in the reason.
    with pytest.raises(IgnoreGradeException) as caught:
        await panel.grade(sample("Atlantis"))
    assert "2 of 3 judges gave a verdict, fewer than the quorum of 3" in caught.value.reason
    assert "short abstained (" in caught.value.reason
    assert "no such city" in caught.value.reason
    assert await panel(sample("Atlantis")) is None  # a call logs what grade() raises
    logs = panel.get_logs()
    assert logs["score/abstained_count"] == 1
    assert logs["score/error_count"] == 0
    assert "score/mean" not in logs


async def test_a_quorum_lost_to_failing_judges_is_an_error_not_an_abstention(
    judge_server, make_judge
):
    """A judge server that is down is a failure the trainer's fail-fast must see."""
    judge_server.handler = panel_judge
    panel = JudgePanel(
        "capital", judges(make_judge, ("lenient", "broken", "short")), quorum=3, aggregate="mean"
    )
    # Paris: two verdicts, broken failed; Atlantis: one verdict, short abstained, broken
    # failed. Either way the failure alone keeps the panel from its quorum.
    for answer in ("Paris", "Atlantis"):
        with pytest.raises(gw.GradingError) as caught:
            await panel.grade(sample(answer))
        message = str(caught.value)
        assert "fewer than the quorum of 3" in message
        assert "broken failed (ModelHTTPError" in message
        assert type(caught.value.__cause__).__name__ == "ModelHTTPError"
    assert "short abstained (" in message
    assert await panel(sample("Paris")) is None  # a call logs what grade() raises
    logs = panel.get_logs()
    assert logs["score/error_count"] == 1
    assert logs["score/abstained_count"] == 0
    assert logs["broken/score/error_count"] == 3


def _failing(key: str, exc: Exception) -> gw.BaseGrader:
    def fails(sample: StringThread) -> float:
        raise exc

    return gw.BaseGrader.from_function(key, fails)


def _abstaining(key: str) -> gw.BaseGrader:
    def abstains(sample: StringThread) -> float:
        raise IgnoreGradeException("no label")

    return gw.BaseGrader.from_function(key, abstains)


async def test_every_judge_failing_is_an_error_and_every_judge_abstaining_an_abstention():
    down = JudgePanel(
        "p", [_failing(k, ConnectionError("refused")) for k in ("a", "b", "c")], aggregate="mean"
    )
    grades = await down.grade_many([sample("x")] * 4)
    assert grades == [None] * 4
    logs = down.get_logs()
    assert logs["score/error_count"] == 4
    assert logs.get("score/abstained_count", 0) == 0
    with pytest.raises(gw.GradingError, match=r"0 of 3 judges gave a verdict") as caught:
        await down.grade(sample("x"))
    assert isinstance(caught.value.__cause__, ConnectionError)
    quiet = JudgePanel("q", [_abstaining(k) for k in ("a", "b", "c")])
    assert await quiet.grade_many([sample("x")] * 2) == [None, None]
    assert quiet.get_logs()["score/abstained_count"] == 2
    # Failures the abstentions could not have made up for: 2 failed, 1 abstained.
    mixed = JudgePanel(
        "m", [_failing("a", ConnectionError("x")), _failing("b", ValueError("y")), _abstaining("c")]
    )
    with pytest.raises(gw.GradingError, match="a failed"):
        await mixed.grade(sample("x"))
    # With quorum 1, one abstaining judge could have given the verdict: an abstention.
    lenient = JudgePanel("l", [_failing("a", ConnectionError("x")), _abstaining("c")], quorum=1)
    with pytest.raises(IgnoreGradeException, match="a failed"):
        await lenient.grade(sample("x"))


async def test_a_reward_logger_stops_when_the_panels_judges_are_down():
    down = JudgePanel("p", [_failing(k, ConnectionError("refused")) for k in ("a", "b", "c")])
    with pytest.raises(gw.GraderFailingError, match="ConnectionError: refused"):
        await gw.RewardLogger(down).grade([sample("x")] * 4)


@pytest.mark.parametrize(
    ("tie_break", "value"), [("abstain", None), ("low", 0.0), ("high", 1.0), ("mean", 0.5)]
)
async def test_a_majority_tie_follows_the_declared_policy(
    judge_server, make_judge, tie_break, value
):
    judge_server.handler = panel_judge
    panel = JudgePanel(
        "capital", judges(make_judge, ("lenient", "mentions_paris")), tie_break=tie_break
    )
    [grade] = await panel.grade_many([sample("Lyon")])
    assert (grade.value if grade else None) == value
    if grade is not None:
        assert grade.info["tie"] is True
    assert panel.get_logs()["score/abstained_count"] == (1 if value is None else 0)


@pytest.mark.parametrize(
    ("aggregate", "value"),
    [("mean", 0.5), ("median", 0.5), ("min", 0.2), ("max", 0.8), ("majority", 0.2)],
)
async def test_aggregates(aggregate, value):
    scores = {"a": 0.2, "b": 0.2, "c": 0.8, "d": 0.8}
    scores = {"a": 0.2, "b": 0.2, "c": 0.8} if aggregate == "majority" else scores
    panel = JudgePanel(
        "p",
        [gw.BaseGrader.from_function(k, lambda s, v=v: v) for k, v in scores.items()],
        aggregate=aggregate,
    )
    grade = await panel.grade(sample("x"))
    assert grade.value == pytest.approx(value)


def test_arguments_are_checked():
    one = gw.BaseGrader.from_function("a", lambda s: 1.0)
    two = gw.BaseGrader.from_function("b", lambda s: 1.0)
    with pytest.raises(InvalidInputError, match="at least two judges"):
        JudgePanel("p", [one])
    with pytest.raises(InvalidInputError, match="share the key"):
        JudgePanel("p", [one, one])
    with pytest.raises(InvalidInputError, match="quorum"):
        JudgePanel("p", [one, two], quorum=3)
    with pytest.raises(InvalidInputError, match="aggregate"):
        JudgePanel("p", [one, two], aggregate="vote")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="tie_break"):
        JudgePanel("p", [one, two], tie_break="coin")  # type: ignore[arg-type]


async def test_alpha_matches_krippendorff_with_missing_verdicts():
    rng = np.random.default_rng(3)
    data = rng.integers(0, 2, size=(3, 40)).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan
    columns = {f"j{r}": data[r] for r in range(3)}

    def judge(key):
        def score(s):
            value = columns[key][int(s.metadata["i"])]
            if math.isnan(value):
                raise IgnoreGradeException("no verdict")
            return float(value)

        return gw.BaseGrader.from_function(key, score)

    panel = JudgePanel("p", [judge(k) for k in columns], quorum=1, tie_break="low")
    threads = [
        StringThread([("user", "q"), ("assistant", "a")], metadata={"i": i}) for i in range(40)
    ]
    await panel.grade_many(threads)
    reference = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert panel.alpha() == pytest.approx(reference, abs=1e-9)
    nominal = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert panel.alpha() == pytest.approx(nominal, abs=1e-9)  # 0/1 verdicts: the same α


async def test_declared_as_data(judge_server, make_judge, tmp_path):
    judge_server.handler = panel_judge
    file = tmp_path / "graders.toml"
    file.write_text(
        f"""
[judge]
model = "judge"
base_url = "{judge_server.base_url}"

[[graders]]
type = "panel"
key = "capital"
aggregate = "majority"
quorum = 2
tie_break = "low"
judges = [
  {{ type = "binary_judge", key = "lenient", criteria = "lenient" }},
  {{ type = "binary_judge", key = "mentions_paris", criteria = "mentions_paris" }},
  {{ type = "binary_judge", key = "short", criteria = "short" }},
]
"""
    )
    [panel] = load_graders(file)
    assert isinstance(panel, JudgePanel)
    assert (panel.aggregate, panel.quorum, panel.tie_break) == ("majority", 2, "low")
    grade = await panel.grade(sample("Lyon"))
    assert grade.value == 1.0
    assert len(grade.children) == 3
    config = grader_config(panel)
    rebuilt = build_grader(json.loads(json.dumps(config["graders"][0])))
    assert isinstance(rebuilt, JudgePanel)
    assert [j.grader_key for j in rebuilt.judges] == list(RULES)
    with pytest.raises(InvalidInputError, match="judges"):
        build_grader({"type": "panel", "key": "p", "judges": [config["graders"][0]["judges"][0]]})


async def test_bounded_logs_keep_counting_every_sample():
    panel = JudgePanel(
        "p",
        [gw.BaseGrader.from_function(k, lambda s, v=v: v) for k, v in (("a", 1.0), ("b", 0.0))],
        tie_break="high",
        max_log_records=4,
    )
    await panel.grade_many([sample(str(i)) for i in range(10)])
    logs = panel.get_logs()
    assert logs["score/count"] == 10
    assert logs["a/lean/count"] == 10
    assert logs["b/score/count"] == 10
    assert logs["b/lean/mean"] == -1.0
