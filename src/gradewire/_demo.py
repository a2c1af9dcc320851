"""The demo job: grade a bundled sample set and write what a tracker would receive."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from pydantic import BaseModel

from gradewire._combined_grader import CombinedGrader
from gradewire._errors import OutputParserException
from gradewire._grader import BaseGrader, LogValue
from gradewire._numeric import numeric_match
from gradewire._structured import pydantic_parse
from gradewire._table import Table
from gradewire._thread import StringThread

__all__ = ["build_demo_grader", "load_demo_samples", "run_demo", "write_report"]


class _Answer(BaseModel):
    reasoning: str
    answer: float


def load_demo_samples() -> list[StringThread]:
    """The bundled arithmetic questions with model answers (some wrong, some malformed)."""
    text = resources.files("gradewire").joinpath("_data/demo_samples.jsonl").read_text("utf-8")
    return [
        StringThread.from_messages(row["messages"], row["metadata"])
        for row in map(json.loads, text.splitlines())
    ]


def _correct(sample: StringThread) -> float | None:
    if "answer" not in sample.metadata:
        return None  # nothing to check against: abstain rather than score 0
    return numeric_match(sample.completion() or "", sample.metadata["answer"], which="last")


def _well_formed(sample: StringThread) -> float:
    try:
        pydantic_parse(sample.completion() or "", _Answer)
    except OutputParserException:
        return 0.0
    return 1.0


def build_demo_grader() -> CombinedGrader:
    """The demo reward: 80% a correct final number, 20% a well-formed JSON answer."""
    return CombinedGrader(
        "reward",
        [
            BaseGrader.from_function("correct", _correct, sample_tables=True),
            BaseGrader.from_function("format", _well_formed),
        ],
        weights=[0.8, 0.2],
        sample_tables=True,
    )


def write_report(logs: Mapping[str, LogValue], out: Path) -> list[Path]:
    """Write the numbers to ``logs.json`` and each table to an HTML page; return the paths."""
    out.mkdir(parents=True, exist_ok=True)
    numbers = {key: value for key, value in logs.items() if not isinstance(value, Table)}
    written = [out / "logs.json"]
    written[0].write_text(json.dumps(numbers, indent=2) + "\n", encoding="utf-8")
    for key, value in logs.items():
        if isinstance(value, Table):
            page = out / (key.replace("/", "__") + ".html")
            page.write_text(
                "<!doctype html>\n<meta charset='utf-8'>\n"
                f"<title>gradewire: {html.escape(key)}</title>\n{value.to_html()}\n",
                encoding="utf-8",
            )
            written.append(page)
    return written


async def run_demo() -> dict[str, LogValue]:
    """Grade the bundled samples with the demo reward and return its logs."""
    grader = build_demo_grader()
    await grader.grade_many(load_demo_samples())
    return grader.get_logs(clear=True)
