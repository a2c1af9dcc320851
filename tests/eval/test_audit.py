"""Judge audits against the loopback judge server: retest, position bias, length."""

from __future__ import annotations

import json
import math
from collections import Counter

import krippendorff
import numpy as np
import pytest

from gradewire import InvalidInputError, StringThread
from gradewire.cli import main
from gradewire.eval import (
    audit_length,
    audit_position,
    audit_retest,
    paired_bootstrap,
)
from gradewire.judges import BinaryJudgeGrader, PairwiseJudgeGrader, pair
from gradewire.models import JudgeCache
from support.judge_scripts import last_user, sections, verdict


def threads(n: int) -> list[StringThread]:
    return [
        StringThread([("user", f"question {i}"), ("assistant", f"answer {i}")]) for i in range(n)
    ]


def flaky_judge():
    """PASS, except that answers 0-3 alternate PASS/FAIL from one call to the next."""
    calls: Counter[str] = Counter()

    def handler(request):
        [answer] = sections(last_user(request), "answer")
        calls[answer] += 1
        number = int(answer.split()[-1])
        if number < 4 and calls[answer] % 2 == 0:
            return verdict("FAIL")
        return verdict("PASS" if number % 3 else "FAIL")

    return handler


async def test_retest_counts_flips_and_alpha(judge_server, make_judge):
    judge_server.handler = flaky_judge()
    grader = BinaryJudgeGrader("g", make_judge(), "criterion")
    result = await audit_retest(grader, threads(12))
    assert result.n == 12
    assert set(result.flips) == {"1", "2"}  # 0 and 3 FAIL both times
    assert result.flip_rate == pytest.approx(2 / 12)
    first = [0.0 if i % 3 == 0 else 1.0 for i in range(12)]
    second = [0.0 if (i < 4 or i % 3 == 0) else 1.0 for i in range(12)]
    reference = krippendorff.alpha(
        reliability_data=np.array([first, second]), level_of_measurement="interval"
    )
    assert result.alpha == pytest.approx(reference, abs=1e-9)
    assert result.mean_shift == pytest.approx(-2 / 12)
    text = str(result)
    assert "2 changed score when asked again (flip rate 16.7%)" in text
    assert "lower the judge's temperature" in text
    assert len(judge_server.chat_requests) == 24


async def test_retest_refuses_a_cached_judge(judge_server, make_judge, tmp_path):
    judge_server.handler = flaky_judge()
    with JudgeCache(tmp_path / "cache.sqlite") as cache:
        grader = BinaryJudgeGrader("g", make_judge(cache=cache), "criterion")
        with pytest.raises(InvalidInputError, match="cache"):
            await audit_retest(grader, threads(4))


def first_judge(request):
    return json.dumps({"reasoning": "first", "verdict": "A"})


def fair_judge(request):
    first, second = sections(last_user(request), "answer")
    label = "A" if "good" in first else "B" if "good" in second else "TIE"
    return json.dumps({"reasoning": "by content", "verdict": label})


def pairs(n: int) -> list[StringThread]:
    return [
        pair(StringThread([("user", f"q{i}"), ("assistant", f"good {i}")]), f"bad {i}")
        for i in range(n)
    ]


async def test_position_audit(judge_server, make_judge):
    judge_server.handler = first_judge
    judge = PairwiseJudgeGrader("p", make_judge(), "better")
    biased = await audit_position(judge, pairs(5))
    assert (biased.n, biased.consistency, biased.first_position_rate) == (5, 0.0, 1.0)
    assert "consistency 0.0%" in str(biased)
    assert "swap = true" in str(biased)
    assert len(judge_server.chat_requests) == 10
    judge_server.handler = fair_judge
    fair = await audit_position(judge, pairs(5))
    assert (fair.consistency, fair.first_position_rate, fair.inconsistent) == (1.0, 0.5, ())
    with pytest.raises(InvalidInputError, match="other_completion"):
        await audit_position(judge, threads(3))


def long_judge(request):
    """PASS when the answer has more than 5 words: a judge that rewards length."""
    [answer] = sections(last_user(request), "answer")
    return verdict("PASS" if len(answer.split()) > 5 else "FAIL")


async def test_length_audit(judge_server, make_judge):
    judge_server.handler = long_judge
    grader = BinaryJudgeGrader("g", make_judge(), "criterion")
    samples = [
        *threads(6),
        StringThread([("user", "q"), ("assistant", "a long answer of many words here")]),
    ]
    result = await audit_length(grader, samples, n_resamples=500, seed=1)
    assert (result.mean, result.padded_mean) == pytest.approx((1 / 7, 1.0))
    assert result.shift == pytest.approx(6 / 7)
    reference = paired_bootstrap([0.0] * 6 + [1.0], [1.0] * 7, n_resamples=500, seed=1)
    assert (result.ci_low, result.ci_high) == (reference.low, reference.high)
    assert result.padding_words == 24
    assert "rewards length" in str(result)
    prompts = [sections(last_user(r), "answer")[0] for r in judge_server.chat_requests]
    assert sum("I hope this answer is helpful" in p for p in prompts) == 7


def test_the_audit_command(judge_server, tmp_path, capsys):
    judge_server.handler = long_judge
    data = tmp_path / "data.jsonl"
    rows = [{"id": f"r{i}", "prompt": f"q{i}", "completion": f"a{i}"} for i in range(4)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    graders = tmp_path / "graders.toml"
    graders.write_text(
        f'[[graders]]\ntype = "binary_judge"\nkey = "g"\ncriteria = "c"\n'
        f'judge_model = {{model = "judge", base_url = "{judge_server.base_url}"}}\n'
    )
    assert main(["audit", "length", str(data), "--graders", str(graders)]) == 0
    out = capsys.readouterr().out
    assert "moved the mean from 0.000 to 1.000" in out
    assert main(["audit", "retest", str(data), "--graders", str(graders), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["n"], report["flip_rate"], report["alpha"]) == (4, 0.0, None)
    assert main(["audit", "position", str(data), "--graders", str(graders)]) == 2
    assert "PairwiseJudgeGrader" in capsys.readouterr().err
    assert main(["audit", "length", str(data), "--graders", str(graders), "--grader", "x"]) == 2
    assert "no grader 'x'" in capsys.readouterr().err


def test_both_audits_print_their_interval_one_way():
    from gradewire.eval.auditing._judge_audits import LengthAudit, RetestAudit

    retest = RetestAudit("g", 4, 0.5, (0.25, 0.75), 0.25, ("1",), -0.25, 0)
    assert "Krippendorff's α 0.500 (95% interval [0.250, 0.750])" in str(retest)
    undefined = RetestAudit("g", 4, math.nan, (math.nan, math.nan), 0.0, (), 0.0, 0)
    assert "α – (no interval)" in str(undefined)
    length = LengthAudit("g", 4, 3, 0.5, 0.75, 0.25, 0.05, 0.45, 0.9, ("1",), 0)
    assert "shift +0.250, 90% interval [+0.050, +0.450]" in str(length)
    assert "rewards length" in str(length)
    unknown = LengthAudit("g", 1, 3, 0.5, 0.5, 0.0, math.nan, math.nan, 0.95, (), 0)
    assert "no interval" in str(unknown)
