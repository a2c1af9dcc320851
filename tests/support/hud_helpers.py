"""Set-up shared by the `gradewire.hud` tests: login shells and the judge endpoint.

- `login_home`: a fresh ``$HOME`` whose ``.bash_profile`` puts this venv first on ``PATH``,
  so the ``pytest`` of HUD's ``bash -lc "pytest -q"`` is this venv's on any host (a login
  shell resets ``PATH`` from the system profile).
- `judge_at`: points the environment's OpenAI settings at the loopback judge server.
- `requirement` / `mistake`: the prompt sections the rubric judge shows for a criterion.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

__all__ = [
    "FAILING_TEST",
    "PASSING_TEST",
    "judge_at",
    "login_home",
    "mistake",
    "requirement",
]

PASSING_TEST = "def test_passes():\n    assert 1 + 1 == 2\n"
FAILING_TEST = "def test_fails():\n    assert 1 + 1 == 3\n"


def login_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``$HOME`` whose login profile puts this venv's bin first on ``PATH``."""
    home = tmp_path / "home"
    home.mkdir()
    venv_bin = os.path.dirname(sys.executable)
    (home / ".bash_profile").write_text(
        f'export PATH="{venv_bin}:$PATH"\nexport GRADEWIRE_LOGIN_PROFILE_READ=yes\n'
    )
    monkeypatch.setenv("HOME", str(home))
    # The inner pytest runs on its own: no options or plugins from this run leak into it.
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return home


def judge_at(monkeypatch: pytest.MonkeyPatch, base_url: str, api_key: str = "test-key") -> None:
    """Point ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` at ``base_url``; no judge override."""
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", api_key)
    monkeypatch.delenv("GRADEWIRE_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("GRADEWIRE_JUDGE_API_KEY", raising=False)


def requirement(text: str) -> str:
    """The prompt section the rubric judge shows for a positive criterion."""
    return f"<requirement>\n{text}\n</requirement>"


def mistake(text: str) -> str:
    """The prompt section the rubric judge shows for a negative-weight criterion."""
    return f"<mistake>\nThe answer makes this mistake: {text}\n</mistake>"
