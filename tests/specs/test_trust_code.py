"""A grader spec can be code: built from a dict only with trust_code=True, from a file you name.

The hostile specs here would run a command or Python if built: each test checks, through a
marker file, that nothing ran.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gradewire import InvalidInputError, InvalidTypeError, build_grader, grader_config, load_graders


def exec_spec(marker: Path) -> dict:
    """``builtins:exec`` as a factory runs the spec's key as Python."""
    code = f"open({str(marker)!r}, 'w').write('ran')"
    return {"type": "custom", "key": code, "function": "builtins:exec", "factory": True}


def shell_spec(marker: Path) -> dict:
    return {"type": "custom", "key": f"touch {marker}", "function": "os:system", "factory": True}


def command_spec(marker: Path) -> dict:
    return {"type": "command", "key": "b", "command": f"touch {marker}"}


@pytest.mark.parametrize("make", [exec_spec, shell_spec, command_spec])
def test_build_grader_refuses_code_by_default_and_runs_none(tmp_path: Path, make):
    marker = tmp_path / "ran"
    spec = make(marker)
    with pytest.raises(InvalidInputError, match="trust_code=True") as caught:
        build_grader(spec)
    assert "is code" in str(caught.value)
    assert not marker.exists()


def test_code_nested_in_a_combined_spec_is_refused_with_its_key(tmp_path: Path):
    marker = tmp_path / "ran"
    spec = {
        "type": "combined",
        "key": "both",
        "graders": [
            {"type": "external_endpoint", "key": "rm", "url": "http://127.0.0.1:9/grade"},
            {**exec_spec(marker), "key": "inner"},
        ],
    }
    with pytest.raises(InvalidInputError, match=r"'inner' \(custom\) runs the Python code"):
        build_grader(spec)
    assert not marker.exists()


def test_a_spec_read_back_from_a_logged_config_needs_trust_code(tmp_path: Path):
    """grader_config is made to be logged to a tracker; what comes back is just data."""
    grader = build_grader(
        {"type": "custom", "key": "f", "function": "support.custom_graders:label_match"},
        trust_code=True,
    )
    logged = json.loads(json.dumps(grader_config(grader)))  # as a tracker would hand it back
    with pytest.raises(InvalidInputError, match="custom"):
        build_grader(logged["graders"][0])
    again = build_grader(logged["graders"][0], trust_code=True)
    assert again.grader_key == "f"


def test_specs_that_run_no_code_need_no_trust():
    grader = build_grader({"type": "external_endpoint", "key": "rm", "url": "http://127.0.0.1:9"})
    assert grader.grader_key == "rm"


def test_trust_code_must_be_a_bool():
    spec = {"type": "external_endpoint", "key": "rm", "url": "http://127.0.0.1:9"}
    with pytest.raises(InvalidTypeError, match="trust_code"):
        build_grader(spec, trust_code="yes")  # type: ignore[arg-type]


def test_a_grader_file_you_name_is_trusted_and_can_be_refused(tmp_path: Path):
    marker = tmp_path / "ran"
    file = tmp_path / "graders.json"
    file.write_text(json.dumps({"graders": [command_spec(marker)]}))
    with pytest.raises(InvalidInputError, match=str(file)):
        load_graders(file, trust_code=False)
    (grader,) = load_graders(file)  # the file is yours: its command is built
    assert grader.grader_key == "b"
    assert not marker.exists()  # built, not yet run


@pytest.mark.parametrize("nested", [False, True])
def test_an_openai_python_grader_in_a_file_is_code_too(tmp_path: Path, nested: bool):
    marker = tmp_path / "ran"
    python = {
        "type": "python",
        "name": "py",
        "source": f"def grade(sample, item):\n    open({str(marker)!r}, 'w').write('ran')\n"
        "    return 1.0\n",
    }
    grader = (
        {"type": "multi", "name": "m", "graders": {"py": python}, "calculate_output": "py"}
        if nested
        else python
    )
    path = tmp_path / "graders.json"
    path.write_text(json.dumps([grader]))
    with pytest.raises(InvalidInputError, match="'py' \\(python\\) runs the Python source"):
        load_graders(path, trust_code=False)
    assert len(load_graders(path)) == 1  # a file of yours: trusted by default
    assert not marker.exists()
