"""Fixtures of the eval tests.

- ``browser``: Debian's headless Chromium driven by playwright, one per test module, for
  the tests that open reports and views (``support.browser_pages.open_page``). `.ci/run`
  installs Chromium (the ``chromium`` package) when it is missing; playwright's own browser
  download is not used.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Chromium as root, with no network reachable: no sandbox, no background connections.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Imported here: most eval tests open no page, and need not load playwright.
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Chromium is missing: apt-get install chromium (.ci/run does)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()
