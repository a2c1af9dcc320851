"""HUD's combinators and its `Grader` base: weights, names, trees, parameters.

Runs against ``hud.graders`` and ``gradewire.hud`` alike (see `compat_targets`).
"""

from __future__ import annotations

import asyncio
import datetime
import math
import warnings
from pathlib import Path

import pytest
from hud_target import (
    EvaluationResult,
    Grader,
    SubScore,
    _combine_subscores,
    combine,
    combine_all,
    combine_any,
)
from pydantic import ValidationError


def sub(name: str, value: float, weight: float = 1.0, **fields: object) -> SubScore:
    return SubScore(name=name, value=value, weight=weight, **fields)


# --- combine ---------------------------------------------------------------------------
async def test_combine_gives_a_weighted_result_and_keeps_the_subscores():
    result = await combine(sub("tests", 1.0, 0.6), sub("style", 0.5, 0.4))
    assert type(result) is EvaluationResult
    assert (result.reward, result.done, result.info, result.isError) == (0.8, True, {}, False)
    assert [(s.name, s.value, s.weight) for s in result.subscores] == [
        ("tests", 1.0, 0.6),
        ("style", 0.5, 0.4),
    ]


async def test_positive_weights_are_normalised_with_a_warning():
    with pytest.warns(UserWarning, match=r"grader weights sum to 3.0000, not 1.0"):
        result = await combine(sub("a", 1.0, 2.0), sub("b", 0.0, 1.0))
    assert result.reward == pytest.approx(2 / 3)
    assert [s.weight for s in result.subscores] == pytest.approx([2 / 3, 1 / 3])


async def test_negative_weights_are_penalties_kept_as_written():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = await combine(sub("correct", 0.0, 1.0), sub("rude", 1.0, -0.2))
    assert result.reward == pytest.approx(-0.2)
    assert [s.weight for s in result.subscores] == [1.0, -0.2]


async def test_repeated_names_get_suffixes_that_avoid_taken_names():
    result = await combine(sub("x-1", 1.0, 0.3), sub("x", 1.0, 0.4), sub("x", 0.0, 0.3))
    assert [s.name for s in result.subscores] == ["x-1", "x-2", "x-3"]
    same = await combine(sub("same", 1.0, 0.5), sub("same", 0.0, 0.5))
    assert [s.name for s in same.subscores] == ["same-1", "same-2"]


async def test_info_and_children_survive_combination():
    verdicts = [sub("Mentions Paris", 1.0, info={"reason": "says Paris"})]
    result = await combine(
        sub("judge", 1.0, 0.5, children=verdicts, info={"model": "m"}),
        sub("tests", 0.0, 0.5, info={"stdout": "1 failed"}),
    )
    judge, tests = result.subscores
    assert judge.children == verdicts
    assert judge.info == {"model": "m"}
    assert tests.children is None
    assert result.model_dump()["subscores"][1]["info"] == {"stdout": "1 failed"}


async def test_awaitables_run_concurrently_and_keep_their_place():
    events: list[str] = []

    async def slow(name: str, value: float) -> SubScore:
        events.append(f"{name} start")
        await asyncio.sleep(0.05)
        events.append(f"{name} end")
        return sub(name, value, 0.5)

    result = await combine(slow("a", 1.0), slow("b", 0.0))
    assert [s.name for s in result.subscores] == ["a", "b"]
    assert events.index("b start") < events.index("a end")
    mixed = await combine(sub("now", 0.0, 0.5), slow("later", 1.0))
    assert [s.name for s in mixed.subscores] == ["now", "later"]
    assert mixed.reward == 0.5


async def test_combine_refuses_what_it_cannot_combine():
    with pytest.raises(TypeError, match="Expected SubScore or Awaitable"):
        await combine(sub("a", 1.0), 0.5)
    with pytest.raises(ValueError, match="must not be empty"):
        await combine()
    with pytest.raises(ValueError, match="at least one positive weight"):
        await combine(sub("penalty", 1.0, -1.0))


async def test_an_error_in_a_grader_call_propagates():
    async def broken() -> SubScore:
        raise RuntimeError("judge down")

    with pytest.raises(RuntimeError, match="judge down"):
        await combine(sub("a", 1.0), broken())


def test_combine_subscores_is_the_synchronous_core():
    result = _combine_subscores([sub("a", 1.0, 0.25), sub("b", 0.0, 0.75)])
    assert type(result) is EvaluationResult
    assert result.reward == 0.25
    with pytest.raises(ValueError, match="must not be empty"):
        _combine_subscores([])


# --- combine_any / combine_all ---------------------------------------------------------
def test_combine_any_is_the_maximum_and_keeps_its_inputs():
    node = combine_any(weight=0.5, subscores=[sub("pytest", 0.0), sub("make", 1.0)])
    assert (node.name, node.value, node.weight, node.info) == ("any", 1.0, 0.5, None)
    assert [child.name for child in node.children] == ["pytest", "make"]


def test_combine_all_is_the_minimum_with_a_chosen_name():
    node = combine_all(1.0, [sub("a", 1.0), sub("b", 0.0)], name="tests_all")
    assert (node.name, node.value) == ("tests_all", 0.0)


def test_boolean_combinators_dedupe_child_names_and_keep_their_trees():
    rubric = sub("judge", 1.0, children=[sub("c1", 1.0, info={"reason": "met"})])
    node = combine_any(
        1.0,
        [rubric, sub("BashGrader", 1.0, info={"exit_code": 0}), sub("BashGrader", 0.0)],
    )
    assert [c.name for c in node.children] == ["judge", "BashGrader-1", "BashGrader-2"]
    assert node.children[0].children == rubric.children
    assert node.children[1].info == {"exit_code": 0}
    assert rubric.name == "judge"  # the inputs are copied, not renamed in place


def test_boolean_combinators_nest_and_refuse_empty_input():
    tree = combine_all(
        1.0, [combine_any(1.0, [sub("pytest", 0.0), sub("make", 1.0)]), sub("lint", 1.0)]
    )
    assert tree.value == 1.0
    assert tree.children[0].name == "any"
    assert [c.name for c in tree.children[0].children] == ["pytest", "make"]
    for fold in (combine_any, combine_all):
        with pytest.raises(ValueError, match="must not be empty"):
            fold(1.0, [])


async def test_combinator_output_feeds_combine():
    result = await combine(
        combine_any(0.5, [sub("pytest", 1.0), sub("make", 0.0)]), sub("format", 1.0, 0.5)
    )
    assert result.reward == 1.0
    assert [c.name for c in result.subscores[0].children] == ["pytest", "make"]


# --- Grader ----------------------------------------------------------------------------
class Plain(Grader):
    name = "plain"

    @classmethod
    async def compute_score(cls, **kwargs):
        return 0.75


class Pair(Grader):
    name = "pair"

    @classmethod
    async def compute_score(cls, **kwargs):
        return 0.5, {"source": "legacy"}


class Node(Grader):
    name = "rubric"

    @classmethod
    async def compute_score(cls, **kwargs):
        return SubScore(name="inner-name", value=1.0, info={"reason": "did it"})


async def test_a_float_score_becomes_a_named_weighted_subscore():
    result = await Plain.grade(weight=0.4, marker="ok")
    assert type(result) is SubScore
    assert (result.name, result.value, result.weight) == ("plain", 0.75, 0.4)
    assert result.info == {"_parameters": {"marker": "ok"}}


async def test_a_legacy_pair_keeps_its_info():
    result = await Pair.grade(weight=1.0, name="renamed")
    assert (result.name, result.value) == ("renamed", 0.5)
    assert result.info == {"source": "legacy", "_parameters": {}}


async def test_a_returned_subscore_takes_the_graders_name_unless_overridden():
    assert (await Node.grade(weight=0.7)).name == "rubric"
    assert (await Node.grade(weight=0.7, name="")).name == "rubric"
    named = await Node.grade(weight=0.7, name="mine")
    assert (named.name, named.weight) == ("mine", 0.7)
    assert named.info == {"reason": "did it", "_parameters": {}}


async def test_parameters_are_recorded_as_json_data():
    class Holder:
        pass

    result = await Plain.grade(
        weight=1.0,
        path=Path("/srv/app"),
        when=datetime.date(2025, 1, 2),
        items=("a", 1),
        tags={"x"},
        payload=Holder(),
        nested={"deep": [Holder(), 1.5]},
        ratio=math.inf,
        count=3,
        none=None,
    )
    recorded = result.info["_parameters"]
    assert recorded["path"] == "/srv/app"
    assert recorded["when"] == "2025-01-02"
    assert recorded["items"] == ["a", 1]
    assert recorded["tags"] == ["x"]
    assert recorded["payload"] == "<Holder: not serializable>"
    assert recorded["nested"] == {"deep": ["<Holder: not serializable>", 1.5]}
    assert recorded["ratio"] == math.inf  # a plain float is kept as it is
    assert (recorded["count"], recorded["none"]) == (3, None)


async def test_an_out_of_range_score_is_a_validation_error():
    class TooHigh(Grader):
        name = "high"

        @classmethod
        async def compute_score(cls, **kwargs):
            return 1.5

    with pytest.raises(ValidationError):
        await TooHigh.grade(weight=1.0)


async def test_a_grader_without_compute_score_cannot_grade():
    class Empty(Grader):
        name = "empty"

    with pytest.raises(NotImplementedError):
        await Empty.grade(weight=1.0)


async def test_grader_weights_are_not_validated():
    assert (await Plain.grade(weight=-3)).weight == -3
