"""The demo's MLflow sink, and the `mlflow ui` command it prints."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from gradewire_mlflow._demo import demo_sink


def test_the_printed_mlflow_ui_command_runs_with_no_venv_active(tmp_path: Path) -> None:
    out = tmp_path / "out dir"  # a space, so the command must be quoted
    out.mkdir()
    sink, lines = demo_sink(out)
    sink.close()
    [line] = [text for text in lines if "open it with:" in text]
    command = shlex.split(line.split("open it with:", 1)[1])
    program = Path(command[0])
    assert program.is_absolute(), command
    assert program.is_file(), command
    ui = command.index("ui")
    assert command[ui + 1 :] == [
        "--backend-store-uri",
        f"sqlite:///{(tmp_path / 'out dir').resolve() / 'mlflow.db'}",
    ]
    # As from a shell with no venv active: only the system's PATH.
    done = subprocess.run(
        [*command[:ui], "--version"],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "version" in done.stdout.lower()
