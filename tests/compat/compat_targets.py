"""Which implementation the compatibility suite runs against.

The suite's test bodies are written for the original packages and run unchanged against
either side; only these modules decide where the names come from:

- ``GRADEWIRE_COMPAT_TARGET=real`` (``make compat``): HUD's ``hud.graders`` (hud 0.6.21) and
  Adaptive Harmony's modules (adaptive-harmony 1.1.0), each in its own venv, so every
  expectation is proved on the original first.
- unset or ``gradewire`` (``make test``): ``gradewire.hud`` and ``gradewire``.
"""

from __future__ import annotations

import os

import pytest

__all__ = ["REAL", "TARGET", "gradewire_only", "real_only"]

TARGET = os.environ.get("GRADEWIRE_COMPAT_TARGET", "gradewire")
if TARGET not in ("real", "gradewire"):
    raise RuntimeError(f"GRADEWIRE_COMPAT_TARGET must be 'real' or 'gradewire', not {TARGET!r}")
REAL = TARGET == "real"

real_only = pytest.mark.skipif(not REAL, reason="checks the original package itself")
gradewire_only = pytest.mark.skipif(REAL, reason="checks gradewire's side of the boundary")
