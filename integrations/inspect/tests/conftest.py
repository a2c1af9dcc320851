"""The Inspect log reader found as `gradewire compare` finds it: through its entry point."""

from __future__ import annotations

import pytest

from gradewire.core._integrations import integrations

READER = "gradewire_inspect._log_source:read_inspect_log"


@pytest.fixture
def inspect_source() -> None:
    """The ``eval_source.inspect`` integration, as pyproject.toml declares it.

    The suite's ``support.declared_integrations`` plugin makes the declared entry points
    findable even through an editable install made before they were declared.
    """
    entry = integrations("eval_source").get("inspect")
    assert entry is not None
    assert entry.value == READER
