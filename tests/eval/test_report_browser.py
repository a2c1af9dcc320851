"""The eval report in a real browser: Debian's headless Chromium, driven by playwright.

The browser is the ``browser`` fixture of this folder's ``conftest.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from gradewire.eval.comparing._compare_runs import compare_runs
from gradewire.eval.reporting._compare_page import render_comparison
from gradewire.eval.reporting._eval_report import write_report
from support.browser_pages import PAYLOAD, open_page
from support.eval_helpers import make_run


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


N_PAIRS = 10_000
TOPICS = ["math", "code", PAYLOAD]


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """A 10,000-pair comparison by topic, with script payloads in ids, completions, topics."""
    folder = tmp_path_factory.mktemp("compare")
    rng = np.random.default_rng(1)
    ids = [PAYLOAD + "id" if i == 5 else f"s{i}" for i in range(N_PAIRS)]
    topics = [TOPICS[i % 3] for i in range(N_PAIRS)]
    completions_a = [f"The answer is {i} because two and two make four." for i in range(N_PAIRS)]
    completions_b = [
        PAYLOAD if i % 400 == 3 else text.replace("four", "five") if i % 2 else text
        for i, text in enumerate(completions_a)
    ]
    correct_a = (rng.random(N_PAIRS) < 0.6).astype(float)
    correct_b = np.where(rng.random(N_PAIRS) < 0.2, 1.0 - correct_a, correct_a)
    quality_a = rng.random(N_PAIRS).round(3)
    quality_b = np.clip(quality_a + rng.normal(0.02, 0.1, N_PAIRS), 0, 1).round(3)
    a = make_run(
        folder / "a",
        {"correct": list(correct_a), "quality": list(quality_a)},
        ids=ids,
        topics=topics,
        completions=completions_a,
    )
    b = make_run(
        folder / "b",
        {"correct": list(correct_b), "quality": list(quality_b)},
        ids=ids,
        topics=topics,
        completions=completions_b,
    )
    comparison = compare_runs(a, b, by="topic", n_resamples=200)
    path = folder / "compare.html"
    path.write_text(render_comparison(comparison), encoding="utf-8")
    reference = {
        "correct": (correct_a, correct_b),
        "quality": (quality_a, quality_b),
    }
    return path, (comparison, reference, topics)


def cards(page: Page) -> list[dict[str, Any]]:
    """The pairs the page shows now: their outcomes per grader and slice index."""
    return page.eval_on_selector_all(
        "#gw-pairs article.pair:not([hidden])",
        "cs => cs.map(c => ({...c.dataset, id: c.querySelector('.id').textContent}))",
    )


def expected(reference: Any, topics: list[str], grader: str, outcome: str, topic: str) -> int:
    """Pairs of that kind, counted here from the scores themselves."""
    a, b = reference[grader]
    kind = {"gained": b > a, "lost": b < a, "tied": b == a}[outcome]
    return int(np.count_nonzero(kind & (np.array(topics) == topic)))


def test_the_compare_page_of_10000_pairs_opens_small_verdict_first(browser, compared):
    path, (comparison, _, _) = compared
    size = path.stat().st_size
    assert size < 400_000, size  # the pairs kept are capped; 10,000 would be megabytes
    page, problems = open_page(browser, path)
    page.wait_for_selector("body[data-ready='1']")
    headings = page.eval_on_selector_all("h2", "hs => hs.map(h => h.textContent)")
    assert headings[0] == "Verdict"
    assert page.locator("#gw-verdict li").count() == 2
    assert page.text_content("#gw-verdict li").startswith(comparison.graders[0].verdict)
    kept = len(comparison.samples)
    assert 0 < kept <= 100
    assert f"{kept} of {N_PAIRS} pairs are on this page" in page.text_content("#gw-kept")
    assert f"{N_PAIRS - kept} pairs were left out" in page.text_content("#gw-kept")
    assert page.text_content("#gw-count") == f"{kept} shown of {N_PAIRS} such pairs" + (
        f" ({N_PAIRS - kept} left out of this page)"
    )
    # the forest plot: one interval per grader, ticks in points, a legend
    forest = page.locator("#gw-forest svg.forest")
    assert forest.locator("line.ci").count() == 2
    ticks = forest.locator("text.tick-label").all_text_contents()
    assert "0" in ticks
    assert len(ticks) >= 3
    assert all(t == "0" or t[0] in "+−" for t in ticks)
    assert "B − A (points)" in forest.text_content()
    assert "95% interval" in forest.locator("g.legend").text_content()
    assert "no detectable difference" in forest.locator("g.legend").text_content()
    # slices drawn, each with its interval, and the meaning of gained/lost/tied given
    assert page.locator("#gw-slices svg.forest").count() == 2
    assert "B scored this pair higher than A" in page.text_content("#gw-outcomes")
    page.screenshot(path=str(path.with_name("compare-top.png")))
    assert problems == []


def test_the_filters_show_only_pairs_of_that_grader_outcome_and_slice(browser, compared):
    path, (comparison, reference, topics) = compared
    page, problems = open_page(browser, path)
    page.wait_for_selector("body[data-ready='1']")
    every = cards(page)
    graders = [g.grader for g in comparison.graders]
    slices = [o.text_content() for o in page.locator("#gw-slice option").all()][1:]
    assert sorted(slices) == sorted(TOPICS)
    for grader in graders:
        g = str(graders.index(grader))
        for outcome in ("gained", "lost", "tied"):
            for s, topic in enumerate(slices):
                page.select_option("#gw-grader", g)
                page.select_option("#gw-outcome", outcome)
                page.select_option("#gw-slice", str(s))
                shown = cards(page)
                kept = [
                    c
                    for c in comparison.samples
                    if c.slice == topic and c.outcome(grader) == outcome
                ]
                # every kind is represented among the pairs kept
                assert shown, (grader, outcome, topic)
                assert sorted(c["id"] for c in shown) == sorted(c.id for c in kept)
                assert all(c["o" + g] == outcome and c["s"] == str(s) for c in shown)
                changes = [float(c["d" + g]) for c in shown]
                assert changes == sorted(changes, reverse=True)
                total = expected(reference, topics, grader, outcome, topic)
                assert page.text_content("#gw-count").startswith(
                    f"{len(shown)} shown of {total} such pairs"
                )
    page.select_option("#gw-grader", "")
    page.select_option("#gw-slice", "")
    page.select_option("#gw-outcome", "lost")
    lost = cards(page)
    assert 0 < len(lost) < len(every)
    assert all(any(c.get(f"o{i}") == "lost" for i in range(2)) for c in lost)
    assert problems == []


def test_similar_completions_show_a_word_diff_and_payloads_stay_text(browser, compared):
    path, (comparison, _, _) = compared
    page, problems = open_page(browser, path)
    page.wait_for_selector("body[data-ready='1']")
    changed = [s for s in comparison.samples if "five" in s.completion_b and PAYLOAD not in s.id]
    assert changed
    card = page.locator("article.pair", has=page.locator(f"b.id:text-is('{changed[0].id}')"))
    assert card.locator(".side.a del").all_text_contents() == ["four"]
    assert card.locator(".side.b ins").all_text_contents() == ["five"]
    assert card.locator(".side.a pre").text_content() == changed[0].completion_a
    assert card.locator(".side.b pre").text_content() == changed[0].completion_b
    attacked = [s for s in comparison.samples if PAYLOAD in (s.completion_b + s.id + str(s.slice))]
    assert attacked
    text = page.text_content("#gw-pairs")
    for sample in attacked:
        assert sample.id in text
    assert PAYLOAD in page.text_content("#gw-slices")
    assert page.locator("#gw-slice option", has_text=PAYLOAD).count() == 1
    assert page.evaluate("window.__pwned") is None
    assert page.locator("body img").count() == 0
    assert page.locator("body script").count() == 2  # the page's data and its own script
    page.select_option("#gw-outcome", "tied")
    page.locator("#gw-pairs article.pair:not([hidden])").first.scroll_into_view_if_needed()
    page.screenshot(path=str(path.with_name("compare-pairs.png")))
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
