"""The one distribution: built from the sdist, installed into fresh venvs with and without extras.

`python -m build` builds the sdist and then the wheel *from the sdist*, so a source file left
out of the sdist fails here. Each venv starts empty (no system site-packages) and gets the
wheel from the local build folder, the rest from the package index as a user would.
"""

from __future__ import annotations

import email
import subprocess
import sys
import tarfile
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
ADAPTERS = ("gradewire_wandb", "gradewire_mlflow", "gradewire_ray")


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("gradewire-*.whl")
    return wheel


def _fresh_venv(where: Path, requirement: str) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    python = where / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", requirement],
        check=True,
        capture_output=True,
        text=True,
    )
    return python


def _run(python: Path, code: str, cwd: Path) -> str:
    done = subprocess.run(
        [str(python), "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "WANDB_MODE": "offline"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_wheel_holds_the_core_and_every_adapter(dist: Path) -> None:
    with zipfile.ZipFile(_wheel(dist)) as wheel:
        names = set(wheel.namelist())
        (meta_name,) = (n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(wheel.read(meta_name))
    for package in ("gradewire", *ADAPTERS):
        assert f"{package}/__init__.py" in names
        assert f"{package}/py.typed" in names
    assert "gradewire/cli/_data/demo_samples.jsonl" in names
    assert not any(n.startswith(("tests/", "integrations/")) for n in names)
    extras = set(meta.get_all("Provides-Extra") or [])
    assert {"wandb", "mlflow", "serve", "pandas", "ray"} <= extras
    requires = [Requirement(r) for r in meta.get_all("Requires-Dist") or []]

    def needs(extra: str | None) -> set[str]:
        env = {"extra": extra or "", "python_version": "3.11"}
        return {r.name for r in requires if r.marker is None or r.marker.evaluate(env)}

    # The core itself needs only these (typing-extensions comes with pydantic anyway); each
    # extra adds its outside system.
    assert needs(None) == {"httpx", "numpy", "pydantic", "typing-extensions"}
    assert needs("wandb") - needs(None) == {"wandb"}
    assert needs("mlflow") - needs(None) == {"mlflow-skinny", "sqlalchemy", "alembic"}
    assert needs("serve") - needs(None) == {"aiohttp"}
    assert needs("ray") - needs(None) == {"ray"}


def test_the_sdist_holds_the_sources_and_tests(dist: Path) -> None:
    (sdist,) = dist.glob("gradewire-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for path in (
        "src/gradewire/__init__.py",
        "integrations/wandb/src/gradewire_wandb/__init__.py",
        "integrations/mlflow/src/gradewire_mlflow/__init__.py",
        "integrations/mlflow/tests/conftest.py",
        "tests/conftest.py",
        "pyproject.toml",
        "README.md",
    ):
        assert path in names, path


def test_without_extras_every_adapter_imports_and_names_its_extra(
    dist: Path, tmp_path: Path
) -> None:
    python = _fresh_venv(tmp_path / "venv", str(_wheel(dist)))
    out = _run(
        python,
        """
        import sys
        import gradewire as gw
        from gradewire_mlflow import MlflowSink
        from gradewire_ray import grade_dataset, verl_compute_score
        from gradewire_wandb import WandbSink

        for make in (WandbSink, MlflowSink):
            try:
                make()
            except gw.MissingDependencyError as exc:
                print(exc)
        grader = gw.BaseGrader.from_function("one", lambda s: 1.0)
        try:
            gw.server.create_app([grader])
        except gw.MissingDependencyError as exc:
            print(exc)
        for build in (lambda: grade_dataset(None, [grader]), lambda: verl_compute_score(grader)):
            try:
                build()
            except gw.MissingDependencyError as exc:
                print(exc)
        heavy = {"wandb", "mlflow", "aiohttp", "pandas", "torch", "ray"}
        print("imported:", sorted(heavy & {m.split(".")[0] for m in sys.modules}))
        """,
        tmp_path,
    )
    assert "pip install 'gradewire[wandb]'" in out
    assert "pip install 'gradewire[mlflow]'" in out
    assert "pip install 'gradewire[serve]'" in out
    assert out.count("pip install 'gradewire[ray]'") == 2
    assert "imported: []" in out
    # The demo runs on the core alone and says what an extra would add.
    demo = subprocess.run(
        [str(python.parent / "gradewire"), "demo", "--out", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert demo.returncode == 0, demo.stderr
    assert "pip install 'gradewire[mlflow]'" in demo.stdout


def test_with_extras_every_adapter_logs(dist: Path, tmp_path: Path) -> None:
    python = _fresh_venv(tmp_path / "venv", f"{_wheel(dist)}[wandb,mlflow,serve]")
    out = _run(
        python,
        """
        import pathlib
        import gradewire as gw
        from gradewire_mlflow import MlflowSink
        from gradewire_wandb import WandbSink

        here = pathlib.Path.cwd()
        logs = {"reward/score/mean": 0.5}
        wandb_sink = WandbSink(project="p", dir=str(here))
        wandb_sink.log(logs, 1)
        wandb_sink.close()
        mlflow_sink = MlflowSink(tracking_uri=f"sqlite:///{here / 'mlflow.db'}")
        mlflow_sink.log(logs, 1)
        mlflow_sink.close()
        from mlflow import MlflowClient
        client = MlflowClient(tracking_uri=f"sqlite:///{here / 'mlflow.db'}")
        points = client.get_metric_history(mlflow_sink.run_id, "reward/score/mean")
        print("mlflow:", [(p.step, p.value) for p in points])
        grader = gw.BaseGrader.from_function("one", lambda s: 1.0)
        print("app:", type(gw.server.create_app([grader])).__name__)
        """,
        tmp_path,
    )
    assert "mlflow: [(1, 0.5)]" in out
    assert "app: Application" in out
    assert list(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))
