"""Threshold calibration of the real 135M judge on programmatic truth (arithmetic right or
wrong): what a held-out calibration gains on a weak judge, and that it claims nothing more.

The figures (κ before and after on held-out folds, the interval of the change) are printed
for the note; the assertions are about the method's promises, which hold whatever this
model does: an improvement is claimed exactly when the interval excludes 0, and the
judge's own threshold is kept otherwise. ``$GRADEWIRE_ALIGN_SAMPLES`` sets how many
samples are judged (default 40: about two minutes on a quiet machine).
"""

from __future__ import annotations

import os
import random

from real_model_support import within_deadline

import gradewire as gw
from gradewire.eval import calibrate_threshold

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
