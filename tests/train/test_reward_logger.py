import math
import statistics

import numpy as np
import pytest

from gradewire import (
    BaseGrader,
    CombinedGrader,
    Histogram,
    InvalidInputError,
    JsonlSink,
    MemorySink,
    RewardLogger,
    StringThread,
    Table,
)
from gradewire.sinks import read_jsonl
from gradewire.train import StepWindow

EDGES = [0.0, 0.25, 0.5, 0.75, 1.0]


def thread(prompt: str, completion: str, **metadata: object) -> StringThread:
    return StringThread([("user", prompt), ("assistant", completion)], metadata)


def length_score(sample: StringThread) -> float | None:
    text = sample.completion() or ""
    if text.startswith("skip"):
        return None  # abstains
    if text.startswith("boom"):
        raise ValueError("cannot grade this one")
    return min(len(text) / 10, 1.0)


def batch(step: int) -> list[StringThread]:
    completions = ["a" * (step + i) for i in range(6)] + ["skip me", "boom"]
    return [thread(f"prompt {i % 3}", c) for i, c in enumerate(completions)]


async def test_a_loop_logs_exact_statistics_per_step(tmp_path):
    grader = BaseGrader.from_function("length", length_score)
    path = tmp_path / "rl.jsonl"
    reward_logger = RewardLogger(grader, sinks=JsonlSink(path), histogram_edges=EDGES)
    expected = {}
    for step in (1, 2, 3):
        grades = await reward_logger.grade(batch(step))
        assert grades[-2] is None
        assert grades[-1] is None
        reward_logger.step(step)
        expected[step] = [g.value for g in grades if g is not None]
    reward_logger.close()

    run = read_jsonl(path)
    assert [step for step, _ in run.steps] == [1, 2, 3]
    for step, logs in run.steps:
        values = expected[step]
        assert logs["rewards/length/score/mean"] == pytest.approx(statistics.mean(values))
        assert logs["rewards/length/score/std"] == pytest.approx(statistics.stdev(values))
        assert logs["rewards/length/score/min"] == min(values)
        assert logs["rewards/length/score/max"] == max(values)
        assert logs["rewards/length/score/count"] == len(values)
        assert logs["rewards/length/score/abstained_count"] == 1
        assert logs["rewards/length/score/error_count"] == 1
        histogram = logs["rewards/length/score/histogram"]
        assert isinstance(histogram, Histogram)
        assert histogram.counts == tuple(np.histogram(values, bins=EDGES)[0])
        lengths = [min(step + i, 10) for i in range(6)]
        raw_lengths = [step + i for i in range(6)]
        assert values == [n / 10 for n in lengths]
        assert logs["rewards/length/score/length_corr"] == pytest.approx(
            np.corrcoef(values, raw_lengths)[0, 1]
        )


async def test_no_sinks_hands_back_the_dict_and_nothing_logged_is_empty():
    grader = BaseGrader.from_function("length", length_score)
    reward_logger = RewardLogger(grader)
    assert reward_logger.step(0) == {}
    await reward_logger.grade(batch(1))
    logs = reward_logger.step(1)
    assert logs["rewards/length/score/count"] == 6
    assert reward_logger.step(2) == {}  # drained


async def test_zero_spread_groups_are_counted_over_groups_with_two_scores():
    grader = BaseGrader.from_function("exact", lambda s: float(s.completion() == "yes"))
    reward_logger = RewardLogger(grader, prefix=None)
    samples = [
        thread("q1", "yes"),
        thread("q1", "yes"),  # q1: no spread
        thread("q2", "yes"),
        thread("q2", "no"),  # q2: spread
        thread("q3", "no"),
        thread("q3", "no"),  # q3: no spread
        thread("q4", "no"),  # a lone sample: no group to speak of
    ]
    await reward_logger.grade(samples)
    logs = reward_logger.step(1)
    assert logs["exact/score/groups"] == 3
    assert logs["exact/score/zero_spread_frac"] == pytest.approx(2 / 3)

    # Explicit group keys override the prompt; metadata["group"] does too.
    await reward_logger.grade(samples[:4], groups=["a", "b", "a", "b"])
    logs = reward_logger.step(2)
    assert logs["exact/score/zero_spread_frac"] == pytest.approx(0.5)
    tagged = [thread(f"q{i}", c, group="g") for i, c in enumerate(["yes", "yes", "yes"])]
    await reward_logger.grade(tagged)
    assert reward_logger.step(3)["exact/score/groups"] == 1


async def test_lengths_come_from_metadata_or_the_caller():
    grader = BaseGrader.from_function("score", lambda s: float(s.metadata["value"]))
    reward_logger = RewardLogger(grader, prefix=None)
    values = [0.1, 0.4, 0.35, 0.8, 0.9]
    tokens = [3, 9, 7, 20, 15]
    samples = [
        thread("p", "x", value=v, completion_length=n) for v, n in zip(values, tokens, strict=True)
    ]
    await reward_logger.grade(samples)
    expected = np.corrcoef(values, tokens)[0, 1]
    assert reward_logger.step(1)["score/score/length_corr"] == pytest.approx(expected)
    await reward_logger.grade(samples, lengths=[5, 4, 3, 2, 1])
    assert reward_logger.step(2)["score/score/length_corr"] == pytest.approx(
        np.corrcoef(values, [5, 4, 3, 2, 1])[0, 1]
    )


async def test_combined_grader_totals_and_sub_graders():
    fmt = BaseGrader.from_function("format", lambda s: float(s.completion().endswith(".")))
    size = BaseGrader.from_function("size", lambda s: min(len(s.completion()) / 10, 1.0))
    combo = CombinedGrader("combo", [fmt, size], weights=[3.0, 1.0])
    reward_logger = RewardLogger(combo, histogram_edges={"combo/size": [0, 0.5, 1], "*": EDGES})
    completions = ["Hi.", "Hello there.", "no dot", "x"]
    await reward_logger.grade([thread("p", c) for c in completions])
    logs = reward_logger.step(1)
    f = [float(c.endswith(".")) for c in completions]
    s = [min(len(c) / 10, 1.0) for c in completions]
    weighted = [(3 * a + b) / 4 for a, b in zip(f, s, strict=True)]
    unweighted = [(a + b) / 2 for a, b in zip(f, s, strict=True)]
    assert logs["rewards/combo/score/mean"] == pytest.approx(statistics.mean(weighted))
    assert logs["rewards/combo/total/weighted/mean"] == pytest.approx(statistics.mean(weighted))
    assert logs["rewards/combo/total/unweighted/mean"] == pytest.approx(statistics.mean(unweighted))
    assert logs["rewards/combo/total/unweighted/max"] == max(unweighted)
    assert logs["rewards/combo/size/score/mean"] == pytest.approx(statistics.mean(s))
    size_hist = logs["rewards/combo/size/score/histogram"]
    assert isinstance(size_hist, Histogram)
    assert size_hist.edges == (0.0, 0.5, 1.0)
    assert size_hist.counts == (2, 2)
    fmt_hist = logs["rewards/combo/format/score/histogram"]
    assert isinstance(fmt_hist, Histogram)
    assert fmt_hist.edges == tuple(EDGES)


async def test_windows_of_slices_merge_into_the_whole():
    # What ranks do: each grades a slice; the merged window equals one pass over all.
    samples = [s for step in (1, 2, 3, 4) for s in batch(step)]
    slices = [samples[i::4] for i in range(4)]
    windows = []
    for part in slices:
        reward_logger = RewardLogger(BaseGrader.from_function("length", length_score))
        await reward_logger.grade(part)
        windows.append(reward_logger.collect())
    whole_logger = RewardLogger(BaseGrader.from_function("length", length_score))
    await whole_logger.grade(samples)
    whole = whole_logger.collect().to_logs("rewards")
    merged = StepWindow.merge_all(StepWindow.from_dict(w.to_dict()) for w in windows)
    logs = merged.to_logs("rewards")
    assert logs.keys() == whole.keys()
    for key, value in whole.items():
        if "/health/latency_p" in key:
            continue  # the seconds of two separate gradings, not one figure merged
        if isinstance(value, Histogram):
            assert logs[key] == value, key
        else:
            assert math.isclose(logs[key], value, rel_tol=1e-12, abs_tol=1e-15), key


async def test_tables_come_on_their_own_cadence():
    grader = BaseGrader.from_function("length", length_score, sample_tables=True)
    sink = MemorySink()
    reward_logger = RewardLogger(grader, sinks=[sink], table_every=2)
    for step in (1, 2, 3, 4):
        await reward_logger.grade(batch(step))
        reward_logger.step(step)
    tables = sink.table("rewards/length/score/scored_samples")
    assert [step for step, _ in tables] == [2, 4]
    assert isinstance(tables[0][1], Table)
    assert len(tables[0][1]) == 6
    assert [step for step, _ in sink.metric("rewards/length/score/mean")] == [1, 2, 3, 4]


async def test_several_graders_need_a_name_and_bad_settings_say_so():
    a = BaseGrader.from_function("a", lambda s: 1.0)
    b = BaseGrader.from_function("b", lambda s: 0.0)
    reward_logger = RewardLogger([a, b])
    with pytest.raises(InvalidInputError, match="name one"):
        await reward_logger.grade([thread("p", "c")])
    grades = await reward_logger.grade([thread("p", "c")], grader="b")
    assert grades[0] is not None
    assert grades[0].value == 0.0
    with pytest.raises(InvalidInputError, match="no grader 'c'"):
        await reward_logger.grade([thread("p", "c")], grader="c")
    with pytest.raises(InvalidInputError, match="share the key"):
        RewardLogger([a, BaseGrader.from_function("a", lambda s: 1.0)])
    with pytest.raises(InvalidInputError, match="increase"):
        RewardLogger(a, histogram_edges=[1.0, 0.0])
    with pytest.raises(InvalidInputError, match="table_every"):
        RewardLogger(a, table_every=0)
    with pytest.raises(InvalidInputError, match="one per sample"):
        reward_logger.record("a", [thread("p", "c")], [])
