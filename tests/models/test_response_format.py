"""The JSON-schema response_format of a response model: made once per class, read-only."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from gradewire.models._response_format import (
    ReadOnlyDict,
    ReadOnlyList,
    _response_format,
    canonical_json,
    json_schema_response_format,
    read_only,
)
from gradewire.models._structured_prompt import format_instruction, instruction_for


class Verdict(BaseModel):
    reasoning: str
    verdict: Literal["PASS", "FAIL"]


class Scores(BaseModel):
    scores: Annotated[list[int], Field(min_length=1, max_length=5)]
    note: str = ""
    nested: list[Verdict] = []


def uncached(schema: type[BaseModel]) -> object:
    return _response_format.__wrapped__(schema)  # type: ignore[attr-defined]


@pytest.mark.parametrize("model", [Verdict, Scores])
def test_the_memo_gives_what_building_it_afresh_gives(model):
    first = json_schema_response_format(model)
    assert json_schema_response_format(model) is first  # built once
    fresh = uncached(model)
    assert fresh is not first
    assert first == fresh
    assert json.dumps(first, sort_keys=True) == json.dumps(fresh, sort_keys=True)
    # And what the format says, checked against pydantic's schema directly.
    assert first is not None
    schema = model.model_json_schema()
    assert first["json_schema"]["name"] == model.__name__
    assert first["json_schema"]["schema"]["properties"] == schema["properties"]
    assert first["json_schema"]["schema"]["additionalProperties"] is False


def test_models_with_one_name_are_not_confused():
    def make(kind: str) -> type[BaseModel]:
        if kind == "a":

            class Verdict(BaseModel):
                verdict: Literal["PASS", "FAIL"]

        else:

            class Verdict(BaseModel):  # type: ignore[no-redef]
                verdict: Literal["YES", "NO"]
                why: str

        return Verdict

    a, b = make("a"), make("b")
    format_a, format_b = json_schema_response_format(a), json_schema_response_format(b)
    assert format_a is not None
    assert format_b is not None
    assert format_a["json_schema"]["name"] == format_b["json_schema"]["name"] == "Verdict"
    assert format_a["json_schema"]["schema"]["properties"]["verdict"]["enum"] == ["PASS", "FAIL"]
    assert format_b["json_schema"]["schema"]["properties"]["verdict"]["enum"] == ["YES", "NO"]
    assert instruction_for(a) != instruction_for(b)
    assert "why" in instruction_for(b)
    assert "why" not in instruction_for(a)


def test_the_shared_format_cannot_be_changed_at_any_depth():
    format_ = json_schema_response_format(Scores)
    assert isinstance(format_, ReadOnlyDict)
    spec = format_["json_schema"]
    schema = spec["schema"]
    required = schema["required"]
    assert isinstance(required, ReadOnlyList)
    for change in (
        lambda: format_.__setitem__("type", "json_object"),
        lambda: format_.pop("type"),
        lambda: format_.update(type="x"),
        lambda: spec.__setitem__("strict", True),
        lambda: schema["properties"].clear(),
        lambda: required.append("note"),
        lambda: required.__setitem__(0, "x"),
        lambda: required.sort(),
    ):
        with pytest.raises(TypeError, match="copy"):
            change()
    assert json_schema_response_format(Scores) == uncached(Scores)


def test_copies_of_the_shared_format_are_plain_and_changeable():
    format_ = json_schema_response_format(Scores)
    assert format_ is not None
    for copied in (copy.deepcopy(format_), pickle.loads(pickle.dumps(format_))):
        assert type(copied) is dict
        assert type(copied["json_schema"]["schema"]["required"]) is list
        assert copied == format_
        copied["json_schema"]["strict"] = "changed"
        copied["json_schema"]["schema"]["required"].append("x")
    assert format_["json_schema"]["strict"] is False
    assert "x" not in format_["json_schema"]["schema"]["required"]
    assert type(copy.copy(format_)) is dict


def test_read_only_values_keep_their_json():
    value = {"b": [1, 2.5, {"c": None}], "a": (True, "é"), "n": {"x": []}}
    frozen = read_only(value)
    assert frozen == {"b": [1, 2.5, {"c": None}], "a": [True, "é"], "n": {"x": []}}
    assert json.dumps(frozen, sort_keys=True) == json.dumps(value, sort_keys=True)
    assert frozen.canonical == canonical_json(value)
    assert frozen["n"].canonical == canonical_json(value["n"])


def test_the_instruction_memo_gives_what_building_it_afresh_gives():
    for model in (Verdict, Scores):
        assert instruction_for(model) == format_instruction(model.model_json_schema())
        assert instruction_for(model) is instruction_for(model)
