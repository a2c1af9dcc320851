"""The W&B keys the README and docs examples name in their comments are keys their runs log.

Each example that builds a `WandbSink` with a ``prefix`` runs as a script of its own (as a
reader would run it), in offline mode; its run files are read back and every
``<prefix>/...`` key its comments name must be in them.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from gradewire_wandb import read_offline_run

_ROOT = Path(__file__).resolve().parents[3]
_READMES = [
    _ROOT / "README.md",
    _ROOT / "integrations" / "wandb" / "README.md",
    *sorted((_ROOT / "docs").rglob("*.md")),
]


def _examples() -> list[tuple[str, str]]:
    found = []
    for readme in _READMES:
        tokens = MarkdownIt("commonmark").parse(readme.read_text(encoding="utf-8"))
        for token in tokens:
            info = token.info.split()
            runs = token.type == "fence" and info[:1] == ["python"] and "notest" not in info
            if runs and "WandbSink(" in token.content and "prefix=" in token.content:
                where = f"{readme.relative_to(_ROOT)}:{token.map[0] + 1 if token.map else 0}"
                found.append((where, token.content))
    return found


def _named_keys(code: str) -> set[str]:
    prefixes = set(re.findall(r"prefix=\"([\w.-]+)\"", code))
    comments = " ".join(
        token.string
        for token in tokenize.generate_tokens(io.StringIO(code).readline)
        if token.type == tokenize.COMMENT
    )
    return {
        key.rstrip(".,")
        for prefix in prefixes
        for key in re.findall(rf"(?<![\w/]){re.escape(prefix)}/[\w/.-]+", comments)
    }


def test_the_examples_are_found():
    examples = _examples()
    assert len(examples) >= 3, examples
    assert all(_named_keys(code) for _, code in examples)


@pytest.mark.parametrize(("where", "code"), _examples(), ids=[w for w, _ in _examples()])
def test_every_key_an_example_names_is_logged(where: str, code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {**os.environ, "WANDB_DIR": str(tmp_path)}  # offline: the conftest set the mode
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{where} failed as a script:\n{done.stderr}"
    logged: set[str] = set()
    for folder in sorted(tmp_path.rglob("offline-run-*")):  # under WANDB_DIR or a dir= of its own
        for row in read_offline_run(folder).history:
            logged.update(row)
    missing = _named_keys(code) - logged
    assert not missing, f"{where} names {sorted(missing)}; its run logged {sorted(logged)}"
