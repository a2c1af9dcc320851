"""compare --by KEY: per-slice means and paired differences, flipped slices pointed out."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gradewire.eval.comparing._compare_runs import compare_runs
from gradewire.eval.comparing._paired_difference import paired_difference
from gradewire.eval.reporting._compare_page import render_comparison
from support.eval_cli import run
from support.eval_helpers import make_run
from support.terminal_attack import ATTACK, assert_inert


def _runs(tmp_path, topics=None):
    rng = np.random.default_rng(0)
    n = 300
    topics = topics or [["easy", "hard", "medium"][i % 3] for i in range(n)]
    a = (rng.random(n) < 0.6).astype(float)
    b = a.copy()
    for i in range(n):
        if i % 3 == 0 and rng.random() < 0.3:
            b[i] = 1.0
        if i % 3 == 1 and rng.random() < 0.25:
            b[i] = 0.0
    return (
        make_run(tmp_path / "a", {"correct": a}, topics=topics),
        make_run(tmp_path / "b", {"correct": b}, topics=topics),
        a,
        b,
        topics,
    )


def test_each_slice_has_its_means_difference_and_the_graders_method(tmp_path):
    run_a, run_b, a, b, topics = _runs(tmp_path)
    (g,) = compare_runs(run_a, run_b, by="topic").graders
    assert [s.value for s in g.slices] == ["easy", "hard", "medium"]
    for s in g.slices:
        mask = np.array([t == s.value for t in topics])
        assert s.n_pairs == mask.sum()
        assert s.mean_a == pytest.approx(a[mask].mean())
        assert s.mean_b == pytest.approx(b[mask].mean())
        reference = paired_difference(a[mask], b[mask])
        assert (s.ci_low, s.ci_high, s.p_value) == (
            reference.low,
            reference.high,
            reference.p_value,
        )
    assert g.diff < 0
    assert [s.flips for s in g.slices] == [True, False, False]
    # Its interval excludes 0 on the other side: it goes the other way.
    assert g.slices[0].ci_low > 0
    assert [s.flips_clearly for s in g.slices] == [True, False, False]
    assert "1 of 3 slices goes the other way (B − A): easy +6.0 points" in g.verdict


def test_slices_in_every_output_escaped(tmp_path):
    topics = [[f"e{ATTACK}<b>", "hard", "medium"][i % 3] for i in range(300)]
    _runs(tmp_path, topics)
    html = tmp_path / "c.html"
    args = ("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--by", "topic")
    done = run(*args, "--html", str(html))
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout)
    assert "correct by topic:" in done.stdout
    flipped = [line for line in done.stdout.splitlines() if "goes the other way" in line]
    assert flipped[-1].lstrip().startswith("e\\x1b]0;owned")
    data = json.loads(run(*args, "--json").stdout)
    assert data["by"] == "topic"
    assert [s["flips"] for s in data["graders"][0]["slices"]] == [True, False, False]
    page = html.read_text()
    assert "<h2>By topic</h2>" in page
    assert "&lt;b&gt;" in page
    assert "<b>goes the other way</b>" in page
    assert f"e{ATTACK}<b>" not in page


def test_a_sample_without_the_field_is_its_own_slice(tmp_path):
    a = make_run(tmp_path / "a", {"g": [1, 0, 1, 1]}, topics=["x", "x", "y", "y"])
    b = make_run(tmp_path / "b", {"g": [1, 1, 1, 0]}, topics=["x", "x", "y", "y"])
    (g,) = compare_runs(a, b, by="nope").graders
    assert [(s.value, s.n_pairs) for s in g.slices] == [("(missing)", 4)]
    render_comparison(compare_runs(a, b, by="topic"))
