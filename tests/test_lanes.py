"""The suite's lanes: which tests belong to one, and that each lane stays on one worker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from support.lanes import ROOT, lane_of


def test_a_test_belongs_to_the_lane_of_its_folder() -> None:
    assert lane_of("integrations/ray/tests/test_multinode.py::test_a[x]") == "ray"
    assert lane_of("tests/judges/real_model/test_real_model_panel.py::test_p") == "real_model"
    assert lane_of("tests/test_packaging.py::test_wheel") == "packaging"
    assert lane_of("tests/judges/test_judge.py::test_j") is None
    assert lane_of("integrations/wandb/tests/test_wandb_sink.py::test_w") is None


def test_a_readme_block_belongs_to_the_lane_its_code_uses() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    opening = [i + 1 for i, line in enumerate(lines) if line.startswith("```python")]
    lanes = {lane_of(f"README.md::[CodeFence#0][line:{line}]") for line in opening}
    # the README has blocks for Ray, MLflow and TRL, and blocks that need none of them
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
