"""W&B in offline mode, confined to a temp dir, for every test in this folder."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.wandb_offline import go_offline, stop_wandb

# The shared sink conformance suite lives in the core tests folder (../../../tests).
_CORE_TESTS = Path(__file__).resolve().parents[3] / "tests"
if str(_CORE_TESTS) not in sys.path:
    sys.path.insert(0, str(_CORE_TESTS))


@pytest.fixture(scope="session", autouse=True)
def wandb_offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point every W&B directory at a session temp dir; stop W&B's service at the end.

    Session-scoped so that the conformance suite's shared run (recorded once per class)
    sees it too; each sink also gets its own ``dir`` explicitly.
    """
    home = tmp_path_factory.mktemp("wandb-env")
    with pytest.MonkeyPatch.context() as patch:
        go_offline(patch, home)
        yield home
        stop_wandb()
