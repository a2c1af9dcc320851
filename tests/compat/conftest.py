"""Fixtures of the compatibility suite (see `compat_targets` for what it runs against).

- ``hud_gateway``: HUD's gateway settings (``HUD_API_KEY``, ``HUD_GATEWAY_URL``) point at
  the loopback judge server, as a HUD user points HUD's judge at a gateway; gradewire's
  judge reads the same variables. Returns the server's `JudgeRules`.
"""

from __future__ import annotations

import json

import pytest
from compat_targets import REAL


def both_formats(label: str, reason: str = "because") -> str:
    """A judge reply that HUD's parser and gradewire's structured output both read."""
    return json.dumps(
        {"criterion_status": label, "explanation": reason, "verdict": label, "reasoning": reason}
    )


@pytest.fixture
def hud_gateway(monkeypatch, judge_server, judge_rules):
    monkeypatch.setenv("HUD_API_KEY", "test-key")
    monkeypatch.setenv("HUD_GATEWAY_URL", judge_server.base_url)
    for name in ("GRADEWIRE_JUDGE_BASE_URL", "GRADEWIRE_JUDGE_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    if REAL:  # HUD reads its settings once, when hud is imported
        from hud.settings import settings

        monkeypatch.setattr(settings, "api_key", "test-key")
        monkeypatch.setattr(settings, "hud_gateway_url", judge_server.base_url)
    return judge_rules


def pytest_configure(config: pytest.Config) -> None:
    if REAL:
        # HUD's judge builds an OpenAI client per call and never closes it; its sockets are
        # reported when collected, in whichever test (or at the end) that happens. HUD's to
        # fix; against gradewire these warnings stay errors.
        config.addinivalue_line("filterwarnings", "ignore::ResourceWarning")
        config.addinivalue_line("filterwarnings", "ignore::pytest.PytestUnraisableExceptionWarning")
