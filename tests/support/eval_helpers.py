"""Build run folders for eval tests without a grader: results lines written directly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from gradewire import StringThread
from gradewire.eval import GradeOutcome, load_run
from gradewire.eval.runs._folder import CONFIG, ResultsWriter, write_json


def make_run(
    folder: Path,
    scores: Mapping[str, Sequence[float | None]],
    *,
    ids=None,
    topics=None,
    completions=None,
):
    """A run folder whose grader ``key`` gave ``scores[key][i]`` to sample i (None: error)."""
    n = len(next(iter(scores.values())))
    ids = list(ids or [f"s{i}" for i in range(n)])
    writer = ResultsWriter(folder)
    for i, sample_id in enumerate(ids):
        metadata = {"topic": topics[i]} if topics is not None else {}
        completion = completions[i] if completions is not None else f"answer {i}"
        thread = StringThread(
            [("user", f"question {sample_id}"), ("assistant", completion)], metadata
        )
        outcomes = {}
        for key, values in scores.items():
            value = values[i]
            if value is None:
                outcomes[key] = GradeOutcome("error", key, None, "RuntimeError: failed")
            else:
                outcomes[key] = GradeOutcome(
                    "ok",
                    key,
                    {
                        "value": float(value),
                        "grader_key": key,
                        "reasoning": f"why {i}",
                        "weight": 1.0,
                        "children": [],
                        "info": {},
                    },
                )
        writer.write(sample_id, "hash", thread.to_dict(), outcomes)
    writer.close()
    write_json(
        folder / CONFIG,
        {
            "gradewire_eval": 1,
            "spec_hashes": {key: key for key in scores},
            "sample_ids": ids,
            "graders": [{"key": key} for key in scores],
        },
    )
    return load_run(folder)


def write_rows(path: Path, rows: Sequence[Mapping[str, object]]) -> Path:
    """A JSONL data file of ``rows``."""
    import json

    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
