import math
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradewire import Grade, InvalidInputError, InvalidTypeError


class Node(Grade):
    """A Grade subclass: copies, pickles and repr keep the subclass."""

    __slots__ = ()


def test_grade_fields_and_python_float():
    grade = Grade(value=0.95, grader_key="my-custom-grader", reasoning="good")
    assert grade.value == 0.95
    assert type(grade.value) is float
    assert grade.grader_key == "my-custom-grader"
    assert grade.name == "my-custom-grader"
    assert grade.reasoning == "good"
    assert grade.weight == 1.0
    assert grade.children == ()
    assert dict(grade.info) == {}


def test_value_keeps_full_precision():
    # float32 would turn 0.1 into 0.10000000149011612.
    assert Grade(0.1, "k").value == 0.1
    assert Grade(1 / 3, "k").value == 1 / 3
    assert Grade(np.float64(0.1), "k").value == 0.1
    assert type(Grade(np.float32(0.5), "k").value) is float
    assert Grade(1, "k").value == 1.0
    assert type(Grade(1, "k").value) is float


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, np.float64("nan")])
def test_non_finite_values_are_refused(bad):
    with pytest.raises(InvalidInputError, match=r"finite.*IgnoreGradeException"):
        Grade(bad, "k")


@pytest.mark.parametrize("bad", ["0.5", b"1", None, [1.0], object()])
def test_non_numbers_are_refused(bad):
    with pytest.raises(InvalidTypeError, match="must be a number"):
        Grade(bad, "k")


def test_bad_key_reasoning_weight_children_info():
    with pytest.raises(InvalidInputError, match="grader_key"):
        Grade(1.0, "")
    with pytest.raises(InvalidInputError, match="grader_key"):
        Grade(1.0, None)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="reasoning"):
        Grade(1.0, "k", reasoning=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="weight"):
        Grade(1.0, "k", weight=math.nan)
    with pytest.raises(InvalidTypeError, match="children must be Grade"):
        Grade(1.0, "k", children=[0.5])  # type: ignore[list-item]
    with pytest.raises(InvalidTypeError, match="info"):
        Grade(1.0, "k", info=[1])  # type: ignore[arg-type]


def test_grade_is_immutable():
    grade = Grade(1.0, "k", info={"a": 1})
    with pytest.raises(AttributeError):
        grade.value = 2.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        grade.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        grade.info["a"] = 2  # type: ignore[index]


def test_info_is_copied():
    info = {"a": 1}
    grade = Grade(1.0, "k", info=info)
    info["a"] = 2
    assert grade.info["a"] == 1


def test_tree_equality_hash_pickle_and_dict_round_trip():
    leaf = Node(1.0, "format", weight=0.2, info={"why": "ok"})
    tree = Grade(0.8, "root", "because", weight=2.0, children=[leaf, Grade(0.5, "judge")])
    same = Grade(0.8, "root", "because", weight=2.0, children=(leaf, Grade(0.5, "judge")))
    assert tree == same
    assert hash(tree) == hash(same)
    assert tree != Grade(0.8, "root")
    assert tree != 0.8
    restored = pickle.loads(pickle.dumps(tree))
    assert restored == tree
    assert type(restored.children[0]) is Node
    assert Grade.from_dict(tree.to_dict()) == tree
    with pytest.raises(InvalidInputError, match="'value'"):
        Grade.from_dict({"grader_key": "k"})


def test_replace_returns_changed_copy():
    grade = Grade(0.5, "k", "r")
    other = grade.replace(value=1.0, weight=3.0)
    assert (other.value, other.weight, other.reasoning) == (1.0, 3.0, "r")
    assert grade.value == 0.5
    assert grade.replace(name="x").grader_key == "x"
    sub = Node(0.5, "s")
    assert type(sub.replace(weight=2.0)) is Node
    with pytest.raises(InvalidInputError, match="not both"):
        grade.replace(name="a", grader_key="b")
    with pytest.raises(InvalidInputError, match="finite"):
        grade.replace(value=math.inf)


def test_repr_is_readable():
    assert repr(Grade(0.95, "g", "fine")) == "Grade(value=0.95, grader_key='g', reasoning='fine')"
    assert repr(Node(1.0, "f", weight=0.2)) == "Node(value=1.0, grader_key='f', weight=0.2)"


@given(st.floats(allow_nan=False, allow_infinity=False), st.text(min_size=1))
def test_any_finite_float_round_trips(value, key):
    grade = Grade(value, key)
    assert grade.value == value
    assert pickle.loads(pickle.dumps(grade)) == grade
    assert Grade.from_dict(grade.to_dict()) == grade
