"""Each spec default is its constructor's: one declaration, checked over every spec type.

A spec field with a default is passed to the spec's constructor (``builds``, under the
parameter ``passed_as`` names); its default must be that parameter's own, or None (not
passed: the constructor's default applies). A default written a second time, in the spec,
is what this catches, for every type in `SPEC_TYPES` (a new type is checked with no edit).
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar, Literal

import pytest
from pydantic import BaseModel

from gradewire.specs._grader_specs import SPEC_TYPES, CommandSpec, SpecBase
from gradewire.tools._command_grader import CommandGrader

# Fields with a default that goes to no constructor parameter, and why.
NOT_PASSED = {
    ("custom", "factory"): "says how the target is called, not what it is called with",
}


def disagreements(kind: str, spec: type[BaseModel]) -> list[str]:
    """Each field of ``spec`` whose default is not its constructor's, said in words."""
    assert issubclass(spec, SpecBase)
    parameters = inspect.signature(spec.builds).parameters
    found = []
    for name, field in spec.model_fields.items():
        if field.is_required() or field.default_factory is not None or field.default is None:
            continue
        if (kind, name) in NOT_PASSED:
            continue
        parameter = parameters.get(spec.passed_as.get(name, name))
        if parameter is None:
            found.append(f"{kind}.{name} = {field.default!r} goes to no parameter")
        elif parameter.default != field.default:
            found.append(
                f"{kind}.{name} = {field.default!r}, but {spec.builds.__qualname__}'s "
                f"{parameter.name} = {parameter.default!r}"
            )
    return found


@pytest.mark.parametrize("kind", sorted(SPEC_TYPES))
def test_spec_defaults_are_the_constructors(kind: str) -> None:
    assert disagreements(kind, SPEC_TYPES[kind]) == []


def test_a_default_written_twice_is_caught() -> None:
    # The check itself can fail: a spec that declares its own timeout is reported.
    class Drifted(CommandSpec):
        timeout: float = 601.0

    assert disagreements("command", Drifted) == [
        "command.timeout = 601.0, but CommandGrader's timeout = 600.0"
    ]

    class Unpassed(CommandSpec):
        builds: ClassVar[Any] = CommandGrader
        loudness: Literal["low", "high"] = "low"

    assert disagreements("command", Unpassed) == ["command.loudness = 'low' goes to no parameter"]


def test_the_shown_defaults_are_the_constructors() -> None:
    # What a reader of the spec sees is what the grader gets.
    assert CommandSpec.model_fields["timeout"].default == 600.0
    assert (
        CommandSpec.model_fields["completion_via"].default
        == inspect.signature(CommandGrader).parameters["completion_via"].default
    )


@pytest.mark.parametrize("kind", ["command", "external_endpoint", "custom", "binary_judge"])
@pytest.mark.parametrize("bad", [0, -1.5, float("inf"), float("nan"), True, "sk-secret-value-1234"])
def test_spec_timeouts_take_the_one_seconds_check(kind: str, bad: object) -> None:
    # Every spec timeout (the grade's, an attempt's, a judge model's) is checked as every
    # timeout in gradewire is, by check_positive_seconds; text is never echoed.
    from gradewire.core import InvalidInputError
    from gradewire.specs._factory import build_grader

    fields = {
        "command": {"command": "true"},
        "external_endpoint": {"url": "http://127.0.0.1:9"},
        "custom": {"function": "support.custom_graders:length_score"},
        "binary_judge": {"criteria": "c", "judge_model": {"model": "m", "timeout": bad}},
    }[kind]
    spec = {"type": kind, "key": "k", **fields}
    if kind != "binary_judge":
        spec["timeout"] = bad
    with pytest.raises(InvalidInputError, match="timeout must be") as caught:
        build_grader(spec, trust_code=True)
    assert "sk-secret" not in str(caught.value)


JUDGE_KINDS = sorted(kind for kind, spec in SPEC_TYPES.items() if hasattr(spec, "arguments"))


@pytest.mark.parametrize("kind", JUDGE_KINDS)
def test_a_judge_spec_s_own_fields_are_its_constructor_s_parameters(kind: str) -> None:
    # A judge kind is built generically, grader_class()(key, model, **arguments(), ...): a
    # field of its own that its constructor does not name would fail at build time (or
    # vanish into **settings), so it fails here.
    from gradewire.judges._judge_settings import JudgeSettings

    spec = SPEC_TYPES[kind]
    assert issubclass(spec, SpecBase)
    named = {
        name
        for name, parameter in inspect.signature(spec.builds).parameters.items()
        if parameter.kind is not parameter.VAR_KEYWORD
    }
    from gradewire.specs._grader_specs import _JUDGE_COMMON  # built apart (certificate...)

    common = {*SpecBase.model_fields, *_JUDGE_COMMON, *JudgeSettings.__annotations__}
    own = set(spec.model_fields) - common
    chosen = {"judge"} if kind == "prebuilt_judge" else set()  # picks the class instead
    assert own - chosen <= named


def test_judge_kinds_are_every_judge() -> None:
    assert JUDGE_KINDS == [
        "binary_judge",
        "pairwise_judge",
        "prebuilt_judge",
        "range_judge",
        "rubric_judge",
    ]
