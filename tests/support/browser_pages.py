"""gradewire's HTML pages opened in a real browser, and what went wrong on them.

`open_page(browser, path)` opens a page from a file (1280 × 900) and returns it with a list
that fills as problems happen: console errors and warnings, uncaught page errors, and any
request for something that is not a local file (a page must work offline). `PAYLOAD` is
markup that sets ``window.__pwned`` if it ever runs: put it wherever untrusted text goes.

The pages' CSP forbids eval, so a test waits through locators, never ``wait_for_function``.
The browser itself is the ``browser`` fixture of ``tests/eval/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, Page

PAYLOAD = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def open_page(browser: Browser, path: Path) -> tuple[Page, list[str]]:
    """Open ``path`` in a new page: the page, and the problems it shows (see the module)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on(
        "console",
        lambda m: (
            problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning")
            else None
        ),
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on(
        "request",
        lambda r: problems.append(f"request {r.url}") if not r.url.startswith("file:") else None,
    )
    page.goto(path.as_uri())
    return page, problems
