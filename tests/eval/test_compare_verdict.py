"""A verdict in words first in every compare output, each statistic explained."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest

from gradewire.eval.comparing._compare_runs import compare_runs
from gradewire.eval.comparing._verdict import EXPLANATIONS, format_p
from gradewire.eval.reporting._compare_page import render_comparison
from support.eval_cli import run
from support.eval_helpers import make_run
from support.terminal_attack import ATTACK, assert_inert


def _binary(gained, lost, n):
    a = [1.0] * lost + [0.0] * gained + [1.0] * ((n - gained - lost) // 2)
    a += [0.0] * (n - len(a))
    b = [0.0] * lost + [1.0] * gained + [1.0] * ((n - gained - lost) // 2)
    b += [0.0] * (n - len(b))
    return a, b


def test_a_real_difference_reads_as_which_run_is_better_by_how_much(tmp_path):
    a, b = _binary(47, 29, 190)
    (g,) = compare_runs(
        make_run(tmp_path / "a", {"correct": a}), make_run(tmp_path / "b", {"correct": b})
    ).graders
    assert g.verdict.startswith(
        "B is better than A on correct by 9.5 points "
        "(95% interval of B − A: 0.5 to 18.4 points; n = 190 pairs)"
    )
    assert "unlikely to be chance (mid-p McNemar test, p = 0.040)" in g.verdict


def test_a_worse_b_reads_as_a_better(tmp_path):
    a, b = _binary(5, 40, 200)
    (g,) = compare_runs(
        make_run(tmp_path / "a", {"correct": a}), make_run(tmp_path / "b", {"correct": b})
    ).graders
    assert g.verdict.startswith("A is better than B on correct by 17.5 points")


def test_no_difference_says_what_the_run_could_not_see(tmp_path):
    a, b = _binary(20, 18, 190)
    (g,) = compare_runs(
        make_run(tmp_path / "a", {"correct": a}), make_run(tmp_path / "b", {"correct": b})
    ).graders
    assert g.verdict.startswith("no detectable difference on correct: B − A is +1.1 points")
    assert "includes 0 (n = 190 pairs" in g.verdict
    match = re.search(r"a difference under ~([\d.]+) points would go unseen", g.verdict)
    assert match
    assert float(match.group(1)) == pytest.approx(100 * g.detectable, abs=0.05)
    assert g.ci_low < 0 < g.ci_high


def test_holm_is_mentioned_when_it_changes_the_conclusion(tmp_path):
    a, b = _binary(47, 29, 190)
    rng = np.random.default_rng(0)
    other = rng.random(190)
    run_a = make_run(tmp_path / "a", {"correct": a, "x": other, "y": other})
    run_b = make_run(tmp_path / "b", {"correct": b, "x": other[::-1], "y": other})
    g = compare_runs(run_a, run_b).graders[0]
    assert g.p_value < 0.05 <= g.p_value_holm
    assert "though not once corrected for comparing 3 graders" in g.verdict


def test_few_clusters_caution_and_the_unclustered_interval_in_the_verdict(tmp_path):
    a, b = _binary(47, 29, 190)
    topics = [str(i % 4) for i in range(190)]
    (g,) = compare_runs(
        make_run(tmp_path / "a", {"correct": a}, topics=topics),
        make_run(tmp_path / "b", {"correct": b}, topics=topics),
        cluster_key="topic",
    ).graders
    assert "n = 190 pairs in 4 clusters" in g.verdict
    assert "Caution: only 4 clusters" in g.verdict
    assert (
        "Treating the pairs as independent, the interval of B − A would be 0.5 to 18.4 points"
        in g.verdict
    )


def test_identical_runs_say_so(tmp_path):
    (g,) = compare_runs(
        make_run(tmp_path / "a", {"g": [1, 0, 1]}), make_run(tmp_path / "b", {"g": [1, 0, 1]})
    ).graders
    assert g.verdict.startswith(
        "no difference on g: A and B gave every one of the 3 pairs the same score; still, 3 "
        "pairs cannot rule out a true difference B − A anywhere in the 95% interval"
    )
    # Tango's interval with no discordant pair: ±z²/(n + z²).
    z2 = 1.959963984540054**2
    assert (g.ci_low, g.ci_high) == pytest.approx((-z2 / (3 + z2), z2 / (3 + z2)), abs=1e-9)


@pytest.mark.parametrize(
    ("p", "text"),
    [
        (0.0499, "p = 0.0499"),
        (0.0501, "p = 0.0501"),
        (0.5, "p = 0.50"),
        (1e-5, "p < 0.001"),
        (0.012, "p = 0.012"),
    ],
)
def test_p_values_are_never_rounded_onto_the_level(p, text):
    assert format_p(p) == text


def test_terminal_json_and_html_lead_with_the_verdict_escaped(tmp_path):
    key = f"c<script>{ATTACK}"
    a, b = _binary(47, 29, 190)
    make_run(tmp_path / "a", {key: a})
    make_run(tmp_path / "b", {key: b})
    html = tmp_path / "compare.html"
    done = run("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--html", str(html))
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout)
    first = done.stdout.splitlines()[2]
    assert first.startswith("* B is better than A on c<script>\\x1b]0;owned")
    assert "(--explain says what each statistic means)" in done.stdout
    assert "method (c<script>" in done.stdout
    explained = run("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--explain")
    for name in EXPLANATIONS:
        assert name in explained.stdout
    data = json.loads(run("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json").stdout)
    (g,) = data["graders"]
    assert g["verdict"].startswith(f"B is better than A on {key} by 9.5 points")
    assert g["detectable"] > 0
    page = html.read_text()
    from gradewire.eval.reporting._page import asset

    own = f"<script>{asset('compare.js')}</script>"
    assert page.count(own) == 1
    assert "<script>" not in page.split("</head>", 1)[1].replace(own, "")
    assert "c&lt;script&gt;" in page
    body = page.split('<ul id="gw-verdict">', 1)[1]
    assert body.startswith("<li>B is better than A on c&lt;script&gt;")
    assert page.index('id="gw-verdict"') < page.index('id="gw-compare"')


class _Heads(HTMLParser):
    def __init__(self):
        super().__init__()
        self.titles = {}
        self._title = None

    def handle_starttag(self, tag, attrs):
        if tag == "th":
            self._title = dict(attrs).get("title")

    def handle_data(self, data):
        if self._title is not None:
            self.titles[data] = self._title
            self._title = None


def test_every_statistic_in_the_html_has_its_meaning_beside_it(tmp_path):
    a, b = _binary(47, 29, 190)
    comparison = compare_runs(
        make_run(tmp_path / "a", {"correct": a}), make_run(tmp_path / "b", {"correct": b})
    )
    page = render_comparison(comparison)
    heads = _Heads()
    heads.feed(page)
    for column in ("p", "p (Holm)", "95% interval", "detectable", "method", "wins / ties / losses"):
        assert heads.titles.get(column), column
    assert heads.titles["p (Holm)"] == EXPLANATIONS["p (Holm)"].replace("'", "&#x27;").replace(
        "&#x27;", "'"
    )
    assert '<details id="gw-legend" open>' in page
    assert "mid-p McNemar test (on the pairs where the runs differ)" in page
