"""W&B in offline mode, confined to a temp dir, for every test in this folder."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The shared sink conformance suite lives in the core tests folder (../../../tests).
_CORE_TESTS = Path(__file__).resolve().parents[3] / "tests"
if str(_CORE_TESTS) not in sys.path:
    sys.path.insert(0, str(_CORE_TESTS))

_QUIET = {
    "WANDB_MODE": "offline",
    "WANDB_SILENT": "true",
    "WANDB_CONSOLE": "off",  # no stdout/stderr capture fighting pytest's own
    "WANDB_DISABLE_GIT": "true",
    "WANDB_DISABLE_CODE": "true",
    "WANDB_X_DISABLE_STATS": "true",  # no system-metrics sampler
}


@pytest.fixture(scope="session", autouse=True)
def wandb_offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point every W&B directory at a session temp dir; stop W&B's service at the end.

    Session-scoped so that the conformance suite's shared run (recorded once per class)
    sees it too; each sink also gets its own ``dir`` explicitly.
    """
    home = tmp_path_factory.mktemp("wandb-env")
    with pytest.MonkeyPatch.context() as patch:
        for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
            folder = home / name.lower()
            folder.mkdir()
            patch.setenv(name, str(folder))
        for name, value in _QUIET.items():
            patch.setenv(name, value)
        yield home
        if "wandb" in sys.modules:
            import wandb

            if wandb.run is not None:
                wandb.run.finish()
            wandb.teardown()  # stops the wandb-core process this session started
