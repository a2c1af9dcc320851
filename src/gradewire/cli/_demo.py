"""The demo job: grade a bundled sample set step by step and log it like a training run."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from pydantic import BaseModel

from gradewire.core._combined_grader import CombinedGrader
from gradewire.core._errors import MissingDependencyError, OutputParserException
from gradewire.core._grader import BaseGrader, LogValue
from gradewire.core._integrations import integrations
from gradewire.core._log_state import LogState
from gradewire.core._table import Table
from gradewire.core._thread import StringThread
from gradewire.helpers._numeric import numeric_match
from gradewire.helpers._structured import pydantic_parse
from gradewire.sinks._fanout_sink import FanOutSink
from gradewire.sinks._jsonl_sink import JsonlSink
from gradewire.sinks._sink import Sink

__all__ = ["DemoResult", "build_demo_grader", "load_demo_samples", "run_demo"]

BATCH_SIZE = 4


class _Answer(BaseModel):
    reasoning: str
    answer: float


def load_demo_samples() -> list[StringThread]:
    """The bundled arithmetic questions with model answers (some wrong, some malformed)."""
    text = resources.files("gradewire.cli").joinpath("_data/demo_samples.jsonl").read_text("utf-8")
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


@dataclass
class DemoResult:
    """What the demo produced: totals over every step, and the files and notes it wrote."""

    summary: dict[str, float]
    steps: int
    written: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _plugin_sinks(out: Path) -> tuple[list[Sink], list[str]]:
    sinks: list[Sink] = []
    notes: list[str] = []
    # Integrations offer a demo_sink: a callable taking the output directory and returning
    # (sink, lines to print). The core never imports an integration by name.
    for name, entry in integrations("demo_sink").items():
        try:
            make: Callable[[Path], tuple[Sink, list[str]]] = entry.load()
            sink, lines = make(out)
        except MissingDependencyError as exc:
            # The adapter ships with gradewire; its outside system comes with an extra.
            notes.append(f"not logged to {name}: {exc}")
            continue
        sinks.append(sink)
        notes.extend(lines)
    return sinks, notes


def _write_tables(tables: dict[str, list[tuple[int, Table]]], out: Path) -> list[Path]:
    """One HTML page per table key, every step's rows under a Step column."""
    pages = []
    for key, per_step in tables.items():
        merged = Table(initial_headers=["Step", *per_step[0][1].headers])
        for step, table in per_step:
            for row in table.rows:
                merged.add_row([step, *row])
        page = out / (key.replace("/", "__") + ".html")
        page.write_text(
            "<!doctype html>\n<meta charset='utf-8'>\n"
            f"<title>gradewire: {html.escape(key)}</title>\n{merged.to_html()}\n",
            encoding="utf-8",
            # Half an emoji from a model (a lone surrogate) is no UTF-8: it is written as a
            # character reference, which a browser shows as U+FFFD.
            errors="xmlcharrefreplace",
        )
        pages.append(page)
    return pages


async def run_demo(out: Path, samples: Sequence[StringThread] | None = None) -> DemoResult:
    """Grade the samples in batches, one logged step per batch, like a training loop.

    Each step's `get_logs(clear=True)` goes to a JSONL file and to every sink an installed
    integration offers (MLflow, with gradewire-mlflow); the per-step log states are merged
    into totals over all samples.
    """
    out.mkdir(parents=True, exist_ok=True)
    batch = list(samples if samples is not None else load_demo_samples())
    grader = build_demo_grader()
    jsonl = out / "logs.jsonl"
    jsonl.unlink(missing_ok=True)
    extra, notes = _plugin_sinks(out)
    sink = FanOutSink(JsonlSink(jsonl), *extra)
    sink.log_config({"graders": repr(grader), "batch_size": BATCH_SIZE})
    states: list[LogState] = []
    tables: dict[str, list[tuple[int, Table]]] = {}
    steps = 0
    for step, start in enumerate(range(0, len(batch), BATCH_SIZE)):
        await grader.grade_many(batch[start : start + BATCH_SIZE])
        states.append(grader.log_state())
        logs: dict[str, LogValue] = grader.get_logs(clear=True)
        sink.log(logs, step)
        for key, value in logs.items():
            if isinstance(value, Table) and len(value):
                tables.setdefault(key, []).append((step, value))
        steps = step + 1
    sink.close()
    summary = LogState.merge_all(states).to_logs()
    summary_path = out / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    written = [jsonl, summary_path, *_write_tables(tables, out)]
    return DemoResult(summary, steps, written, notes)
