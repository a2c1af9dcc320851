"""HUD's result models, as HUD code uses them: build, validate, dump, load, copy, mutate.

Runs against ``hud.graders`` and ``gradewire.hud`` alike (see `compat_targets`).
"""

from __future__ import annotations

import copy
import json
import math
import pickle
import warnings

import pytest
from hud_target import EvaluationResult, SubScore
from pydantic import ValidationError


def leaf(name: str = "tests", value: float = 1.0, **fields: object) -> SubScore:
    return SubScore(name=name, value=value, **fields)


# --- SubScore ------------------------------------------------------------------------
def test_subscore_defaults_and_field_order():
    node = leaf()
    assert (node.name, node.value, node.weight, node.children, node.info) == (
        "tests",
        1.0,
        1.0,
        None,
        None,
    )
    assert list(SubScore.model_fields) == ["name", "weight", "value", "children", "info"]
    assert list(node.model_dump()) == ["name", "weight", "value", "children", "info"]
    assert repr(node) == "SubScore(name='tests', weight=1.0, value=1.0, children=None, info=None)"


@pytest.mark.parametrize("value", [-0.01, 1.01, math.nan, math.inf, "high"])
def test_subscore_value_outside_zero_one_is_a_validation_error(value):
    with pytest.raises(ValidationError):
        leaf(value=value)


def test_subscore_needs_a_name_and_a_value():
    with pytest.raises(ValidationError):
        SubScore(value=1.0)
    with pytest.raises(ValidationError):
        SubScore(name="x")


def test_subscore_coerces_numbers_as_pydantic_does():
    node = SubScore(name="x", value="0.5", weight=2)
    assert (node.value, node.weight) == (0.5, 2.0)
    assert type(node.weight) is float
    assert leaf(value=0).value == 0.0
    assert leaf(value=True).value == 1.0


def test_subscore_refuses_extra_fields():
    with pytest.raises(ValidationError, match="extra"):
        SubScore(name="x", value=1.0, reasoning="not a field")
    with pytest.raises(ValidationError):
        SubScore.model_validate({"name": "x", "value": 1.0, "score": 1.0})


def test_metadata_is_an_alias_of_info_everywhere():
    node = SubScore(name="legacy", value=1.0, metadata={"source": "old"})
    assert node.info == {"source": "old"}
    assert node.metadata is node.info
    node.metadata = {"source": "new"}
    assert node.info == {"source": "new"}
    loaded = SubScore.model_validate({"name": "x", "value": 0.0, "metadata": {"a": 1}})
    assert loaded.info == {"a": 1}
    assert loaded.model_dump()["info"] == {"a": 1}
    assert "metadata" not in loaded.model_dump()


def test_score_reads_the_value():
    assert leaf(value=0.25).score == 0.25


def test_subscores_are_mutable_without_validation():
    node = leaf(info={"exit_code": 0})
    node.value = 5.0  # HUD does not validate assignment
    node.weight = -1
    node.info["stdout"] = "ok"
    node.children = [leaf("child")]
    node.children.append(leaf("second"))
    assert (node.value, node.weight) == (5.0, -1)
    assert node.info == {"exit_code": 0, "stdout": "ok"}
    assert [child.name for child in node.children] == ["child", "second"]


def test_children_are_lists_and_compare_with_lists():
    kids = [leaf("a", 1.0, info={"reason": "met"}), leaf("b", 0.0)]
    node = SubScore(name="judge", value=0.5, children=kids)
    assert isinstance(node.children, list)
    assert node.children == kids
    assert node.children == [
        SubScore(name="a", value=1.0, info={"reason": "met"}),
        SubScore(name="b", value=0.0),
    ]
    assert node.children[0] is kids[0]  # model instances are kept as given
    nested = SubScore.model_validate(
        {"name": "n", "value": 1, "children": [{"name": "c", "value": 1}]}
    )
    assert type(nested.children[0]) is SubScore


def test_subscore_dump_load_and_copy_round_trip():
    node = SubScore(
        name="any",
        value=1.0,
        weight=0.5,
        children=[leaf("pytest", info={"exit_code": 0}), leaf("make", 0.0)],
        info={"note": "either passes"},
    )
    dumped = node.model_dump()
    assert dumped == {
        "name": "any",
        "weight": 0.5,
        "value": 1.0,
        "children": [
            {
                "name": "pytest",
                "weight": 1.0,
                "value": 1.0,
                "children": None,
                "info": {"exit_code": 0},
            },
            {"name": "make", "weight": 1.0, "value": 0.0, "children": None, "info": None},
        ],
        "info": {"note": "either passes"},
    }
    assert node.model_dump(mode="json") == dumped
    text = node.model_dump_json()
    assert json.loads(text) == dumped
    assert text.startswith('{"name":"any","weight":0.5,"value":1.0,"children":[')
    assert SubScore.model_validate(dumped) == node
    assert SubScore.model_validate_json(text) == node
    assert pickle.loads(pickle.dumps(node)) == node
    assert copy.deepcopy(node) == node
    moved = node.model_copy(update={"name": "renamed", "weight": 2.0})
    assert (moved.name, moved.weight, moved.children) == ("renamed", 2.0, node.children)
    assert moved.children is node.children  # a shallow copy, as pydantic's
    deep = node.model_copy(deep=True)
    deep.info["note"] = "changed"
    assert node.info["note"] == "either passes"


def test_model_copy_does_not_validate_the_update():
    node = leaf().model_copy(update={"value": 7.0, "weight": "heavy"})
    assert (node.value, node.weight) == (7.0, "heavy")


def test_to_summary_drops_info_at_every_level():
    node = SubScore(
        name="judge",
        value=1.0,
        children=[SubScore(name="Mentions Paris", value=1.0, info={"reason": "says Paris"})],
        info={"model": "m"},
    )
    summary = node.to_summary()
    assert summary == {
        "name": "judge",
        "weight": 1.0,
        "value": 1.0,
        "children": [{"name": "Mentions Paris", "weight": 1.0, "value": 1.0, "children": None}],
    }
    assert node.model_dump()["children"][0]["info"] == {"reason": "says Paris"}


def test_json_schema_names_the_same_fields():
    schema = SubScore.model_json_schema()["$defs"]["SubScore"]  # recursive: a $ref
    assert schema["title"] == "SubScore"
    assert set(schema["properties"]) == {"name", "weight", "value", "children", "info"}
    assert schema["required"] == ["name", "value"]
    assert schema["additionalProperties"] is False
    assert (schema["properties"]["value"]["minimum"], schema["properties"]["value"]["maximum"]) == (
        0.0,
        1.0,
    )


# --- EvaluationResult ----------------------------------------------------------------
def test_evaluation_result_defaults_and_field_order():
    result = EvaluationResult()
    assert (result.reward, result.done, result.content, result.info) == (0.0, True, None, {})
    assert (result.isError, result.subscores) == (False, None)
    assert list(result.model_dump()) == [
        "reward",
        "done",
        "content",
        "info",
        "isError",
        "subscores",
    ]
    assert EvaluationResult().info is not EvaluationResult().info  # a fresh dict each time
    wrapped = EvaluationResult.from_float(0.75)
    assert (wrapped.reward, wrapped.done) == (0.75, True)
    assert type(wrapped) is EvaluationResult


def test_evaluation_result_keeps_extra_fields():
    result = EvaluationResult(reward=1.0, episode=3, trace_url="http://x")
    assert result.episode == 3
    assert result.model_dump()["trace_url"] == "http://x"
    assert result.model_extra == {"episode": 3, "trace_url": "http://x"}
    assert EvaluationResult.model_validate(result.model_dump()) == result


def test_evaluation_result_is_mutable():
    result = EvaluationResult(reward=0.0)
    result.reward = 0.4
    result.info["attempts"] = 2
    result.isError = True
    result.content = "judge timed out"
    result.subscores = [leaf(value=0.4)]
    assert result.model_dump() == {
        "reward": 0.4,
        "done": True,
        "content": "judge timed out",
        "info": {"attempts": 2},
        "isError": True,
        "subscores": [
            {"name": "tests", "weight": 1.0, "value": 0.4, "children": None, "info": None}
        ],
    }


def test_evaluation_result_validates_its_types():
    with pytest.raises(ValidationError):
        EvaluationResult(reward="high")
    with pytest.raises(ValidationError):
        EvaluationResult(subscores=[{"name": "x", "value": 2.0}])
    with pytest.raises(ValidationError):
        EvaluationResult(info=["not", "a", "dict"])
    loaded = EvaluationResult(reward=1.0, subscores=[{"name": "x", "value": 1.0}])
    assert type(loaded.subscores[0]) is SubScore


def test_evaluation_result_round_trips_through_json():
    result = EvaluationResult(
        reward=0.7,
        content="tests pass, answer wrong",
        info={"answer": "41"},
        subscores=[leaf("tests", 1.0, weight=0.7), leaf("answer", 0.0, weight=0.3)],
    )
    text = result.model_dump_json()
    assert json.loads(text)["subscores"][1] == {
        "name": "answer",
        "weight": 0.3,
        "value": 0.0,
        "children": None,
        "info": None,
    }
    assert EvaluationResult.model_validate_json(text) == result
    assert result.subscores == [leaf("tests", 1.0, weight=0.7), leaf("answer", 0.0, weight=0.3)]
    assert pickle.loads(pickle.dumps(result)) == result


def test_subscores_that_do_not_add_up_warn():
    with pytest.warns(UserWarning, match="don't match reward"):
        EvaluationResult(reward=1.0, subscores=[leaf(value=0.5)])
    with pytest.warns(UserWarning, match="should sum to ~1.0"):
        EvaluationResult(reward=1.1, subscores=[leaf("a", weight=0.5), leaf("b", weight=0.6)])
    with pytest.warns(UserWarning, match="Duplicate subscore names"):
        EvaluationResult(reward=1.0, subscores=[leaf("a", weight=0.5), leaf("a", weight=0.5)])


def test_consistent_subscores_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        EvaluationResult(reward=0.8, subscores=[leaf("a", weight=1.0), leaf("p", weight=-0.2)])
        EvaluationResult(reward=0.3, subscores=[])  # an empty list is not checked
        EvaluationResult(reward=0.3)
