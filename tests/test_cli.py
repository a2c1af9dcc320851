import json
import subprocess
import sys

from gradewire._cli import main
from gradewire._demo import build_demo_grader, load_demo_samples


def test_demo_writes_logs_and_escaped_tables(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "score/mean" in printed
    assert "correct/score/abstained_count" in printed
    logs = json.loads((tmp_path / "logs.json").read_text())
    assert logs["score/count"] == len(load_demo_samples())
    assert logs["correct/score/abstained_count"] == 1
    assert 0.0 <= logs["score/mean"] <= 1.0
    page = (tmp_path / "score__scored_samples.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>" not in page


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
