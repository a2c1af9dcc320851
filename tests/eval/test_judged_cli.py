"""``compare --judge`` and ``--labels-a/-b``, ``eval --labels``: judged win rates and PPI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gradewire.cli import main
from gradewire.stats._text import format_number
from support.eval_helpers import make_run
from support.judge_scripts import last_user, sections
from support.ppi_reference import ppi_interval

A = ["Paris", "Lyon", "Paris", "Nice", "Lyon", "Paris", "Nice", "Lyon"]
B = ["Paris!", "Paris", "Lyon", "Paris", "Nice", "Paris is it", "Paris.", "Paris"]


def prefers_paris(request):
    first, second = sections(last_user(request), "answer")
    a, b = "Paris" in first, "Paris" in second
    return json.dumps({"reasoning": "names Paris", "verdict": "TIE" if a == b else "AB"[b]})


def judge_file(tmp_path, url, swap="true"):
    path = tmp_path / "judge.toml"
    path.write_text(
        f'[[graders]]\ntype = "pairwise_judge"\nkey = "preferred"\nmodel = "judge"\n'
        f'base_url = "{url}"\ncriteria = "Names the capital"\nswap = {swap}\n'
    )
    return path


def runs(tmp_path):
    a = make_run(tmp_path / "a", {"g": [float("Paris" in c) for c in A]}, completions=A)
    b = make_run(tmp_path / "b", {"g": [float("Paris" in c) for c in B]}, completions=B)
    return a, b


def test_compare_with_a_pairwise_judge_in_every_output(tmp_path, judge_server, capsys):
    judge_server.handler = prefers_paris
    runs(tmp_path)
    judge = judge_file(tmp_path, judge_server.base_url)
    html = tmp_path / "compare.html"
    argv = ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--judge", str(judge)]
    assert main([*argv, "--json", "--html", str(html), "--resamples", "300"]) == 0
    [judged] = json.loads(capsys.readouterr().out)["judged"]
    # B names Paris where A does not on 4 pairs, the reverse on 1, both or neither on 3.
    assert (judged["wins"], judged["ties"], judged["losses"]) == (4, 3, 1)
    assert judged["win_rate"] == pytest.approx((4 + 1.5) / 8)
    assert judged["ci_low"] < judged["win_rate"] < judged["ci_high"]
    assert judged["position_consistency"] == 1.0
    assert len(judge_server.chat_requests) == 16  # swap: both orders of every pair
    assert 'id="gw-judged"' in html.read_text()
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "B wins 4, ties 3, loses 1 of 8 judged pairs" in text
    assert "position consistency 1.000" in text


def test_compare_judge_file_without_a_pairwise_judge_is_refused(tmp_path, capsys):
    runs(tmp_path)
    other = tmp_path / "g.toml"
    other.write_text(
        '[[graders]]\ntype = "custom"\nkey = "g"\nfunction = "support.eval_graders:brevity"\n'
    )
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--judge", str(other)]) == 2
    assert "no pairwise judge" in capsys.readouterr().err


def test_compare_with_labels_of_both_runs_gives_paired_ppi(tmp_path, capsys):
    rng = np.random.default_rng(2)
    n = 60
    f_a = (rng.random(n) < 0.5).astype(float)
    f_b = (rng.random(n) < 0.7).astype(float)
    y_a = np.where(rng.random(n) < 0.85, f_a, 1 - f_a)
    y_b = np.where(rng.random(n) < 0.85, f_b, 1 - f_b)
    make_run(tmp_path / "a", {"g": list(f_a)})
    make_run(tmp_path / "b", {"g": list(f_b)})
    labelled = np.arange(20)
    for name, y in (("a", y_a), ("b", y_b)):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(json.dumps({"id": f"s{i}", "label": float(y[i])}) + "\n" for i in labelled)
        )
    argv = ["compare", str(tmp_path / "a"), str(tmp_path / "b")]
    labels = ["--labels-a", str(tmp_path / "a.jsonl"), "--labels-b", str(tmp_path / "b.jsonl")]
    assert main([*argv, *labels, "--json"]) == 0
    paired = json.loads(capsys.readouterr().out)["paired_ppi"]
    d_y, d_f = y_b - y_a, f_b - f_a
    low, high = ppi_interval(d_y[labelled], d_f[labelled], d_f[20:], alpha=0.05)
    assert paired["ci"] == pytest.approx([low, high], abs=1e-9)
    assert paired["interval_form"] == "Student t, 19 df"
    assert paired["n_labels"] == 20
    assert paired["grader"] == "g"
    assert main([*argv, *labels]) == 0
    assert "20 human labels on 60 judged samples move" in capsys.readouterr().out
    assert main([*argv, *labels[:2]]) == 2
    assert "--labels-a and --labels-b" in capsys.readouterr().err


def test_eval_with_labels_prints_ppi_beside_the_judge_only_interval(tmp_path, capsys):
    n = 40
    rows = [{"id": f"r{i}", "prompt": f"q{i}", "completion": "x" * (1 + i % 4)} for i in range(n)]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    graders = tmp_path / "g.toml"
    graders.write_text(
        '[[graders]]\ntype = "custom"\nkey = "brevity"\nfunction = "support.eval_graders:brevity"\n'
    )
    f = np.array([min(1.0, 3 / (1 + i % 4)) for i in range(n)])
    y = np.clip(f - 0.2 + 0.1 * (np.arange(n) % 3), 0, 1)
    labelled = np.arange(0, n, 2)
    labels = tmp_path / "labels.csv"
    labels.write_text("id,label\n" + "".join(f"r{i},{y[i]}\n" for i in labelled))
    out = tmp_path / "run"
    argv = ["eval", str(data), "--graders", str(graders), "--out", str(out), "--no-progress"]
    assert main([*argv, "--labels", str(labels)]) == 0
    text = capsys.readouterr().out
    unlabelled = np.setdiff1d(np.arange(n), labelled)
    low, high = ppi_interval(y[labelled], f[labelled], f[unlabelled], alpha=0.05)
    assert "brevity, corrected by 20 human labels:" in text
    shown = f"[{format_number(low)}, {format_number(high)}]"
    assert shown in text.split("judge only")[0]  # the PPI row, before the judge-only one
    assert "judge only" in text
    bad = tmp_path / "bad.csv"
    bad.write_text("id,label\nnot-a-sample,1\nr1,0\n")
    assert main([*argv, "--labels", str(bad)]) == 2
    assert "have no score of 'brevity'" in capsys.readouterr().err
    assert main([*argv, "--labels-grader", "brevity"]) == 2
