import asyncio

import pytest

from gradewire import (
    EvaluationResult,
    Grade,
    InvalidInputError,
    InvalidTypeError,
    SubScore,
    combine,
    combine_all,
    combine_any,
)


async def test_positive_weights_are_normalised():
    result = await combine(
        SubScore(name="tests", value=1.0, weight=2.0),
        SubScore(name="format", value=0.0, weight=2.0),
    )
    assert isinstance(result, EvaluationResult)
    assert result.reward == 0.5
    assert result.done is True
    assert [(s.name, s.weight) for s in result.subscores or ()] == [
        ("tests", 0.5),
        ("format", 0.5),
    ]


async def test_negative_weight_is_a_penalty():
    result = await combine(
        SubScore(name="correct", value=1.0, weight=1.0),
        SubScore(name="unsafe", value=1.0, weight=-0.5),
    )
    assert result.reward == 0.5
    assert result.subscores[1].weight == -0.5  # type: ignore[index]
    clean = await combine(
        SubScore(name="correct", value=1.0, weight=1.0),
        SubScore(name="unsafe", value=0.0, weight=-0.5),
    )
    assert clean.reward == 1.0


async def test_awaitables_resolve_concurrently_and_keep_their_slot():
    gate = asyncio.Event()

    async def first() -> SubScore:
        await asyncio.wait_for(gate.wait(), timeout=5)
        return SubScore(name="first", value=1.0, weight=0.5)

    async def second() -> SubScore:
        gate.set()
        return SubScore(name="second", value=0.0, weight=0.3)

    result = await combine(first(), SubScore(name="plain", value=1.0, weight=0.2), second())
    assert [s.name for s in result.subscores or ()] == ["first", "plain", "second"]
    assert result.reward == pytest.approx(0.7)


async def test_duplicate_names_get_suffixes():
    result = await combine(
        SubScore(name="x", value=1.0),
        SubScore(name="x", value=0.0),
        SubScore(name="y", value=1.0),
        SubScore(name="x-1", value=1.0),
    )
    assert [s.name for s in result.subscores or ()] == ["x-2", "x-3", "y", "x-1"]


async def test_a_failing_awaitable_cancels_the_rest_and_propagates():
    cancelled = asyncio.Event()

    async def slow() -> SubScore:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return SubScore(name="slow", value=1.0)

    async def broken() -> SubScore:
        raise RuntimeError("grader crashed")

    with pytest.raises(RuntimeError, match="grader crashed"):
        await combine(slow(), broken())
    assert cancelled.is_set()


async def test_grades_of_any_range_combine():
    result = await combine(Grade(-1.0, "penalised", weight=1.0), Grade(3.0, "bonus", weight=1.0))
    assert result.reward == 1.0


async def test_bad_inputs():
    with pytest.raises(InvalidInputError, match="at least one"):
        await combine()
    with pytest.raises(InvalidTypeError, match=r"SubScore\(name=..., value=...\)"):
        await combine(0.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="positive weight"):
        await combine(SubScore(name="p", value=1.0, weight=-1.0))

    async def not_a_grade() -> float:
        return 1.0

    with pytest.raises(InvalidTypeError, match="resolved to float"):
        await combine(not_a_grade())  # type: ignore[arg-type]


def test_combine_any_and_all():
    a = SubScore(name="pytest", value=0.0)
    b = SubScore(name="make", value=1.0)
    any_ = combine_any(0.5, [a, b])
    all_ = combine_all(0.5, [a, b], name="both")
    assert (any_.name, any_.value, any_.weight) == ("any", 1.0, 0.5)
    assert (all_.name, all_.value) == ("both", 0.0)
    assert any_.children == (a, b)
    nested = combine_all(1.0, [any_, SubScore(name="lint", value=1.0)])
    assert nested.value == 1.0
    assert nested.children[0].children == (a, b)
    dupes = combine_any(1.0, [a, a])
    assert [c.name for c in dupes.children] == ["pytest-1", "pytest-2"]
    with pytest.raises(InvalidInputError, match="at least one"):
        combine_any(1.0, [])
    with pytest.raises(InvalidTypeError, match="SubScore/Grade"):
        combine_all(1.0, [0.5])  # type: ignore[list-item]
