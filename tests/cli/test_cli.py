import json
import logging
import re
import subprocess
import sys

import pytest

from gradewire import StringThread
from gradewire.cli._demo import build_demo_grader, load_demo_samples, run_demo
from gradewire.cli._main import main
from gradewire.sinks import read_jsonl


def test_demo_logs_every_step_and_writes_escaped_tables(tmp_path, capsys, caplog):
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        assert main(["demo", "--out", str(tmp_path)]) == 0
    assert not caplog.records, "a demo sink failed: " + caplog.text
    printed = capsys.readouterr().out
    assert "score/mean" in printed
    assert "correct/score/abstained_count" in printed
    samples = load_demo_samples()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["score/count"] == len(samples)
    assert summary["correct/score/abstained_count"] == 1
    assert 0.0 <= summary["score/mean"] <= 1.0
    run = read_jsonl(tmp_path / "logs.jsonl")
    assert [step for step, _ in run.steps] == [0, 1, 2, 3]
    assert sum(logs["score/count"] for _, logs in run.steps) == len(samples)
    page = (tmp_path / "score__scored_samples.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>" not in page


async def test_demo_totals_equal_one_pass_over_all_samples(tmp_path):
    result = await run_demo(tmp_path)
    grader = build_demo_grader()
    await grader.grade_many(load_demo_samples())
    single = grader.log_state().to_logs()
    assert result.summary.keys() == single.keys()
    for key, value in single.items():
        assert abs(result.summary[key] - value) < 1e-12, key


async def test_demo_grader_scores_the_bundled_samples():
    grader = build_demo_grader()
    grades = await grader.grade_many(load_demo_samples())
    assert all(grade is not None for grade in grades)
    by_question = {
        s.last_user_content(): g for s, g in zip(load_demo_samples(), grades, strict=True)
    }
    assert by_question["What is 7 times 8?"].value == 0.0  # says 54, not JSON
    assert by_question["What is 2 to the power of 10?"].value == 1.0  # truncated JSON, repaired


def test_module_entry_point_and_version():
    out = subprocess.run(
        [sys.executable, "-m", "gradewire", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "0.1.0"
    assert main([]) == 2


async def test_demo_writes_samples_holding_half_an_emoji(tmp_path):
    """Model text is not always valid UTF-8: a lone surrogate is written, not a crash."""
    cut = StringThread(
        [
            ("user", "What is 2 + 2? \ud83d"),
            ("assistant", 'It is 4 \ude00 {"reasoning": "\ud83d", "answer": 4}'),
        ],
        metadata={"answer": 4},
    )
    result = await run_demo(tmp_path, [cut, *load_demo_samples()[:3]])
    assert result.summary["score/count"] == 4
    page = (tmp_path / "score__scored_samples.html").read_text(encoding="utf-8")
    assert "What is 2 + 2? &#55357;" in page  # shown as U+FFFD by a browser
    run = read_jsonl(tmp_path / "logs.jsonl")
    assert run.steps[0][1]["score/count"] == 4


def test_demo_help_names_the_files_the_demo_writes(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    shown = capsys.readouterr().out
    named = set(re.findall(r"\b[\w-]+\.jsonl?\b", shown))
    assert "logs.jsonl" in named
    assert main(["demo", "--out", str(tmp_path)]) == 0
    for name in named:
        assert (tmp_path / name).is_file(), f"demo --help names {name}, which it never writes"
