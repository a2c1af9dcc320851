"""EvalRun: a run folder read back (its config, samples and outcomes), and its statistics."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradewire.core import InvalidInputError, LogState, MissingDependencyError, Stats, Table
from gradewire.eval._records import SampleRecord
from gradewire.eval._run_folder import RESULTS, read_config, read_records
from gradewire.eval._statistics import GraderSummary, summarize

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EvalRun", "load_run"]


@dataclass(frozen=True)
class EvalRun:
    """An eval run: its samples in data order and each grader's latest outcome on them.

    Attributes:
        name: A name to show (the folder's name, or the tracker's run name).
        records: The run's samples, in the order of its data.
        spec_hashes: The hash of each grader's spec (outcomes of another spec are stale).
        config: The run's config (grader specs, data file and hash, versions).
        folder: The run folder (None for a run read from a tracker).
        cluster_key: The metadata field the run was clustered by, if any.
    """

    name: str
    records: Sequence[SampleRecord]
    spec_hashes: Mapping[str, str]
    config: Mapping[str, Any] = field(default_factory=dict)
    folder: Path | None = None
    cluster_key: str | None = None

    @property
    def graders(self) -> list[str]:
        """The grader keys, in the config's order."""
        return list(self.spec_hashes)

    def summaries(
        self, *, cluster_key: str | None = None, confidence: float = 0.95
    ) -> list[GraderSummary]:
        """Statistics per grader (clustered by ``cluster_key``, default the run's own)."""
        return summarize(
            self.records,
            self.spec_hashes,
            cluster_key=cluster_key or self.cluster_key,
            confidence=confidence,
        )

    def scores(self, grader: str) -> dict[str, float]:
        """Sample id to score, for the samples the grader scored with its current spec."""
        spec = self.spec_hashes[grader]
        out = {}
        for record in self.records:
            outcome = record.outcomes.get(grader)
            if outcome is not None and outcome.spec_hash == spec and outcome.value is not None:
                out[record.id] = outcome.value
        return out

    def metrics(self) -> dict[str, float]:
        """Run metrics with the names `BaseGrader.get_logs` uses, over every sample.

        Per grader: ``<key>/score/mean``, ``/std``, ``/min``, ``/max``, ``/count``,
        ``/stderr``, ``/ci_low``, ``/ci_high``, ``/error_count``, ``/abstained_count``
        (and ``/timeout_count`` when some of the errors were timeouts);
        judge usage as ``<key>/<usage>/mean`` and so on; sub-grades of a combined grader
        as ``<key>/<child>/score/...``.
        """
        metrics: dict[str, float] = {}
        for summary in self.summaries():
            key = summary.grader
            metrics.update(self._tree_state(key).to_logs())
            for name, value in (
                ("stderr", summary.stderr),
                ("ci_low", summary.ci_low),
                ("ci_high", summary.ci_high),
            ):
                if math.isfinite(value):
                    metrics[f"{key}/score/{name}"] = value
            metrics[f"{key}/score/error_count"] = summary.errors
            metrics[f"{key}/score/abstained_count"] = summary.abstained
            if summary.timeouts:
                metrics[f"{key}/score/timeout_count"] = summary.timeouts  # among the errors
        return metrics

    def _tree_state(self, key: str) -> LogState:
        spec = self.spec_hashes[key]
        values: dict[str, list[float]] = {}
        for record in self.records:
            outcome = record.outcomes.get(key)
            if outcome is None or outcome.spec_hash != spec:
                continue
            for usage_key, amount in outcome.usage.items():
                values.setdefault(f"{key}/{usage_key}", []).append(float(amount))
            if outcome.grade is not None:
                _walk(outcome.grade, key, values)
        stats = {name: Stats.of(found) for name, found in values.items()}
        ordered = {f"{key}/score": stats.pop(f"{key}/score")} if f"{key}/score" in stats else {}
        return LogState({**ordered, **stats}, {})

    def tables(self) -> dict[str, Table]:
        """Per grader, ``<key>/score/scored_samples`` and ``<key>/score/unscored_samples``."""
        tables: dict[str, Table] = {}
        for key, spec in self.spec_hashes.items():
            scored = Table(initial_headers=["Id", "Prompt", "Completion", "Reasoning", "Score"])
            unscored = Table(initial_headers=["Id", "Prompt", "Completion", "Status", "Message"])
            for record in self.records:
                outcome = record.outcomes.get(key)
                if outcome is None or outcome.spec_hash != spec:
                    continue
                if outcome.grade is not None:
                    reasoning = outcome.grade.get("reasoning") or ""
                    scored.add_row(
                        [record.id, record.prompt(), record.completion(), reasoning, outcome.value]
                    )
                else:
                    unscored.add_row(
                        [
                            record.id,
                            record.prompt(),
                            record.completion(),
                            outcome.status,
                            outcome.message or "",
                        ]
                    )
            tables[f"{key}/score/scored_samples"] = scored
            if len(unscored):
                tables[f"{key}/score/unscored_samples"] = unscored
        return tables

    def to_pandas(self) -> pd.DataFrame:
        """One row per sample: id, prompt, completion, then each grader's score and status."""
        try:
            import pandas
        except ImportError:
            raise MissingDependencyError(
                "pandas", extra="pandas", purpose="turn an eval run into a DataFrame"
            ) from None
        rows = []
        for record in self.records:
            row: dict[str, Any] = {
                "id": record.id,
                "prompt": record.prompt(),
                "completion": record.completion(),
            }
            for key, spec in self.spec_hashes.items():
                outcome = record.outcomes.get(key)
                current = outcome is not None and outcome.spec_hash == spec
                row[key] = outcome.value if current and outcome is not None else None
                row[f"{key}/status"] = outcome.status if current and outcome else "missing"
            rows.append(row)
        frame: pd.DataFrame = pandas.DataFrame(rows)
        return frame


def _walk(grade: Mapping[str, Any], path: str, values: dict[str, list[float]]) -> None:
    values.setdefault(f"{path}/score", []).append(float(grade["value"]))
    for child in grade.get("children") or ():
        _walk(child, f"{path}/{child['grader_key']}", values)


def load_run(folder: str | os.PathLike[str]) -> EvalRun:
    """Read a run folder written by `run_eval` (or ``gradewire eval --out``).

    Raises:
        InvalidInputError: The folder holds no run (no config.json / results.jsonl).
    """
    path = Path(folder)
    config = read_config(path)
    if config is None or not (path / RESULTS).exists():
        raise InvalidInputError(
            f"{path} is not an eval run folder (it has no config.json and {RESULTS}); "
            "pass a folder written by gradewire eval --out"
        )
    records = read_records(path)
    ids = config.get("sample_ids") or list(records)
    return EvalRun(
        name=path.resolve().name,
        records=[records[i] for i in ids if i in records],
        spec_hashes=dict(config.get("spec_hashes") or {}),
        config=config,
        folder=path,
        cluster_key=config.get("cluster_key"),
    )
