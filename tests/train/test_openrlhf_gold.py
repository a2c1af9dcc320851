"""openrlhf_reward_func with a gold reference: its share graded, the pairs in extra_logs."""

from __future__ import annotations

import statistics

import pytest

from gradewire import BaseGrader, InvalidInputError, StringThread, openrlhf_reward_func
from gradewire.train._gold import in_gold_share


def pays_for_length(sample: StringThread) -> float:
    return min(len(sample.completion() or "") / 10, 1.0)


def correct(sample: StringThread) -> float:
    return float(sample.metadata["label"] in (sample.completion() or ""))


def test_the_gold_grades_its_share_and_the_pairs_reach_extra_logs():
    gold = BaseGrader.from_function("gold", correct)
    reward_func = openrlhf_reward_func(
        BaseGrader.from_function("length", pays_for_length), gold=gold, gold_fraction=0.5
    )
    prompts = [f"What is {i} + {i}? " for i in range(60)]
    responses = [str(2 * i) + ("!" * (i % 7)) if i % 3 else "no idea" for i in range(60)]
    labels = [str(2 * i) for i in range(60)]
    replies = [
        reward_func([p + r], [p], [label])
        for p, r, label in zip(prompts, responses, labels, strict=True)
    ]
    threads = [
        reward_func.threads([p + r], [p], [label])[0][0]
        for p, r, label in zip(prompts, responses, labels, strict=True)
    ]
    share = [i for i, t in enumerate(threads) if in_gold_share(t, 0.5)]
    assert 0 < len(share) < 60
    logs = [reply["extra_logs"] for reply in replies]
    assert [i for i, x in enumerate(logs) if x["length/gold_pair"] == [1.0]] == share
    gold_values = [correct(threads[i]) for i in share]
    gaps = [pays_for_length(threads[i]) - correct(threads[i]) for i in share]
    # OpenRLHF logs the mean over all samples: the ratio of two means is the pairs' mean.
    mean = statistics.mean
    pair = mean(x["length/gold_pair"][0] for x in logs)
    assert mean(x["length/gold_value"][0] for x in logs) / pair == pytest.approx(mean(gold_values))
    assert mean(x["length/gold_gap"][0] for x in logs) / pair == pytest.approx(mean(gaps))
    # The gold's own statistics, in its logs.
    figures = gold.get_logs(clear=True)
    assert figures["score/count"] == len(share)
    assert figures["score/mean"] == pytest.approx(mean(gold_values))
    # Without a gold, no gold keys.
    plain = openrlhf_reward_func(BaseGrader.from_function("length", pays_for_length))
    assert not any("gold" in k for k in plain(["q a"], ["q "], ["a"])["extra_logs"])


def test_a_gold_with_the_rewards_key_or_a_bad_share_is_refused():
    grader = BaseGrader.from_function("length", pays_for_length)
    with pytest.raises(InvalidInputError, match="its own key"):
        openrlhf_reward_func(grader, gold=BaseGrader.from_function("length", correct))
    with pytest.raises(InvalidInputError, match="gold_fraction"):
        openrlhf_reward_func(grader, gold=BaseGrader.from_function("g", correct), gold_fraction=0)
