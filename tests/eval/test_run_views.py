"""EvalRun and Comparison in a notebook: summaries of a few kB, every name escaped."""

from __future__ import annotations

import re

from gradewire.eval import compare_runs
from support.eval_helpers import make_run

PAYLOAD = '<script>alert(1)</script><img src=x onerror="alert(2)">'
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def _pair(tmp_path, n=200, key="correct"):
    scores_a = {key: [float(i % 3 == 0) for i in range(n)], "quality": [i / n for i in range(n)]}
    scores_b = {key: [float(i % 2 == 0) for i in range(n)], "quality": [i / n for i in range(n)]}
    topics = [PAYLOAD if i % 4 == 0 else f"t{i % 4}" for i in range(n)]
    completions = [PAYLOAD * 50 if i == 7 else f"answer {i}" for i in range(n)]
    a = make_run(tmp_path / "a", scores_a, topics=topics, completions=completions)
    b = make_run(tmp_path / "b", scores_b, topics=topics, completions=completions)
    return a, b


def test_an_eval_run_repr_is_one_line_and_its_view_a_summary_with_histograms(tmp_path):
    a, _ = _pair(tmp_path, n=2_000)
    assert (
        repr(a) == "EvalRun(name='a', samples=2000, graders=['correct', 'quality'], complete=True)"
    )
    view = a._repr_html_()
    assert len(view.encode()) < 12_000  # 2,000 samples, one with a 5 kB completion
    assert view.count('<svg class="hist"') == 2
    # correct: 0/1 scores, one bar each, heights 1,333 : 667
    bars = re.findall(r"<title>([^<]*): (\d+)</title>", view.split('<svg class="hist"')[1])
    assert bars == [("0", "1333"), ("1", "667")]
    assert "2,000 samples, 2 graders (complete)" in view
    summary = a.summaries()[0]
    assert f"95%: {summary.ci_low:.4g} to {summary.ci_high:.4g}" in view


def test_grader_names_are_escaped_in_every_view(tmp_path):
    a, b = _pair(tmp_path, n=40, key=PAYLOAD)
    for text in (a._repr_html_(), compare_runs(a, b)._repr_html_()):
        assert "<script" not in text
        assert "<img" not in text
        assert ESCAPED in text
    assert len(repr(compare_runs(a, b))) < 400


def test_a_comparison_shows_its_verdicts_and_a_forest_plot(tmp_path):
    a, b = _pair(tmp_path)
    comparison = compare_runs(a, b, by="topic")
    view = comparison._repr_html_()
    assert len(view.encode()) < 8_000
    assert len(repr(comparison)) < 300  # the dataclass repr held every changed completion
    assert repr(comparison).startswith("Comparison('a' vs 'b'; B - A correct: +")
    for g in comparison.graders:
        assert g.verdict.split(" (")[0].replace("−", "−") in view.replace("&#x27;", "'")
    assert view.count('class="ci"') == 2  # one interval per grader in the forest plot
    assert "<script" not in view


def test_to_pandas_has_metadata_and_reasoning_columns_to_group_by(tmp_path):
    a, _ = _pair(tmp_path, n=12)
    frame = a.to_pandas()
    assert list(frame.columns) == [
        "id",
        "prompt",
        "completion",
        "metadata.topic",
        "correct",
        "correct/status",
        "correct/reasoning",
        "correct/message",
        "quality",
        "quality/status",
        "quality/reasoning",
        "quality/message",
    ]
    assert frame["correct/reasoning"].tolist() == [f"why {i}" for i in range(12)]
    means = frame.groupby("metadata.topic")["correct"].mean().to_dict()
    truth: dict[str, list[float]] = {}
    for i in range(12):
        truth.setdefault(PAYLOAD if i % 4 == 0 else f"t{i % 4}", []).append(float(i % 3 == 0))
    assert means == {topic: sum(v) / len(v) for topic, v in truth.items()}


def test_text_reprs_show_control_characters_as_escapes(tmp_path):
    a, b = _pair(tmp_path, n=20, key="bad\x1b[2Jkey")
    for text in (repr(a), repr(compare_runs(a, b))):
        assert "\x1b" not in text
        assert "\\x1b" in text


def test_to_pandas_flattens_nested_metadata(tmp_path):
    import json

    from gradewire.eval import load_run

    _a, _ = _pair(tmp_path, n=3)
    results = tmp_path / "a" / "results.jsonl"
    lines = results.read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    for row in rows:
        if "input" in row:
            row["input"]["metadata"] = {"source": {"name": "gsm8k", "split": "test"}}
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    frame = load_run(tmp_path / "a").to_pandas()
    assert {"metadata.source.name", "metadata.source.split"} <= set(frame.columns)
