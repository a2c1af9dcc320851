"""What the compare page is built from: the pairs kept for it, the word diff, the axis ticks."""

from __future__ import annotations

import difflib
import html
import json
import re
from collections import Counter
from itertools import product

import numpy as np
import pytest

from gradewire.core import InvalidInputError
from gradewire.core._svg import ticks
from gradewire.eval.comparing._compare_runs import compare_runs
from gradewire.eval.comparing._shown_pairs import OUTCOMES, shown_pairs
from gradewire.eval.reporting._compare_page import render_comparison
from gradewire.eval.reporting._word_diff import side_by_side
from support.eval_helpers import make_run


def _runs(tmp_path, n=600, topics=("a", "b", "c", "d")):
    rng = np.random.default_rng(3)
    x = (rng.random(n) < 0.5).astype(float)
    y = np.where(rng.random(n) < 0.3, 1.0 - x, x)
    qx = rng.integers(0, 5, n) / 4
    qy = np.clip(qx + rng.integers(-1, 2, n) / 4, 0, 1)
    tags = [topics[i % len(topics)] for i in range(n)]
    completions = [f"answer {i % 7}" for i in range(n)]
    a = make_run(tmp_path / "a", {"c": list(x), "q": list(qx)}, topics=tags)
    b = make_run(
        tmp_path / "b", {"c": list(y), "q": list(qy)}, topics=tags, completions=completions
    )
    return a, b, {"c": (x, y), "q": (qx, qy)}, tags


def test_the_counts_of_every_kind_match_the_scores(tmp_path):
    a, b, scores, tags = _runs(tmp_path)
    c = compare_runs(a, b, by="topic", n_resamples=100)
    reference: Counter = Counter()
    for i, tag in enumerate(tags):
        kinds = {(None, None)}
        for key, (x, y) in scores.items():
            o = "gained" if y[i] > x[i] else "lost" if y[i] < x[i] else "tied"
            kinds |= {(key, None), (key, o), (None, o)}
        for (key, o), s in product(kinds, (None, tag)):
            reference[(key, o, s)] += 1
    assert dict(reference) == dict(c.sample_counts)
    assert c.sample_counts[(None, None, None)] == 600
    assert c.sample_counts[("c", "gained", None)] == c.graders[0].wins


def test_every_grader_outcome_and_slice_is_kept_largest_change_first(tmp_path):
    a, b, scores, _ = _runs(tmp_path)
    c = compare_runs(a, b, by="topic", shown=60, n_resamples=100)
    assert len(c.samples) == 60
    assert len({s.id for s in c.samples}) == 60
    for key, outcome, tag in product(("c", "q"), OUTCOMES, "abcd"):
        if c.sample_counts.get((key, outcome, tag)):
            assert any(s.slice == tag and s.outcome(key) == outcome for s in c.samples)
    # the largest change of q in each slice is on the page
    qx, qy = scores["q"]
    for tag in "abcd":
        kept = [abs(s.scores["q"][1] - s.scores["q"][0]) for s in c.samples if s.slice == tag]
        assert max(kept) == pytest.approx(np.abs(qy - qx).max())
    by_id = {r.id: r for r in b.records}
    for s in c.samples:
        assert s.completion_b == by_id[s.id].completion()
        assert s.metadata == {"topic": s.slice}


def test_the_cap_on_pairs_and_on_text_hold(tmp_path):
    a, b, _, _ = _runs(tmp_path)
    assert compare_runs(a, b, shown=0, n_resamples=100).samples == ()
    assert len(compare_runs(a, b, shown=5, n_resamples=100).samples) == 5
    with pytest.raises(InvalidInputError, match="shown=-1"):
        compare_runs(a, b, shown=-1)
    pairs = list(zip(a.records, b.records, strict=True))
    kept, _ = shown_pairs(pairs, {"c": (a.scores("c"), b.scores("c"))}, None, max_characters=100)
    sizes = [len(s.prompt) + len(s.completion_a) + len(s.completion_b) for s in kept]
    assert 1 <= len(kept) < 10
    assert sum(sizes) <= 100


def test_the_page_says_how_many_pairs_were_left_out(tmp_path):
    a, b, _, _ = _runs(tmp_path)
    page = render_comparison(compare_runs(a, b, by="topic", shown=20, n_resamples=100))
    assert "20 of 600 pairs are on this page" in page
    assert "580 pairs were left out" in page
    assert page.count('<article class="pair"') == 20


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The answer is 4 because 2 + 2 = 4.", "The answer is 5 because 2 + 3 = 5."),
        ("one two three four five six", "one two three five six seven"),
        ("<b>x</b> & y", "<b>x</b> & z"),
    ],
)
def test_the_word_diff_keeps_both_texts_whole_and_marks_what_difflib_finds(a, b):
    shown = side_by_side(a, b)
    assert shown.diffed
    assert html.unescape(re.sub(r"</?(del|ins)>", "", shown.a)) == a
    assert html.unescape(re.sub(r"</?(del|ins)>", "", shown.b)) == b
    words_a, words_b = re.findall(r"\w+|[^\w\s]+|\s+", a), re.findall(r"\w+|[^\w\s]+|\s+", b)
    matcher = difflib.SequenceMatcher(None, words_a, words_b, autojunk=False)
    removed = ["".join(words_a[i1:i2]) for t, i1, i2, _, _ in matcher.get_opcodes() if t != "equal"]
    added = ["".join(words_b[j1:j2]) for t, _, _, j1, j2 in matcher.get_opcodes() if t != "equal"]
    assert [html.unescape(m) for m in re.findall(r"<del>(.*?)</del>", shown.a)] == [
        r for r in removed if r
    ]
    assert [html.unescape(m) for m in re.findall(r"<ins>(.*?)</ins>", shown.b)] == [
        r for r in added if r
    ]
    assert shown.similarity == pytest.approx(matcher.ratio())


def test_unlike_completions_are_shown_whole_without_marks_and_escaped():
    shown = side_by_side("<script>alert(1)</script>", "something else entirely here")
    assert not shown.diffed
    assert shown.a == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert "<del>" not in shown.a
    assert "<ins>" not in shown.b


@pytest.mark.parametrize(
    ("low", "high", "marks"),
    [
        (-0.3, 0.3, [-0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3]),
        (-2.1, 18.4, [0.0, 5.0, 10.0, 15.0]),
        (0.0, 1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
    ],
)
def test_ticks_are_round_and_inside_the_range(low, high, marks):
    assert ticks(low, high) == pytest.approx(marks)


def test_the_json_form_holds_the_kept_pairs_and_every_count(tmp_path):
    a, b, _, _ = _runs(tmp_path, n=120)
    c = compare_runs(a, b, by="topic", shown=10, n_resamples=100)
    data = json.loads(json.dumps(c.to_dict()))
    assert [s["id"] for s in data["samples"]] == [s.id for s in c.samples]
    first = data["samples"][0]
    assert first["completion_b"] == c.samples[0].completion_b
    assert first["scores"] == {k: list(v) for k, v in c.samples[0].scores.items()}
    counts = {(r["grader"], r["outcome"], r["slice"]): r["count"] for r in data["sample_counts"]}
    assert counts == dict(c.sample_counts)


def test_a_repr_leaves_out_the_texts(tmp_path):
    long = "x" * 5000
    a = make_run(tmp_path / "a", {"c": [0.0, 1.0, 0.0]})
    b = make_run(tmp_path / "b", {"c": [1.0, 0.0, 1.0]}, completions=[long] * 3)
    c = compare_runs(a, b, n_resamples=100)
    assert c.graders[0].most_changed
    assert c.samples
    for shown in (repr(c.graders[0]), repr(c.samples[0])):
        assert long not in shown
        assert len(shown) < 2000
