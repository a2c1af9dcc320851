"""``gradewire eval`` and ``gradewire compare`` driven as a user drives them: subprocesses.

- `run(*args)`: the real entry point (``python -m gradewire``) with `env()`; output captured.
- `env()`: this environment with ``tests/`` first on ``PYTHONPATH`` (so grader files can name
  ``support.eval_graders:...``), the judge key in ``JUDGE_KEY`` and loopback out of any proxy.
- `grader_file(tmp_path, judge_url)`: a graders file scoring ``correct`` by the row's answer,
  with a binary judge ``helpful`` asking ``judge_url`` when one is given.
- `lines(folder)`: the results lines a run folder holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).parents[1]
GRADEWIRE = [sys.executable, "-m", "gradewire"]


def env() -> dict[str, str]:
    """The environment of the command: see the module docstring."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(TESTS), environment.get("PYTHONPATH")])
    )
    environment["JUDGE_KEY"] = "test-key"
    environment["NO_PROXY"] = "127.0.0.1"
    return environment


def grader_file(tmp_path: Path, judge_url: str | None = None) -> Path:
    """Write ``graders.toml`` under ``tmp_path``: see the module docstring."""
    text = (
        '[[graders]]\ntype = "custom"\nkey = "correct"'
        '\nfunction = "support.eval_graders:numeric_answer"\n'
    )
    if judge_url:
        text = (
            f'[judge]\nbase_url = "{judge_url}"\napi_key_env = "JUDGE_KEY"\nmax_attempts = 1\n\n'
            + text
            + '\n[[graders]]\ntype = "binary_judge"\nkey = "helpful"\n'
            'criteria = "Answers the question"\njudge_model = "judge"\n'
        )
    path = tmp_path / "graders.toml"
    path.write_text(text, encoding="utf-8")
    return path


def run(*args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    """``gradewire *args``, its output captured as text; ``options`` go to `subprocess.run`."""
    return subprocess.run(
        [*GRADEWIRE, *args], capture_output=True, text=True, env=env(), timeout=120, **options
    )


def lines(folder: Path) -> list[dict[str, Any]]:
    """The parsed lines of ``folder/results.jsonl``, in file order."""
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
