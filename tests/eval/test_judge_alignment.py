"""Aligning a judge beyond its threshold: few-shot examples and a revised criteria text,
each made from the training folds only and proven on the held-out fold.

The loopback judge reads its prompt. It passes an answer marked ZGOOD and fails one marked
ZBAD; an answer marked ZTRICK (which people pass) it fails, unless it was shown a ZTRICK
example (a shot) or its criteria say that tricks count. The proposer (the same server)
writes criteria that say so when it is shown a ZTRICK disagreement. So what each candidate
can gain is known in advance, and the figures are also checked against scikit-learn's κ
and scipy's bootstrap.
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from gradewire.core import BaseGrader, InvalidInputError, InvalidTypeError, StringThread
from gradewire.eval.auditing._alignment import align_judge
from gradewire.eval.auditing._calibration import _kappa_rows
from gradewire.judges import BinaryJudgeGrader, RangeJudgeGrader
from gradewire.models import OpenAIChatModel
from gradewire.specs import _factory
from support.judge_server import JudgeServer, Reply, Request, chat_body

build_grader = functools.partial(_factory.build_grader, trust_code=True)

N = 40
# 12 tricks (people pass them; the judge as it is fails them), 16 good, 12 bad.
KIND = {f"s{i}": ("ZTRICK" if i % 10 < 3 else "ZGOOD" if i % 2 else "ZBAD") for i in range(N)}
TRUTH = {k: float(kind != "ZBAD") for k, kind in KIND.items()}
TRICKS_COUNT = "tricks count as good"
UNTEACHABLE = {"s0", "s5", "s12", "s21", "s33"}
SHAKEN = {f"s{i}" for i in range(1, N, 4)}  # s1, s5, ...: fixes 3 errors, makes 7


def samples() -> dict[str, StringThread]:
    return {
        key: StringThread([("user", f"Question {key}?"), ("assistant", f"[{key}] {kind}")])
        for key, kind in KIND.items()
    }


def key_of(text: str) -> str | None:
    found = re.findall(r"\[(s\d+)\]", text)
    return found[-1] if found else None


class ReadingJudge:
    """The judge and the proposer; records what each judging call was shown."""

    def __init__(self, *, learnable: bool = True) -> None:
        self.learnable = learnable
        self.judged: list[tuple[str, set[str], str]] = []  # (sample, shots' ids, criteria)
        self.proposals: dict[str, set[str]] = {}  # criteria text → ids it was made from

    def __call__(self, request: Request) -> Reply:
        messages = request.json["messages"]
        users = [m["content"] for m in messages if m["role"] == "user"]
        last = users[-1]
        if last.startswith("An LLM judge grades answers"):
            return self.propose(last)
        key = key_of(last) or "?"
        shown = {key_of(text) for text in users[:-1]} - {None}
        criteria = next((c for c in self.proposals if c in last), "")
        self.judged.append((key, shown, criteria))  # type: ignore[arg-type]
        text = last.split("[" + key + "]")[-1]
        passed = "ZGOOD" in text
        if "ZTRICK" in text and self.learnable:
            shown_trick = any("ZTRICK" in t for t in users[:-1])
            passed = shown_trick or TRICKS_COUNT in last
        if not self.learnable:
            passed ^= key in UNTEACHABLE  # errors nothing can teach
            if shown or criteria:
                passed ^= key in SHAKEN  # taught, it changes its mind, blind to the labels
        answer = json.dumps({"reasoning": "read", "verdict": "PASS" if passed else "FAIL"})
        return Reply(json=chat_body(answer))

    def propose(self, prompt: str) -> Reply:
        shown = set(re.findall(r"\[(s\d+)\]", prompt))
        if self.learnable and "ZTRICK" in prompt:
            text = f"Is marked good; {TRICKS_COUNT} (rule {len(self.proposals)})"
        else:
            text = f"Is marked good, as before (rule {len(self.proposals)})"
        self.proposals[text] = shown
        return Reply(json=chat_body(json.dumps({"criteria": text})))


def binary(server: JudgeServer, criteria: str = "Is marked good") -> BinaryJudgeGrader:
    return build_grader(
        {
            "type": "binary_judge",
            "key": "good",
            "criteria": criteria,
            "judge_model": {"model": "judge", "base_url": server.base_url},
        }
    )


def proposer(server: JudgeServer) -> OpenAIChatModel:
    return OpenAIChatModel("proposer", base_url=server.base_url)


async def test_shots_and_criteria_from_disagreements_are_proven_on_held_out_folds(
    judge_server: JudgeServer,
) -> None:
    reader = ReadingJudge()
    judge_server.handler = reader
    judge = binary(judge_server)
    result = await align_judge(
        judge, samples(), TRUTH, folds=5, proposer=proposer(judge_server), n_resamples=500
    )
    truth = [TRUTH[k] for k in TRUTH]
    as_is = [float(KIND[k] == "ZGOOD") for k in TRUTH]
    assert result.kappa_before == pytest.approx(cohen_kappa_score(truth, as_is))
    assert [c.kind for c in result.candidates] == ["shots", "criteria"]  # 0/1: no threshold
    for candidate in result.candidates:
        after = [candidate.held_out[k] for k in TRUTH]
        assert candidate.kappa_after == pytest.approx(cohen_kappa_score(truth, after))
        assert candidate.kappa_after == 1.0  # every trick learnt, held out
        assert candidate.improved
        assert candidate.ci_low > 0
    assert result.adjusted_confidence == pytest.approx(1 - 0.05 / 2)  # Bonferroni over 2
    assert result.chosen == "shots"  # the first of equal changes
    # The chosen judge is made again from every label: shots of tricks, people's verdict.
    shots = result.changes["shots"]
    assert 1 <= len(shots) <= 4
    assert all("ZTRICK" in shot["completion"] and shot["verdict"] == "PASS" for shot in shots)
    assert result.identity_after != result.identity_before
    assert "use the shots candidate" in str(result)


async def test_no_sample_is_judged_by_a_candidate_made_from_its_own_label(
    judge_server: JudgeServer,
) -> None:
    reader = ReadingJudge()
    judge_server.handler = reader
    await align_judge(
        binary(judge_server), samples(), TRUTH, proposer=proposer(judge_server), n_resamples=0
    )
    with_shots = [(key, shown) for key, shown, _ in reader.judged if shown]
    with_rule = [(key, criteria) for key, _, criteria in reader.judged if criteria]
    assert with_shots
    assert with_rule
    assert all(key not in shown for key, shown in with_shots)
    assert all(key not in reader.proposals[criteria] for key, criteria in with_rule)
    # Each sample judged once as it is, once per candidate (its own fold's).
    counts = {key: sum(1 for k, _, _ in reader.judged if k == key) for key in TRUTH}
    assert set(counts.values()) == {3}


async def test_nothing_is_claimed_when_the_judge_cannot_be_taught(
    judge_server: JudgeServer,
) -> None:
    judge_server.handler = ReadingJudge(learnable=False)
    judge = binary(judge_server)
    result = await align_judge(
        judge, samples(), TRUTH, proposer=proposer(judge_server), n_resamples=500, seed=2
    )
    assert result.chosen is None
    assert not result.improved
    for candidate in result.candidates:
        assert not candidate.improved
        assert candidate.ci_low <= 0 <= candidate.ci_high or candidate.ci_high < 0
    assert result.changes == {}
    assert result.spec == judge.spec  # type: ignore[attr-defined]
    assert result.identity_after == result.identity_before
    assert "keep the judge as it is" in str(result)


async def test_the_interval_is_scipys_paired_bootstrap_at_the_bonferroni_level(
    judge_server: JudgeServer,
) -> None:
    judge_server.handler = ReadingJudge(learnable=False)
    result = await align_judge(
        binary(judge_server), samples(), TRUTH, proposer=proposer(judge_server), n_resamples=400
    )
    ids = list(TRUTH)
    truth = np.array([TRUTH[k] for k in ids], dtype=bool)
    before = np.array([(KIND[k] == "ZGOOD") != (k in UNTEACHABLE) for k in ids])
    for candidate in result.candidates:
        after = np.array([candidate.held_out[k] for k in ids], dtype=bool)

        def gain(index: Any, axis: int = -1, after: Any = after) -> Any:
            return _kappa_rows(truth[index], after[index], axis) - _kappa_rows(
                truth[index], before[index], axis
            )

        reference = stats.bootstrap(
            (np.arange(len(ids)),),
            gain,
            vectorized=True,
            n_resamples=400,
            confidence_level=result.adjusted_confidence,
            method="percentile" if "percentile" in candidate.method else "BCa",
            random_state=np.random.default_rng(0),
        )
        assert candidate.ci_low < candidate.ci_high  # not a degenerate interval
        if math.isfinite(candidate.ci_low):
            assert candidate.ci_low == pytest.approx(reference.confidence_interval.low)
            assert candidate.ci_high == pytest.approx(reference.confidence_interval.high)


async def test_the_chosen_judge_is_written_as_a_spec_that_builds_it(
    judge_server: JudgeServer,
) -> None:
    judge_server.handler = ReadingJudge()
    judge = binary(judge_server)
    result = await align_judge(judge, samples(), TRUTH, shots=2, n_resamples=300)
    assert result.chosen == "shots"
    spec = result.spec
    assert spec is not None
    before = judge.spec  # type: ignore[attr-defined]
    assert {k for k in spec if spec[k] != before.get(k)} == {"shots"}  # the diff: shots only
    rebuilt = build_grader(json.loads(json.dumps(spec)))
    assert rebuilt.identity == result.identity_after  # type: ignore[attr-defined]
    grade = await rebuilt.grade(samples()["s1"])  # a trick: passed now
    assert KIND["s1"] == "ZTRICK"
    assert grade.value == 1.0


async def test_a_range_judge_gets_its_threshold_and_the_spec_keeps_it(
    judge_server: JudgeServer,
) -> None:
    # Scores 4 (good) and 3 (bad) of 1-5: values 0.75 and 0.5, so 0.5 passes everything.
    def scorer(request: Request) -> Reply:
        text = request.json["messages"][-1]["content"]
        score = 3 if "ZBAD" in text.split("[s")[-1] else 4
        return Reply(json=chat_body(json.dumps({"reasoning": "read", "score": score})))

    judge_server.handler = scorer
    judge = build_grader(
        {
            "type": "range_judge",
            "key": "good",
            "criteria": "Is marked good",
            "use_logprobs": False,
            "judge_model": {"model": "judge", "base_url": judge_server.base_url},
        }
    )
    assert isinstance(judge, RangeJudgeGrader)
    result = await align_judge(judge, samples(), TRUTH, folds=4, n_resamples=300)
    assert [c.kind for c in result.candidates] == ["threshold"]  # no shots, no proposer
    assert result.kappa_before == 0.0  # everything passes
    assert result.chosen == "threshold"
    assert result.candidates[0].kappa_after == 1.0
    assert result.changes == {"pass_threshold": 0.625}
    assert result.spec is not None
    assert result.spec["pass_threshold"] == 0.625
    assert build_grader(result.spec).identity == result.identity_after  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("no JSON here", "did not answer"),
        (json.dumps({"criteria": "<the revised criterion>"}), "placeholder"),
        (json.dumps({"criteria": "..."}), "placeholder"),
        (json.dumps({"criteria": " is marked GOOD "}), "unchanged"),
    ],
)
async def test_a_proposer_that_gives_no_new_text_leaves_the_criteria_and_says_so(
    judge_server: JudgeServer, reply: str, why: str
) -> None:
    reader = ReadingJudge()

    def handler(request: Request) -> Reply:
        messages = request.json["messages"]
        # The proposer's call, or its repair (which follows the first call's prompt).
        if any(m["content"].startswith("An LLM judge grades") for m in messages):
            return Reply(json=chat_body(reply))
        return reader(request)

    judge_server.handler = handler
    result = await align_judge(
        binary(judge_server),
        samples(),
        TRUTH,
        shots=0,
        proposer=proposer(judge_server),
        n_resamples=200,
    )
    (criteria,) = result.candidates
    assert criteria.kind == "criteria"
    assert criteria.change == 0.0
    assert not criteria.improved
    assert len(criteria.notes) == 5  # one per fold
    assert all(why in note and "criteria kept" in note for note in criteria.notes)
    assert len(reader.judged) == N  # no fold judged again with the same criteria


async def test_bad_inputs_are_refused(judge_server: JudgeServer) -> None:
    judge = binary(judge_server)
    function = BaseGrader.from_function("f", lambda t: 1.0)
    with pytest.raises(InvalidTypeError, match="align a judge"):
        await align_judge(function, samples(), TRUTH)
    with pytest.raises(InvalidInputError, match="folds"):
        await align_judge(judge, samples(), TRUTH, folds=1)
    with pytest.raises(InvalidInputError, match="not given"):
        await align_judge(judge, samples(), {**TRUTH, "nope": 1.0})
    judge_server.handler = ReadingJudge()
    with pytest.raises(InvalidInputError, match="pass/fail"):
        await align_judge(judge, samples(), {k: 2.0 * v for k, v in TRUTH.items()})
    with pytest.raises(InvalidInputError, match="at least 15"):
        await align_judge(judge, samples(), TRUTH, folds=15)  # 14 failed by people


def test_the_judge_command_aligns_and_writes_the_spec(
    judge_server: JudgeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gradewire.cli._main import main

    judge_server.handler = ReadingJudge()
    graders = tmp_path / "graders.toml"
    graders.write_text(
        f'[judge]\nbase_url = "{judge_server.base_url}"\n\n'
        '[[graders]]\ntype = "binary_judge"\nkey = "good"\ncriteria = "Is marked good"\n'
        'judge_model = "judge"\n',
        encoding="utf-8",
    )
    data = tmp_path / "samples.jsonl"
    labels = tmp_path / "labels.jsonl"
    rows = [
        {"id": k, "prompt": f"Question {k}?", "completion": f"[{k}] {v}"} for k, v in KIND.items()
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    labels.write_text(
        "".join(
            json.dumps({"id": k, "label": "pass" if v else "fail"}) + "\n" for k, v in TRUTH.items()
        ),
        encoding="utf-8",
    )
    out = tmp_path / "aligned.json"
    arguments = ["judge", "align", str(data), "--labels", str(labels), "--graders", str(graders)]
    code = main([*arguments, "--propose-criteria", "--resamples", "300", "--spec-out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "shots:" in printed
    assert "criteria:" in printed
    spec = json.loads(out.read_text())
    assert spec["type"] == "binary_judge"
    assert len(spec["shots"]) >= 1
    assert build_grader(spec).grader_key == "good"
    assert main([*arguments, "--json", "--shots", "0", "--resamples", "0"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["candidates"] == []  # no shots, no proposer, a 0/1 judge: nothing to try
    assert answer["chosen"] is None
    assert answer["spec"]["criteria"] == "Is marked good"


def test_label_blind_candidates_are_rarely_claimed_better_simulated() -> None:
    # The null: each candidate is a judge as accurate as the one it would replace, its
    # verdicts drawn apart (no gain to find). Over many draws, the share in which any of
    # the two candidates is claimed better (its Bonferroni interval above 0) stays near or
    # below the family's 5%.
    from gradewire.eval.auditing._calibration import paired_kappa_change_interval

    rng = np.random.default_rng(7)
    draws, n, claims = 150, 40, 0
    for draw in range(draws):
        truth = rng.random(n) < 0.5
        before, *after = (np.where(rng.random(n) < 0.75, truth, ~truth) for _ in range(3))
        claimed = False
        for verdicts in after:
            low, _, _ = paired_kappa_change_interval(
                truth, before, verdicts, confidence=1 - 0.05 / 2, n_resamples=400, seed=draw
            )
            claimed |= math.isfinite(low) and low > 0
        claims += claimed
    assert claims / draws <= 0.08


def test_the_run_folder_align_refuses_what_needs_the_samples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gradewire.cli._main import main

    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"id": "s0", "label": "pass"}) + "\n", encoding="utf-8")
    code = main(["judge", "align", str(tmp_path), "--labels", str(labels), "--propose-criteria"])
    assert code == 2
    assert "--graders FILE" in capsys.readouterr().err
