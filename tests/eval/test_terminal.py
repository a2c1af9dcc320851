"""Text from data reaches a terminal with its control characters escaped.

An id, a completion or a judge's error text can hold escape sequences (set the window
title, clear the screen, hide text); `gradewire eval` and `gradewire compare` print them
as visible escapes, never raw.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gradewire.eval.reporting._terminal import terminal_safe
from support.eval_cli import grader_file, run
from support.eval_helpers import make_run, write_rows
from support.terminal_attack import ATTACK, assert_inert


def test_terminal_safe_escapes_controls_and_keeps_text() -> None:
    assert terminal_safe("plain text, ünïcode, 中文 😀") == "plain text, ünïcode, 中文 😀"
    safe = terminal_safe(ATTACK)
    assert_inert(safe)
    assert safe.startswith("\\x1b]0;owned\\x07\\x1b[2J")
    assert "\\u202e" in safe
    assert terminal_safe("a\nb\tc") == "a\\nb\\tc"
    assert terminal_safe("a\nb\tc", multiline=True) == "a\nb\tc"
    assert terminal_safe("half \ud83d") == "half \\ud83d"  # a lone surrogate prints as text


def test_compare_prints_ids_graders_and_names_escaped(tmp_path: Path) -> None:
    a = tmp_path / f"run{ATTACK}"
    make_run(a, {"g": [1, 0, 1]}, ids=["x", "y", f"only{ATTACK}"])
    make_run(tmp_path / "b", {"g": [1, 1, 0, 1]}, ids=["x", "y", "z", f"b{ATTACK}"])
    done = run("compare", str(a), str(tmp_path / "b"))
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout + done.stderr)
    assert "only\\x1b]0;owned" in done.stdout
    assert "b\\x1b]0;owned" in done.stdout


def test_eval_warnings_and_errors_are_escaped(tmp_path: Path) -> None:
    source = write_rows(tmp_path / "d.jsonl", [{"id": "a", "prompt": "q", "completion": ATTACK}])
    graders = tmp_path / "g.toml"
    graders.write_text(
        '[[graders]]\ntype = "custom"\nkey = "echo"\nfunction = "support.eval_graders:echo_error"\n'
    )
    for display in (["--no-progress"], []):
        done = run(
            "eval",
            str(source),
            "--graders",
            str(graders),
            "--out",
            str(tmp_path / f"o{len(display)}"),
            *display,
        )
        # The grader failed on its only sample: exit 4 (a grader that scored nothing).
        assert done.returncode == 4, done.stderr
        # The warning, shown escaped (the live display wraps it: compared without spaces).
        assert "modelsaid:\\x1b]0;owned" in "".join(done.stderr.split())
        assert_inert(done.stdout + done.stderr)


@pytest.mark.parametrize("where", ["id", "key"])
def test_eval_error_messages_are_escaped(tmp_path: Path, where: str) -> None:
    rows = [{"id": f"dup{ATTACK}", "prompt": "q", "completion": "a"}] * 2
    source = write_rows(tmp_path / "d.jsonl", rows)
    graders = grader_file(tmp_path)
    if where == "key":
        source = write_rows(tmp_path / "d.jsonl", rows[:1])
        graders.write_text(
            json.dumps(
                {
                    "graders": [
                        {
                            "type": "custom",
                            "key": f"k{ATTACK}",
                            "function": "support.eval_graders:brevity",
                        }
                    ]
                }
            )
        )
        graders = graders.rename(tmp_path / "g.json")
    done = run(
        "eval",
        str(source),
        "--graders",
        str(graders),
        "--out",
        str(tmp_path / "o"),
        "--no-progress",
    )
    assert_inert(done.stdout + done.stderr)
    assert "\\x1b]0;owned" in done.stdout + done.stderr
