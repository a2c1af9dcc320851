"""W&B offline and quiet, its every folder under one test folder, and its service stopped."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

QUIET = {
    "WANDB_MODE": "offline",
    "WANDB_SILENT": "true",
    "WANDB_CONSOLE": "off",  # no stdout/stderr capture fighting pytest's own
    "WANDB_DISABLE_GIT": "true",
    "WANDB_DISABLE_CODE": "true",
    "WANDB_X_DISABLE_STATS": "true",  # no system-metrics sampler
}
FOLDERS = ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR")


def go_offline(patch: pytest.MonkeyPatch, home: Path) -> None:
    """Set W&B offline and quiet, with each of its folders made under ``home``."""
    for name in FOLDERS:
        folder = home / name.lower()
        folder.mkdir(parents=True)
        patch.setenv(name, str(folder))
    for name, value in QUIET.items():
        patch.setenv(name, value)


def stop_wandb() -> None:
    """Finish the current run, if any, and stop the wandb-core process the tests started."""
    if "wandb" in sys.modules:
        import wandb

        if wandb.run is not None:
            wandb.run.finish()
        wandb.teardown()
