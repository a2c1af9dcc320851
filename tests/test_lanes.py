"""The suite's lanes: which tests belong to one, and that each lane stays on one worker."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from support.lanes import ROOT, lane_of
from support.quick_lane import SLOW_SECONDS


def test_a_test_belongs_to_the_lane_of_its_folder() -> None:
    assert lane_of("integrations/ray/tests/test_multinode.py::test_a[x]") == "ray"
    assert lane_of("tests/judges/real_model/test_real_model_panel.py::test_p") == "real_model"
    assert lane_of("tests/test_packaging.py::test_wheel") == "packaging"
    assert lane_of("tests/judges/test_judge.py::test_j") is None
    assert lane_of("integrations/wandb/tests/test_wandb_sink.py::test_w") is None


def test_a_readme_block_belongs_to_the_lane_its_code_uses() -> None:
    lanes = set()
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        lines = page.read_text(encoding="utf-8").splitlines()
        opening = [i + 1 for i, line in enumerate(lines) if line.startswith("```python")]
        where = page.relative_to(ROOT).as_posix()
        lanes |= {lane_of(f"{where}::[CodeFence#0][line:{line}]") for line in opening}
    # the README and the docs have blocks for Ray, MLflow and TRL, and blocks that need none
    assert {"ray", "mlflow_server", "training", None} <= lanes


def test_each_lane_runs_on_one_worker(tmp_path: Path) -> None:
    for folder in ("tests/judges/real_model", "integrations/ray/tests", "tests/plain"):
        where = tmp_path / folder
        where.mkdir(parents=True)
        for i in range(6):
            (where / f"test_{where.parent.name}_{i}.py").write_text(
                "def test_one():\n    pass\n\ndef test_two():\n    pass\n"
            )
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["support.lanes"]\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "-n",
            "3",
            "--dist",
            "loadgroup",
            "-v",
            "-p",
            "no:randomly",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, nodeid in re.findall(r"\[(gw\d+)\] \[\s*\d+%\] PASSED (\S+)", done.stdout):
        workers[nodeid.split("/test_")[0]].add(worker)
    assert sum(1 for _ in re.finditer("PASSED", done.stdout)) == 36
    assert len(workers["tests/judges/real_model"]) == 1
    assert len(workers["integrations/ray/tests"]) == 1


def test_the_quick_lane_leaves_out_what_was_timed_slow_without_importing_it(
    tmp_path: Path,
) -> None:
    # A lane's folder and a module timed slow in all fail to import: --quick must not
    # import them. A module with one slow test keeps its other tests.
    broken = "raise ImportError('imported')\n\ndef test_x():\n    pass\n"
    files = {
        "integrations/ray/tests/test_r.py": broken,
        "tests/test_heavy.py": broken,
        "tests/test_mixed.py": "def test_slow():\n    pass\n\ndef test_quick():\n    pass\n",
        "tests/test_plain.py": "import pytest\n\ndef test_a():\n    pass\n\n"
        "@pytest.mark.slow\ndef test_marked():\n    pass\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "tests" / "slow_tests.json").write_text(
        json.dumps(
            {
                "seconds": {
                    "tests/test_heavy.py::test_x": 2.0,
                    "tests/test_heavy.py::test_y": 3.5,
                    "tests/test_mixed.py::test_slow": 0.8,
                    "tests/test_mixed.py::test_quick": 0.1,
                },
                "tests": {},
            }
        )
    )
    (tmp_path / "conftest.py").write_text(
        'pytest_plugins = ["support.lanes", "support.quick_lane"]\n'
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}

    def run(*options: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", *options]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)

    quick = run("--quick")
    assert quick.returncode == 0, quick.stdout + quick.stderr
    ran = set(re.findall(r"^(\S+::\S+) PASSED", quick.stdout, re.MULTILINE))
    assert ran == {"tests/test_mixed.py::test_quick", "tests/test_plain.py::test_a"}
    everything = run()  # without --quick the broken modules are collected, and fail to
    assert everything.returncode != 0
    assert "test_heavy.py" in everything.stdout


def test_the_recorded_timing_is_what_the_quick_lane_reads(tmp_path: Path) -> None:
    (tmp_path / "test_t.py").write_text(
        "import time\n\ndef test_slow():\n    time.sleep(0.35)\n\ndef test_quick():\n    pass\n"
    )
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["support.quick_lane"]\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    timing = tmp_path / "timing.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--record-slow", str(timing)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    recorded = json.loads(timing.read_text())
    assert recorded["tests"] == {"test_t.py": 2}
    assert recorded["seconds"]["test_t.py::test_slow"] >= SLOW_SECONDS
    assert recorded["seconds"].get("test_t.py::test_quick", 0.0) < SLOW_SECONDS
