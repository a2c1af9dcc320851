"""The eval report in a real browser: Debian's headless Chromium, driven by playwright.

`.ci/run` installs Chromium (the ``chromium`` package) when it is missing; playwright's own
browser download is not used.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers_eval import make_run
from playwright.sync_api import Browser, Page, expect, sync_playwright

from gradewire.eval.comparing._compare_runs import compare_runs
from gradewire.eval.reporting._compare_page import render_comparison
from gradewire.eval.reporting._eval_report import write_report

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
# The page's CSP forbids eval, so waits go through locators, never wait_for_function.
PAYLOAD = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), "Chromium is missing: apt-get install chromium (.ci/run does)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


def open_page(browser: Browser, path: Path) -> tuple[Page, list[str]]:
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


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("run")
    n = 10_000
    scores = {
        "correct": [None if i % 97 == 0 else float(i % 3 == 0) for i in range(n)],
        "quality": [(i * 37 % 101) / 100 for i in range(n)],
    }
    completions = [PAYLOAD if i % 500 == 7 else f"answer number {i}" for i in range(n)]
    run = make_run(folder, scores, completions=completions)
    return write_report(run, folder / "report.html")


def rows(page: Page) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#gw-rows tr.row", "trs => trs.map(tr => [...tr.children].map(td => td.textContent))"
    )


def test_report_loads_draws_plots_and_pages_10000_rows(browser, report):
    page, problems = open_page(browser, report)
    page.wait_for_selector("body[data-ready='1']")
    assert page.text_content("#gw-count") == "10000 of 10000 samples"
    assert page.text_content("#gw-page") == "page 1 of 200"
    assert len(rows(page)) == 50
    heights = page.eval_on_selector_all(
        "svg.hist rect.bar", "rs => rs.map(r => r.getBBox().height)"
    )
    assert len(heights) > 10
    assert max(heights) > 50
    assert page.locator("#gw-summary tbody tr").count() == 2
    assert "RuntimeError: failed" in page.text_content("#gw-failures")
    page.click("#gw-next")
    assert page.text_content("#gw-page") == "page 2 of 200"
    assert rows(page)[0][0] == "s50"
    page.screenshot(path=str(report.with_name("report.png")))
    assert problems == []


def test_sorting_and_filtering_change_the_rows(browser, report):
    page, problems = open_page(browser, report)
    page.wait_for_selector("body[data-ready='1']")
    page.click("th[data-key='g:quality']")  # scores sort highest first
    top = rows(page)
    assert float(top[0][4]) == 1.0
    assert float(top[0][4]) >= float(top[-1][4])
    page.click("th[data-key='g:quality']")
    assert float(rows(page)[0][4]) == 0.0
    page.select_option("#gw-status", "error")
    assert page.text_content("#gw-count") == f"{len(range(0, 10_000, 97))} of 10000 samples"
    assert all(row[3] == "error" for row in rows(page))
    page.select_option("#gw-status", "")
    page.select_option("#gw-grader", "quality")
    page.fill("#gw-min", "0.99")
    high = sum((i * 37 % 101) / 100 >= 0.99 for i in range(10_000))
    expect(page.locator("#gw-count")).to_have_text(f"{high} of 10000 samples")
    page.fill("#gw-min", "")
    page.select_option("#gw-grader", "")
    page.fill("#gw-search", "answer number 4321")
    expect(page.locator("#gw-count")).to_have_text("1 of 10000 samples")
    assert rows(page)[0][0] == "s4321"
    assert problems == []


def test_a_script_in_a_completion_is_text_and_never_runs(browser, report):
    page, problems = open_page(browser, report)
    page.wait_for_selector("body[data-ready='1']")
    page.fill("#gw-search", "__pwned")
    expect(page.locator("#gw-count")).to_have_text("20 of 10000 samples")
    assert rows(page)[0][2] == PAYLOAD
    page.locator("#gw-rows tr.row").first.click()
    details = page.text_content("tr.expanded")
    assert PAYLOAD in details
    assert "why 7" in details
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#gw-rows img").count() == 0
    assert problems == []


def test_comparison_report_draws_intervals(browser, tmp_path):
    a = make_run(tmp_path / "a", {"g": [0.1, 0.2, 0.3, 0.4] * 10}, completions=[PAYLOAD] * 40)
    b = make_run(tmp_path / "b", {"g": [0.3, 0.2, 0.5, 0.4] * 10})
    path = tmp_path / "compare.html"
    path.write_text(render_comparison(compare_runs(a, b)), encoding="utf-8")
    page, problems = open_page(browser, path)
    assert page.locator("svg.forest line.ci").count() == 1
    assert PAYLOAD in page.text_content("table.changed")
    assert page.evaluate("window.__pwned") is None
    assert problems == []


def test_the_agreement_page_shows_untrusted_text_as_text(browser, tmp_path):
    from gradewire.eval.auditing._run_agreement import run_agreement, write_agreement_page

    ids = [f"s{i}" for i in range(6)] + [PAYLOAD]
    run = make_run(tmp_path, {"judge": [1, 0, 1, 1, 0, 1, 1]}, ids=ids, completions=[PAYLOAD] * 7)
    labels = dict.fromkeys(ids, 1.0)
    path = write_agreement_page(run_agreement(run, "judge", labels, n_resamples=200), tmp_path)
    page, problems = open_page(browser, path)
    assert page.evaluate("() => window.__pwned === undefined")
    assert page.locator("h1").text_content() == "Agreement: judge"
    cells = page.eval_on_selector_all(
        "h2 + table tbody tr", "trs => trs.map(tr => tr.children[0].textContent)"
    )
    assert cells == ["s1", "s4"]
    assert PAYLOAD in page.locator("h2 + table tbody tr").first.text_content()
    assert "Cohen" in page.text_content("body")
    assert problems == []
