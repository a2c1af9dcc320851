"""The result file of a benchmark run: its figures and the machine they came from.

A bench script builds its `Figure`s from what it measured and calls `record(...)` at the
end: ``bench/results/<bench>.json`` (another folder with ``GRADEWIRE_BENCH_RESULTS``) is
written with the figures, the command line, and the machine: CPU model, cores, memory,
Python, the load average when the script started and when it ended, the time and the git
commit. ``bench/report.py`` makes ``docs/performance.md`` of these files, so every figure
of that page comes from a run, with its machine beside it; nothing on it is typed by hand.

Each figure keeps gradewire's value and the alternatives measured in the same run (their
ratio is the claim; absolute times drift with the machine and its load).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(os.environ.get("GRADEWIRE_BENCH_RESULTS", ROOT / "bench" / "results"))
# The load when the script started: bench scripts import this module first thing.
_LOAD_AT_START = os.getloadavg() if hasattr(os, "getloadavg") else None


@dataclass(frozen=True)
class Alternative:
    """What the same measure gave for something else, in the same run."""

    name: str
    value: float


@dataclass(frozen=True)
class Figure:
    """One measure: gradewire's value, its unit, and the alternatives beside it.

    ``better`` says which way is good, so the report can say which side a ratio favours.
    """

    measure: str
    value: float
    unit: str
    better: Literal["lower", "higher"] = "lower"
    alternatives: list[Alternative] = field(default_factory=list)
    note: str = ""


def machine() -> dict[str, Any]:
    """What the figures ran on."""
    cpu = platform.processor() or platform.machine()
    memory = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_bytes": memory,
        "system": platform.platform(),
        "python": platform.python_version(),
        "load_at_start": list(_LOAD_AT_START) if _LOAD_AT_START else None,
        "load_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def _commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def record(
    bench: str, figures: list[Figure], *, title: str, notes: list[str] | None = None
) -> Path:
    """Write ``<bench>.json`` to the results folder and say where.

    Args:
        bench: The script's name without ``.py`` (the file's name).
        figures: What the run measured.
        title: One line: what the bench measures, for the report's heading.
        notes: What a reader of the figures must know about this run (a column left out,
            and why).

    Returns:
        The path written.
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = {
        "bench": bench,
        "title": title,
        "command": " ".join(["python", f"bench/{bench}.py", *sys.argv[1:]]),
        "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": machine(),
        "figures": [asdict(figure) for figure in figures],
        "notes": list(notes or []),
    }
    path = RESULTS / f"{bench}.json"
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"result file: {path}")
    return path
