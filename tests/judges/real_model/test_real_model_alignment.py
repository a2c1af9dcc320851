"""Aligning the real 135M judge on programmatic truth (arithmetic right or wrong): what a
held-out threshold calibration, few-shot examples chosen from its disagreements and a
criteria text the model itself proposes gain on a weak judge, and that nothing more is
claimed.

The figures (κ before and after on held-out folds, the interval of the change) are printed
for the note; the assertions are about the method's promises, which hold whatever this
model does: an improvement is claimed exactly when the interval excludes 0, and the
judge is kept as it is otherwise. ``$GRADEWIRE_ALIGN_SAMPLES`` sets how many samples are
judged (default 40: about two minutes a test on a quiet machine; the few-shot and
criteria test judges every sample three times).

Measured (40 samples, 4 folds, seed 0, December 2026): the range judge's κ −0.05 as it is;
its threshold calibrated held out 0.05 (change +0.10, 97.5% interval [−0.25, +0.44]); a
criteria text the model proposed itself −0.20 (change −0.15 [−0.54, +0.21]). The binary
judge passes everything (κ 0.00): two few-shot examples of its disagreements change
nothing (+0.00 [+0.00, +0.00]), and the criteria it proposes are no criteria ("PASS" in
every fold; "<the revised criterion>" when the prompt showed a placeholder, which is now
refused). Nothing was claimed, as none of the intervals excludes 0.
"""

from __future__ import annotations

import os
import random

from real_model_support import within_deadline

import gradewire as gw
from gradewire.eval import calibrate_threshold
from gradewire.eval.auditing._alignment import align_judge

N = int(os.environ.get("GRADEWIRE_ALIGN_SAMPLES", "40"))


def arithmetic(n: int, seed: int = 0) -> tuple[dict[str, gw.StringThread], dict[str, float]]:
    rng = random.Random(seed)
    threads, labels = {}, {}
    for i in range(n):
        a, b = rng.randint(2, 49), rng.randint(2, 49)
        right = i % 2 == 0
        answer = a + b if right else a + b + rng.choice([-10, -3, -1, 1, 2, 7])
        threads[f"a{i}"] = gw.StringThread(
            [("user", f"What is {a} + {b}?"), ("assistant", f"{a} + {b} = {answer}.")]
        )
        labels[f"a{i}"] = float(right)
    return threads, labels


async def test_threshold_calibration_on_the_real_judge(llama_server: str) -> None:
    threads, labels = arithmetic(N)
    judge = gw.RangeJudgeGrader(
        "correct",
        # attempt_timeout: a loaded machine can make a 1 s call take a minute.
        gw.OpenAIChatModel("smollm2", base_url=llama_server, attempt_timeout=300.0),
        "The arithmetic in the answer is correct",
    )
    grades = await within_deadline(judge.grade_many(list(threads.values()), max_concurrency=1))
    scores = {
        key: grade.value for key, grade in zip(threads, grades, strict=True) if grade is not None
    }
    assert len(scores) >= N - 2
    result = calibrate_threshold(scores, labels, folds=4, n_resamples=2000, seed=0)
    print(f"\nscores seen: {sorted({round(v, 3) for v in scores.values()})[:12]}")
    print(result)
    assert result.improved == (result.ci_low > 0)
    assert result.threshold == (result.fitted_threshold if result.improved else 0.5)
    assert result.n == len(scores)


async def test_few_shot_and_criteria_alignment_on_the_real_judge(llama_server: str) -> None:
    threads, labels = arithmetic(N)
    model = gw.OpenAIChatModel("smollm2", base_url=llama_server, attempt_timeout=300.0)
    judge = gw.BinaryJudgeGrader("correct", model, "The arithmetic in the answer is correct")
    result = await within_deadline(
        align_judge(
            judge,
            threads,
            labels,
            folds=4,
            shots=2,
            proposer=model,  # the judge's own model proposes the criteria
            concurrency=1,
            n_resamples=2000,
            seed=0,
        )
    )
    print()
    print(result)
    for candidate in result.candidates:
        if candidate.kind == "criteria":
            print(f"criteria proposed per fold: {candidate.folds}")
    assert [c.kind for c in result.candidates] == ["shots", "criteria"]
    for candidate in result.candidates:
        assert candidate.improved == (candidate.ci_low > 0)
    assert (result.chosen is None) == (not any(c.improved for c in result.candidates))
    if result.chosen is None:
        assert result.identity_after == result.identity_before
        assert result.changes == {}
    assert result.n >= N - 2


async def test_threshold_and_criteria_alignment_of_the_real_range_judge(llama_server: str) -> None:
    threads, labels = arithmetic(N)
    model = gw.OpenAIChatModel("smollm2", base_url=llama_server, attempt_timeout=300.0)
    judge = gw.RangeJudgeGrader("correct", model, "The arithmetic in the answer is correct")
    result = await within_deadline(
        align_judge(judge, threads, labels, folds=4, proposer=model, concurrency=1, seed=0)
    )
    print()
    print(result)
    assert [c.kind for c in result.candidates] == ["threshold", "criteria"]
    for candidate in result.candidates:
        assert candidate.improved == (candidate.ci_low > 0)
    assert (result.chosen is None) == (not any(c.improved for c in result.candidates))
    assert result.n >= N - 2
