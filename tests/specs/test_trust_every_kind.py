"""Every spec kind, nested in every container, is refused when it is code and not trusted.

The kinds and the containers come from the registries (`SPEC_TYPES`, OpenAI's grader
types), so a new kind fails `test_every_kind_has_an_example` until it has an example here,
and is then walked in every container; a new container kind is found from its fields.
Each code example leaves a marker file if it ever runs: nothing may run without trust.
"""

from __future__ import annotations

import itertools
import json
import typing
from pathlib import Path
from typing import Any

import pytest

from gradewire import InvalidInputError, build_grader, load_graders
from gradewire.openai._config import OPENAI_CODE_TYPES, OPENAI_GRADER_TYPES
from gradewire.specs._grader_specs import SPEC_TYPES

LOOPBACK = "http://127.0.0.1:9/v1"
JUDGE = {"judge_model": {"model": "judge", "base_url": LOOPBACK}}
DEFAULTS = {"model": "judge", "base_url": LOOPBACK}
SPEC_CLASSES = tuple(SPEC_TYPES.values())


def _examples(marker: Path) -> dict[str, dict[str, Any]]:
    """One spec of every kind; the code kinds write ``marker`` if they ever run."""
    write = f"__import__('pathlib').Path({str(marker)!r}).write_text('ran')"
    return {
        "binary_judge": {"type": "binary_judge", "criteria": "Answers it", **JUDGE},
        "prebuilt_judge": {"type": "prebuilt_judge", "judge": "FAITHFULNESS", **JUDGE},
        "rubric_judge": {"type": "rubric_judge", "criteria": ["Correct"], **JUDGE},
        "range_judge": {"type": "range_judge", "criteria": "Quality", **JUDGE},
        "pairwise_judge": {"type": "pairwise_judge", "criteria": "Better", **JUDGE},
        "external_endpoint": {"type": "external_endpoint", "url": "http://127.0.0.1:9/grade"},
        "command": {"type": "command", "command": f"touch {marker}"},
        # builtins:exec as a factory runs the key as Python, at build: the key is the code.
        "custom": {"type": "custom", "function": "builtins:exec", "factory": True, "key": write},
        "combined": {"type": "combined", "graders": [_filler("c1"), _filler("c2")]},
        "panel": {"type": "panel", "judges": [_filler("p1"), _filler("p2")]},
        "string_check": {
            "type": "string_check",
            "input": "{{sample.output_text}}",
            "reference": "{{item.answer}}",
            "operation": "eq",
        },
        "text_similarity": {
            "type": "text_similarity",
            "input": "{{sample.output_text}}",
            "reference": "{{item.answer}}",
            "evaluation_metric": "fuzzy_match",
        },
        "score_model": {
            "type": "score_model",
            "model": "judge",
            "input": [{"role": "user", "content": "Score {{sample.output_text}}"}],
        },
        "label_model": {
            "type": "label_model",
            "model": "judge",
            "input": [{"role": "user", "content": "Label {{sample.output_text}}"}],
            "labels": ["good", "bad"],
            "passing_labels": ["good"],
        },
        "python": {
            "type": "python",
            "source": f"{write}\ndef grade(sample, item):\n    return 1.0\n",
        },
        "multi": {
            "type": "multi",
            "graders": {"a": _openai_filler("a"), "b": _openai_filler("b")},
            "calculate_output": "a + b",
        },
    }


CODE_KINDS = {"command", "custom", "python"}


def _filler(key: str) -> dict[str, Any]:
    return {"type": "external_endpoint", "key": key, "url": "http://127.0.0.1:9/grade"}


def _openai_filler(name: str) -> dict[str, Any]:
    return {
        "type": "string_check",
        "name": name,
        "input": "{{sample.output_text}}",
        "reference": "x",
        "operation": "eq",
    }


def _openai(kind: str) -> bool:
    return kind in OPENAI_GRADER_TYPES


def _named(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """The spec under its name: ``name`` for OpenAI objects, ``key`` for the others."""
    if _openai(spec["type"]):
        return {**spec, "name": name}
    return {"key": name, **spec}  # a custom exec spec keeps its key: the key is its code


def _spec_fields(cls: type) -> list[str]:
    """The fields of a native spec type that hold grader specs (what makes it a container)."""

    def holds_spec(hint: object) -> bool:
        if hint in SPEC_CLASSES:
            return True
        return any(holds_spec(arg) for arg in typing.get_args(hint))

    return [name for name, f in cls.model_fields.items() if holds_spec(f.annotation)]  # type: ignore[attr-defined]


NATIVE_CONTAINERS = {
    kind: _spec_fields(cls) for kind, cls in SPEC_TYPES.items() if _spec_fields(cls)
}
CONTAINERS = [*NATIVE_CONTAINERS, "multi"]
KINDS = [*SPEC_TYPES, *OPENAI_GRADER_TYPES]


def _wrap(container: str, inner: dict[str, Any], marker: Path, depth: int) -> dict[str, Any]:
    """``inner`` as one of the sub-graders of a ``container`` spec (with a filler beside it)."""
    base = _examples(marker)[container]
    name = f"box{depth}"
    if container == "multi":
        inner = _named(inner, "inner")
        graders = {"inner": inner, "b": _openai_filler("b")}
        return {**_named(base, name), "graders": graders, "calculate_output": "inner + b"}
    inner = _named(inner, "inner")
    filled = {field: [inner, _filler(f"fill{depth}")] for field in NATIVE_CONTAINERS[container]}
    return {**_named(base, name), **filled}


def _fits(container: str, kind: str) -> bool:
    """Whether ``container`` takes a sub-grader of ``kind`` (OpenAI objects go in multi)."""
    return (container == "multi") == _openai(kind)


def test_every_kind_has_an_example(tmp_path: Path):
    assert set(_examples(tmp_path)) == set(KINDS)
    assert set(OPENAI_CODE_TYPES) == set(OPENAI_GRADER_TYPES)  # each type says
    # The containers are found from the fields, and these are today's.
    assert set(NATIVE_CONTAINERS) == {"combined", "panel"}
    assert set(KINDS) >= CODE_KINDS


def _cases() -> list[tuple[str, ...]]:
    cases: list[tuple[str, ...]] = [(kind,) for kind in KINDS]
    cases += [(container, kind) for container in CONTAINERS for kind in KINDS]
    cases += [
        (outer, inner, kind)
        for outer, inner in itertools.product(CONTAINERS, CONTAINERS)
        for kind in KINDS
        if _fits(outer, inner)
    ]
    return cases


def _spec(path: tuple[str, ...], marker: Path) -> tuple[dict[str, Any], bool]:
    """The nested spec of ``path`` (outermost first) and whether every level fits."""
    kind = path[-1]
    spec = _named(_examples(marker)[kind], "leaf")
    fits = True
    for depth, container in enumerate(reversed(path[:-1])):
        fits = fits and _fits(container, spec["type"])
        spec = _wrap(container, spec, marker, depth)
    return spec, fits


@pytest.mark.parametrize("path", _cases(), ids="/".join)
def test_code_anywhere_is_refused_untrusted_and_nothing_runs(tmp_path: Path, path):
    marker = tmp_path / "ran"
    spec, fits = _spec(path, marker)
    file = tmp_path / "graders.json"
    file.write_text(json.dumps({"judge": DEFAULTS, "graders": [spec]}))
    code = path[-1] in CODE_KINDS
    if not fits:
        # A kind its container does not take is refused, whatever the trust.
        for trust in (False, True):
            with pytest.raises(InvalidInputError):
                build_grader(spec, judge_defaults=DEFAULTS, trust_code=trust)
            with pytest.raises(InvalidInputError):
                load_graders(file, trust_code=trust)
        assert not marker.exists()
        return
    if code:
        with pytest.raises(InvalidInputError, match="trust_code=True") as refused:
            build_grader(spec, judge_defaults=DEFAULTS)
        assert f"({path[-1]}) runs" in str(refused.value)
        with pytest.raises(InvalidInputError, match="trust_code=True"):
            load_graders(file, trust_code=False)
        assert not marker.exists()
    else:
        assert build_grader(spec, judge_defaults=DEFAULTS).spec is not None
        assert len(load_graders(file, trust_code=False)) == 1
    # Trusted, the same spec builds. A custom exec runs its key as Python while it does
    # (then fails: exec returns no grader), which shows the example is code indeed.
    if path[-1] == "custom":
        with pytest.raises(InvalidInputError, match="returned NoneType"):
            build_grader(spec, judge_defaults=DEFAULTS, trust_code=True)
        assert marker.exists()
    else:
        build_grader(spec, judge_defaults=DEFAULTS, trust_code=True)
        assert not marker.exists()


def test_the_generated_multi_shape_holding_a_python_grader_is_code(tmp_path: Path):
    """The openai package's MultiGrader shape: ``graders`` is one grader, not a mapping."""
    marker = tmp_path / "ran"
    python = _named(_examples(marker)["python"], "py")
    spec = {"type": "multi", "name": "m", "graders": python, "calculate_output": "py"}
    with pytest.raises(InvalidInputError, match=r"'py' \(python\)"):
        build_grader(spec)
    file = tmp_path / "graders.json"
    file.write_text(json.dumps([spec]))
    with pytest.raises(InvalidInputError, match=r"'py' \(python\)"):
        load_graders(file, trust_code=False)


def test_a_spec_type_that_does_not_say_it_runs_no_code_is_taken_for_code():
    from typing import Literal

    from gradewire.specs._grader_specs import SpecBase
    from gradewire.specs._trust import code_in

    class NewKind(SpecBase):
        type: Literal["new_kind"]

    [found] = code_in(NewKind(type="new_kind", key="n"))
    assert (found.key, found.kind) == ("n", "new_kind")
    assert "does not say it runs none" in found.runs
