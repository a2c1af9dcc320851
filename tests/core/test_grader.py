import asyncio
import logging
import math
import pickle
import statistics
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradewire import (
    BaseGrader,
    CombinedGrader,
    Grade,
    GradewireError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
    LogState,
    StringThread,
    Table,
    run_sync,
)
from gradewire.core import attach_log_fields


def thread(prompt: str = "q", completion: str = "a", **metadata: object) -> StringThread:
    return StringThread([("user", prompt), ("assistant", completion)], metadata=metadata)


class Logged(BaseGrader):
    """Logs whatever the sample's metadata says, and scores metadata['score']."""

    async def grade(self, sample: StringThread) -> Grade:
        if sample.metadata.get("abstain"):
            raise IgnoreGradeException("no label")
        if "boom" in sample.metadata:
            raise ValueError(sample.metadata["boom"])
        self.add_log(dict(sample.metadata["log"]))
        return Grade(sample.metadata["log"].get("score", 0.0), self.grader_key)


def test_get_logs_is_empty_before_anything_is_logged():
    assert Logged("k").get_logs() == {}


def test_every_numeric_key_is_aggregated():
    grader = Logged("k")
    grader.add_log({"score": 1.0, "tokens": 10, "valid": True, "label": "A", "none": None})
    grader.add_log({"score": 0.0, "tokens": 30, "valid": False, "label": "B"})
    grader.add_log({"score": 0.5, "tokens": np.int64(20), "valid": np.float32(1.0)})
    logs = grader.get_logs()
    assert logs["score/mean"] == pytest.approx(0.5)
    assert logs["score/std"] == pytest.approx(statistics.stdev([1.0, 0.0, 0.5]))
    assert (logs["score/min"], logs["score/max"], logs["score/count"]) == (0.0, 1.0, 3)
    assert logs["tokens/mean"] == 20.0
    assert logs["valid/mean"] == pytest.approx(2 / 3)
    assert logs["score/abstained_count"] == 0
    assert logs["score/error_count"] == 0
    assert not any(key.startswith(("label/", "none/")) for key in logs)
    assert all(type(v) in (float, int) for v in logs.values())


def test_single_value_std_is_zero():
    grader = Logged("k")
    grader.add_log({"score": 0.3})
    assert grader.get_logs()["score/std"] == 0.0


def test_non_finite_values_are_counted_and_left_out():
    grader = Logged("k")
    for value in [1.0, math.nan, 3.0, math.inf, 10**400]:
        grader.add_log({"score": value})
    logs = grader.get_logs()
    assert logs["score/mean"] == 2.0
    assert logs["score/count"] == 2
    assert logs["score/nonfinite_count"] == 3


def test_clear_true_starts_a_new_window():
    grader = Logged("k")
    grader.add_log({"score": 1.0})
    assert grader.get_logs(clear=True)["score/count"] == 1
    assert grader.get_logs() == {}
    grader.add_log({"score": 0.0})
    assert grader.get_logs()["score/mean"] == 0.0
    assert grader.get_logs()["score/count"] == 1  # clear=False keeps the buffer


def test_logs_list_stays_the_users_list_of_dicts():
    grader = Logged("k")
    record = {"score": 1.0, "completion": "x"}
    grader.add_log(record)
    assert grader._logs == [record]
    assert grader._logs[0] is record


def test_user_edits_to_logs_are_respected():
    grader = Logged("k")
    for value in [1.0, 2.0, 3.0]:
        grader.add_log({"score": value})
    grader._logs.pop()
    assert grader.get_logs()["score/mean"] == 1.5
    grader._logs = [{"score": 10.0}]
    grader.add_log({"score": 20.0})
    assert grader.get_logs()["score/mean"] == 15.0
    grader._logs.clear()
    assert grader.get_logs() == {}
    grader.add_log({"score": 1.0})
    grader._logs[-1] = {"score": 5.0}  # same length, different record
    assert grader.get_logs()["score/mean"] == 5.0


def test_a_record_that_is_not_a_dict_is_kept_uncounted_with_a_warning(caplog):
    grader = Logged("k")
    record = [("score", 1.0)]
    grader.add_log(record)  # type: ignore[arg-type]
    grader.add_log(("score", 2.0))  # type: ignore[arg-type]
    grader.add_log([("score", 3.0)])  # type: ignore[arg-type]
    grader.add_log({"score": 0.5})
    assert grader._logs[0] is record
    assert len(grader._logs) == 4
    logs = grader.get_logs()
    assert (logs["score/count"], logs["score/mean"]) == (1, 0.5)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2  # once per record type
    assert "logged a list, not a dict" in warnings[0]
    assert "{'score': 1.0}" in warnings[0]


def test_subclass_that_skips_super_init_gets_a_clear_error():
    class Forgetful(BaseGrader):
        def __init__(self) -> None:
            self.grader_key = "f"

        async def grade(self, sample: StringThread) -> Grade:
            self.add_log({"score": 1.0})
            return Grade(1.0, self.grader_key)

    with pytest.raises(GradewireError, match=r"super\(\).__init__"):
        run_sync(Forgetful().grade(thread()))


def test_grader_key_must_be_a_name():
    with pytest.raises(InvalidInputError, match="grader_key"):
        Logged("  ")
    assert repr(Logged("k")) == "Logged(grader_key='k')"


async def test_grade_many_keeps_order_and_counts_failures(caplog):
    grader = Logged("k")
    samples = [
        thread(log={"score": 1.0}),
        thread(prompt="bad one", abstain=True),
        thread(prompt="broken", boom="kaput"),
        thread(log={"score": 0.0}),
        thread(boom="again"),
    ]
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        grades = await grader.grade_many(samples, max_concurrency=2)
    assert [g.value if g else None for g in grades] == [1.0, None, None, 0.0, None]
    logs = grader.get_logs()
    assert logs["score/mean"] == 0.5
    assert logs["score/count"] == 2
    assert logs["score/abstained_count"] == 1
    assert logs["score/error_count"] == 2
    errors = [log for log in grader._logs if "error" in log]
    assert errors[0] == {"error": "ValueError: kaput", "prompt": "broken", "completion": "a"}
    # one warning per exception type, so a buggy grader is noticed at once
    warnings = [r for r in caplog.records if "counted in score/error_count" in r.message]
    assert len(warnings) == 1


async def test_only_failures_still_report_the_score_count():
    grader = Logged("k")
    await grader.grade_many([thread(boom="x")])
    assert grader.get_logs() == {
        "score/count": 0,
        "score/abstained_count": 0,
        "score/error_count": 1,
    }


async def test_grade_many_respects_max_concurrency():
    in_flight = 0
    peak = 0

    async def slow(sample: StringThread) -> float:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.001)
        in_flight -= 1
        return 1.0

    grader = BaseGrader.from_function("slow", slow)
    grades = await grader.grade_many([thread() for _ in range(50)], max_concurrency=7)
    assert peak == 7
    assert all(g is not None and g.value == 1.0 for g in grades)
    assert await grader.grade_many([]) == []
    with pytest.raises(InvalidInputError, match="max_concurrency"):
        await grader.grade_many([thread()], max_concurrency=0)


async def test_calling_the_grader_never_raises():
    grader = Logged("k")
    assert (await grader(thread(log={"score": 0.25}))).value == 0.25  # type: ignore[union-attr]
    assert await grader(thread(abstain=True)) is None
    assert await grader(thread(boom="x")) is None
    assert grader.get_logs()["score/error_count"] == 1


async def test_grade_returning_a_non_grade_is_an_error():
    class Sloppy(BaseGrader):
        async def grade(self, sample: StringThread) -> Grade:
            return 1.0  # type: ignore[return-value]

    grader = Sloppy("s")
    assert await grader(thread()) is None
    assert "return Grade(value=" in grader._logs[0]["error"]


async def test_from_function_sync_and_async():
    def sync_fn(sample: StringThread) -> float:
        return 1.0 if sample.completion() == "yes" else 0.0

    async def async_fn(sample: StringThread) -> float:
        return 0.5

    class AsyncCallable:
        async def __call__(self, sample: StringThread) -> float:
            return 0.25

    for fn, expected in [(sync_fn, 1.0), (async_fn, 0.5), (AsyncCallable(), 0.25)]:
        grader = BaseGrader.from_function("f", fn)
        grade = await grader.grade(thread(completion="yes"))
        assert grade == Grade(expected, "f")
        assert grader.get_logs()["score/mean"] == expected
    lam = BaseGrader.from_function("lam", lambda s: async_fn(s))  # returns an awaitable
    assert (await lam.grade(thread())).value == 0.5


async def test_from_function_result_kinds():
    grader = BaseGrader.from_function("f", lambda s: s.metadata["r"])
    assert (await grader.grade(thread(r=True))).value == 1.0
    assert (await grader.grade(thread(r=np.float32(0.5)))).value == 0.5
    graded = await grader.grade(thread(r=Grade(0.7, "other", "why")))
    assert (graded.grader_key, graded.reasoning) == ("f", "why")
    assert grader._logs[-1] == {"score": 0.7, "reasoning": "why"}
    with pytest.raises(IgnoreGradeException, match="returned None"):
        await grader.grade(thread(r=None))
    with pytest.raises(InvalidTypeError, match="returned str"):
        await grader.grade(thread(r="0.5"))
    with pytest.raises(InvalidInputError, match="finite"):
        await grader.grade(thread(r=math.nan))
    results = await grader.grade_many([thread(r=None), thread(r="x"), thread(r=math.inf)])
    assert results == [None, None, None]
    logs = grader.get_logs()
    assert (logs["score/abstained_count"], logs["score/error_count"]) == (1, 2)


def test_from_function_refuses_non_callables():
    with pytest.raises(InvalidTypeError, match="function of a sample"):
        BaseGrader.from_function("f", 3)  # type: ignore[arg-type]


def test_get_sample_tables_shapes():
    grader = Logged("k")
    tables = grader.get_sample_tables(
        [{"score": 1.0, "prompt": "p1", "reasoning": "r1"}, {"score": 0.0, "prompt": "p2"}],
        [{"error": "bad", "prompt": "p3"}, {"error": "worse"}, {"abstained": "no label"}],
    )
    scored = tables["score/scored_samples"]
    assert isinstance(scored, Table)
    assert scored.headers == ["Prompt", "Reasoning", "Score"]
    assert scored.rows == [["p1", "r1", 1.0], ["p2", "", 0.0]]
    unscored = tables["score/unscored_samples"]
    assert isinstance(unscored, Table)
    assert unscored.headers == ["Prompt", "Error"]
    assert unscored.rows == [["p3", "bad"], ["", "worse"], ["", "abstained: no label"]]
    assert tables["score/scored_samples_count"] == 2
    assert tables["score/unscored_samples_count"] == 3
    only_ok = grader.get_sample_tables([{"score": 1.0, "prompt": "p"}], [])
    assert "score/unscored_samples" not in only_ok
    assert only_ok["score/unscored_samples_count"] == 0
    with_completions = grader.get_sample_tables(
        [{"score": 1.0, "prompt": "p", "completion": "c"}], [{"error": "e", "completion": "x"}]
    )
    assert with_completions["score/scored_samples"].rows == [["p", "c", "", 1.0]]  # type: ignore[union-attr]
    assert with_completions["score/unscored_samples"].headers == ["Prompt", "Completion", "Error"]  # type: ignore[union-attr]


async def test_sample_tables_option_adds_tables_to_default_logs():
    grader = BaseGrader.from_function(
        "f", lambda s: None if s.metadata.get("skip") else 1.0, sample_tables=True
    )
    await grader.grade_many([thread(prompt="<script>alert(1)</script>"), thread(skip=True)])
    logs = grader.get_logs()
    scored = logs["score/scored_samples"]
    assert isinstance(scored, Table)
    assert scored.headers == ["Prompt", "Completion", "Reasoning", "Score"]
    assert scored.rows == [["<script>alert(1)</script>", "a", "", 1.0]]
    assert "<script>" not in scored.to_html()
    assert logs["score/unscored_samples_count"] == 1


async def test_log_states_of_two_workers_merge_into_one_figure():
    values = np.random.default_rng(3).random(1001)
    one, left, right = (BaseGrader.from_function(k, lambda s: s.metadata["v"]) for k in "abc")
    samples = [thread(v=float(v)) for v in values]
    await one.grade_many(samples)
    await left.grade_many(samples[:400])
    await right.grade_many(samples[400:])
    shipped = [LogState.from_dict(g.log_state(clear=True).to_dict()) for g in (left, right)]
    merged = LogState.merge_all(shipped).to_logs()
    single = one.get_logs()
    assert merged.keys() == single.keys()
    for key, value in single.items():
        assert merged[key] == pytest.approx(value, rel=1e-12)
    assert left.get_logs() == {}


values = st.one_of(
    st.floats(),
    st.integers(),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
)
records = st.lists(
    st.dictionaries(st.sampled_from(["score", "x", "error", "abstained", "y/z"]), values),
    max_size=20,
)


@settings(suppress_health_check=[HealthCheck.too_slow])  # generation is slow on a busy machine
@given(records)
def test_get_logs_never_crashes_and_counts_add_up(batch):
    grader = Logged("k")
    for record in batch:
        grader.add_log(record)
    logs = grader.get_logs()
    if not batch:
        assert logs == {}
        return
    errors = sum(isinstance(r.get("error"), str) for r in batch)
    assert logs["score/error_count"] == errors
    numeric_scores = [
        r["score"] for r in batch if isinstance(r.get("score"), (int, float)) and "score" in r
    ]
    finite = [float(v) for v in numeric_scores if abs(v) < 1e300 and math.isfinite(v)]
    assert logs["score/count"] + logs.get("score/nonfinite_count", 0) == len(numeric_scores)
    if finite and logs["score/count"] == len(finite):
        assert logs["score/min"] == min(finite)
        assert logs["score/max"] == max(finite)


async def test_exceptions_can_carry_fields_into_the_failure_record():
    class Costly(BaseGrader):
        async def grade(self, sample: StringThread) -> Grade:
            error = (
                IgnoreGradeException("judge said NA")
                if sample.metadata.get("na")
                else (RuntimeError("judge down"))
            )
            attach_log_fields(error, {"prompt_tokens": 120})
            attach_log_fields(error, {"judge_calls": 2})
            raise error

    grader = Costly("costly")
    await grader.grade_many([thread(na=True), thread()])
    assert grader._logs[0]["abstained"] == "judge said NA"
    assert grader._logs[1]["error"] == "RuntimeError: judge down"
    for record in grader._logs:
        assert (record["prompt_tokens"], record["judge_calls"]) == (120, 2)
    logs = grader.get_logs()
    assert logs["prompt_tokens/mean"] == 120.0
    assert logs["score/error_count"] == 1


async def test_max_log_records_bounds_memory_and_keeps_statistics_exact():
    rng = np.random.default_rng(11)
    values = rng.normal(0.5, 0.2, 5_000)
    unbounded = BaseGrader.from_function("u", lambda s: s.metadata["v"])
    bounded = BaseGrader.from_function("b", lambda s: s.metadata["v"], sample_tables=True)
    bounded.max_log_records = 100
    samples = [thread(v=float(v)) for v in values] + [thread(v=None), thread(v="bad")]
    for start in range(0, len(samples), 250):  # a long run that never clears
        await unbounded.grade_many(samples[start : start + 250])
        await bounded.grade_many(samples[start : start + 250])
        assert len(bounded._logs) <= 100
    exact, folded = unbounded.get_logs(), bounded.get_logs()
    for key, value in exact.items():
        assert folded[key] == pytest.approx(value, rel=1e-12), key
    assert folded["score/count"] == 5_000
    assert (folded["score/abstained_count"], folded["score/error_count"]) == (1, 1)
    table = folded["score/scored_samples"]
    assert isinstance(table, Table)
    assert 0 < len(table) <= 100  # tables show the recent records
    bounded.clear_logs()
    assert bounded.get_logs() == {}


def test_max_log_records_is_validated_and_reaches_sub_graders():
    with pytest.raises(InvalidInputError, match="at least 2"):
        Logged("k", max_log_records=1)
    with pytest.raises(InvalidTypeError, match="int or None"):
        Logged("k").max_log_records = 10.5  # type: ignore[assignment]
    own = Logged("own", max_log_records=7)
    plain = Logged("plain")
    combined = CombinedGrader("c", [own, plain], max_log_records=50)
    assert (combined.max_log_records, own.max_log_records, plain.max_log_records) == (50, 7, 50)


async def test_from_function_threads_chooses_where_a_sync_function_runs():
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def slow_parse(sample: StringThread) -> float:
        seen.append(threading.get_ident())
        return 1.0

    inline = BaseGrader.from_function("inline", slow_parse, threads=False)
    threaded = BaseGrader.from_function("threaded", slow_parse, threads=True)
    measured = BaseGrader.from_function("measured", slow_parse)  # threads=None
    assert (await inline.grade(thread())).value == 1.0
    assert (await threaded.grade(thread())).value == 1.0
    assert (await measured.grade(thread())).value == 1.0
    assert seen[0] == loop_thread
    assert seen[1] != loop_thread
    assert seen[2] != loop_thread  # unmeasured yet: a worker thread
    assert threaded.get_logs()["score/count"] == 1
    with pytest.raises(InvalidTypeError, match="threads must be"):
        BaseGrader.from_function("k", slow_parse, threads="yes")  # type: ignore[arg-type]


def test_an_abstention_keeps_its_reason_apart_from_adaptive_harmonys_message():
    exc = IgnoreGradeException("no label")
    assert exc.message == str(exc) == f"{exc.default_ignore_score_message} Error details: no label"
    assert exc.reason == "no label"
    again = pickle.loads(pickle.dumps(exc))
    assert (str(again), again.message, again.reason) == (str(exc), exc.message, "no label")
    bare = IgnoreGradeException()
    assert bare.reason == bare.message == bare.default_ignore_score_message
    assert str(pickle.loads(pickle.dumps(bare))) == str(bare)


async def test_the_abstention_record_holds_the_reason_not_the_stock_sentence():
    def skip(sample: StringThread) -> float:
        raise IgnoreGradeException("no label")

    grader = BaseGrader.from_function("k", skip, sample_tables=True)
    assert await grader(StringThread([("user", "q"), ("assistant", "a")])) is None
    table = grader.get_logs()["score/unscored_samples"]
    assert table.column("Error") == ["abstained: no label"]
