"""EvalRun: a run folder read back (its config, samples and outcomes), and its statistics."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradewire.core import InvalidInputError, LogState, MissingDependencyError, Stats, Table
from gradewire.eval.runs._folder import CONFIG, is_run, read_config, read_records
from gradewire.eval.runs._records import GradeOutcome, SampleRecord
from gradewire.eval.runs._run_view import render_run, run_line
from gradewire.eval.runs._statistics import GraderSummary, passed_verdict, summarize

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EvalRun", "load_run"]


@dataclass(frozen=True, repr=False)
class EvalRun:
    """An eval run: its samples in data order and each grader's latest outcome on them.

    Attributes:
        name: A name to show (the folder's name, or the tracker's run name).
        records: The run's samples, in the order of its data.
        spec_hashes: The hash of each grader's spec (outcomes of another spec are stale).
        config: The run's config (grader specs, data file and hash, versions).
        folder: The run folder (None for a run read from a tracker).
        cluster_key: The metadata field the run was clustered by, if any.
        samples_in_data: How many samples the data the run was made from has (None:
            unknown); ``records`` may hold fewer while the run is partial.
        added_metrics: Figures computed about the run afterwards (``gradewire eval
            --labels``: ``<key>/ppi/mean``, ...), logged with `metrics`.
    """

    name: str
    records: Sequence[SampleRecord]
    spec_hashes: Mapping[str, str]
    config: Mapping[str, Any] = field(default_factory=dict)
    folder: Path | None = None
    cluster_key: str | None = None
    samples_in_data: int | None = None
    added_metrics: Mapping[str, float] = field(default_factory=dict)

    @property
    def graders(self) -> list[str]:
        """The grader keys, in the config's order."""
        return list(self.spec_hashes)

    def summaries(
        self, *, cluster_key: str | None = None, confidence: float = 0.95
    ) -> list[GraderSummary]:
        """Statistics per grader (clustered by ``cluster_key``, default the run's own).

        A grader's interval stays inside the range it declared (`score_ranges`).
        """
        return summarize(
            self.records,
            self.spec_hashes,
            cluster_key=cluster_key or self.cluster_key,
            confidence=confidence,
            score_ranges=self.score_ranges,
        )

    @property
    def score_ranges(self) -> dict[str, list[float]]:
        """The range each grader declared its scores lie in (`BaseGrader.score_range`).

        Recorded in the run's config (``score_ranges``) when the grader declared one; a
        grader without one is absent.
        """
        ranges = self.config.get("score_ranges")
        if not isinstance(ranges, Mapping):
            return {}
        return {
            key: list(value)
            for key, value in ranges.items()
            if key in self.spec_hashes and isinstance(value, (list, tuple))
        }

    def outcome(self, record: SampleRecord, grader: str) -> GradeOutcome | None:
        """The grader's current outcome on the sample: None when missing or stale.

        Stale: graded with another spec than the run's, or on another input than the
        sample's (`SampleRecord.current`). Statistics, tables and reports count only these.
        """
        return record.current(grader, self.spec_hashes[grader])

    @property
    def complete(self) -> bool:
        """Every sample of the data is held and graded (any outcome) by every grader."""
        if self.samples_in_data is not None and len(self.records) < self.samples_in_data:
            return False
        return all(
            record.current(key, spec) is not None
            for record in self.records
            for key, spec in self.spec_hashes.items()
        )

    def scores(self, grader: str) -> dict[str, float]:
        """Sample id to score, for the samples the grader scored with its current spec."""
        out = {}
        for record in self.records:
            outcome = self.outcome(record, grader)
            if outcome is not None and outcome.value is not None:
                out[record.id] = outcome.value
        return out

    def passes(self, grader: str) -> dict[str, bool]:
        """Sample id to pass verdict, for the samples the grader scored with a pass rule.

        The verdict is the grade's ``info["passed"]`` (OpenAI graders with a
        ``pass_threshold``, string_check, label_model); a grader without a pass rule
        gives an empty dict. Compare pairs two runs' verdicts by id, as it pairs scores.
        """
        out = {}
        for record in self.records:
            outcome = self.outcome(record, grader)
            if outcome is not None and outcome.grade is not None:
                verdict = passed_verdict(outcome.grade)
                if verdict is not None:
                    out[record.id] = verdict
        return out

    def metrics(self) -> dict[str, float]:
        """Run metrics with the names `BaseGrader.get_logs` uses, over every sample.

        Per grader: ``<key>/score/mean``, ``/std``, ``/min``, ``/max``, ``/count``,
        ``/stderr``, ``/ci_low``, ``/ci_high``, ``/error_count``, ``/abstained_count``
        (and ``/timeout_count`` when some of the errors were timeouts); with a pass rule
        ``<key>/passed/rate``, ``/ci_low``, ``/ci_high``, ``/count``; each error kind as
        ``<key>/score/errors/<kind>``;
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
            for kind, count in summary.error_kinds.items():
                metrics[f"{key}/score/errors/{kind}"] = count
            if summary.passed is not None:
                metrics[f"{key}/passed/rate"] = summary.pass_rate
                metrics[f"{key}/passed/count"] = summary.passed
                for name, value in (("ci_low", summary.pass_low), ("ci_high", summary.pass_high)):
                    if math.isfinite(value):
                        metrics[f"{key}/passed/{name}"] = value
        metrics.update(self.added_metrics)
        return metrics

    def _tree_state(self, key: str) -> LogState:
        values: dict[str, list[float]] = {}
        for record in self.records:
            outcome = self.outcome(record, key)
            if outcome is None:
                continue
            for usage_key, amount in outcome.usage.items():
                values.setdefault(f"{key}/{usage_key}", []).append(float(amount))
            if outcome.value is not None:
                values.setdefault(f"{key}/score", []).append(outcome.value)
            if outcome.grade is not None:
                for child in outcome.grade.get("children") or ():
                    _walk(child, f"{key}/{child['grader_key']}", values)
        stats = {name: Stats.of(found) for name, found in values.items()}
        ordered = {f"{key}/score": stats.pop(f"{key}/score")} if f"{key}/score" in stats else {}
        return LogState({**ordered, **stats}, {})

    def tables(self) -> dict[str, Table]:
        """Per grader, ``<key>/score/scored_samples`` and ``<key>/score/unscored_samples``."""
        tables: dict[str, Table] = {}
        for key in self.spec_hashes:
            scored = Table(initial_headers=["Id", "Prompt", "Completion", "Reasoning", "Score"])
            unscored = Table(initial_headers=["Id", "Prompt", "Completion", "Status", "Message"])
            for record in self.records:
                outcome = self.outcome(record, key)
                if outcome is None:
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
        """One row per sample: its id, prompt, completion and metadata, then each grader's.

        Columns: ``id``, ``prompt``, ``completion``; one ``metadata.<field>`` per metadata
        field of any sample (nested fields flattened as ``metadata.<field>.<inner>``, so
        ``frame.groupby("metadata.topic")`` works; empty where a sample lacks it); then per
        grader ``<key>`` (the score), ``<key>/status`` (``ok``, ``error``, ``abstained``
        or ``missing``), ``<key>/reasoning`` and ``<key>/message`` (the error or
        abstention message). Only current outcomes count (see `outcome`).

        Raises:
            MissingDependencyError: pandas is not installed (the message has the pip command).
        """
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
            for key in self.spec_hashes:
                outcome = self.outcome(record, key)
                grade = outcome.grade if outcome is not None else None
                row[key] = outcome.value if outcome is not None else None
                row[f"{key}/status"] = outcome.status if outcome is not None else "missing"
                row[f"{key}/reasoning"] = grade.get("reasoning") if grade is not None else None
                row[f"{key}/message"] = outcome.message if outcome is not None else None
            rows.append(row)
        columns = ["id", "prompt", "completion"]
        graded: pd.DataFrame = pandas.DataFrame(
            rows,
            columns=columns
            + [
                f"{key}{part}"
                for key in self.spec_hashes
                for part in ("", "/status", "/reasoning", "/message")
            ],
        )
        metadata = pandas.json_normalize([dict(r.metadata) for r in self.records], sep=".")
        if metadata.columns.empty:
            return graded
        metadata = metadata.add_prefix("metadata.").set_index(graded.index)
        frame: pd.DataFrame = pandas.concat(
            [graded[columns], metadata, graded.drop(columns=columns)], axis=1
        )
        return frame

    def __repr__(self) -> str:
        # The dataclass repr would print every record: 158 KB for 200 samples.
        return run_line(self.name, len(self.records), self.graders, self.complete)

    def _repr_html_(self) -> str:
        scores = {key: list(self.scores(key).values()) for key in self.spec_hashes}
        return render_run(self.name, len(self.records), self.complete, self.summaries(), scores)


def _walk(grade: Mapping[str, Any], path: str, values: dict[str, list[float]]) -> None:
    values.setdefault(f"{path}/score", []).append(float(grade["value"]))
    for child in grade.get("children") or ():
        _walk(child, f"{path}/{child['grader_key']}", values)


def load_run(folder: str | os.PathLike[str]) -> EvalRun:
    """Read a run folder written by `run_eval` (or ``gradewire eval --out``).

    The run holds the samples of the data it was last made from that the folder holds
    with that data's input, in the data's order; each grader's outcome counts only if it
    graded that input with the run's spec for it (see `EvalRun.outcome`).

    Raises:
        InvalidInputError: The folder is not a gradewire run (no config.json with
            gradewire's marker), or a file of it is malformed (the message names the
            file and line).
    """
    path = Path(folder)
    config = read_config(path) if path.is_dir() else None
    if not is_run(config):
        raise InvalidInputError(
            f"{path} is not a gradewire eval run (it has no {CONFIG} written by gradewire "
            "eval); pass a folder written by gradewire eval --out"
        )
    assert config is not None
    ids, hashes, spec_hashes = _run_config(path / CONFIG, config)
    expected = dict(zip(ids, hashes, strict=True)) if ids is not None and hashes else None
    records = read_records(path, expected)
    order = ids if ids is not None else list(records)
    return EvalRun(
        name=path.resolve().name,
        records=[records[i] for i in order if i in records],
        spec_hashes=spec_hashes,
        # The sample list is the records themselves: not kept a second time.
        config={k: v for k, v in config.items() if k not in ("sample_ids", "input_hashes")},
        folder=path,
        cluster_key=key if isinstance(key := config.get("cluster_key"), str) else None,
        samples_in_data=len(ids) if ids is not None else None,
    )


def _run_config(
    path: Path, config: Mapping[str, Any]
) -> tuple[list[str] | None, list[str] | None, dict[str, str]]:
    """The sample ids, their input hashes and the spec hashes, checked."""
    ids = config.get("sample_ids")
    hashes = config.get("input_hashes")
    specs = config.get("spec_hashes") or {}
    if ids is not None and not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
        raise InvalidInputError(f"{path}: 'sample_ids' must be a list of strings")
    if hashes is not None and not (
        isinstance(hashes, list)
        and all(isinstance(h, str) for h in hashes)
        and ids is not None
        and len(hashes) == len(ids)
    ):
        raise InvalidInputError(
            f"{path}: 'input_hashes' must be a list of strings, one per sample id"
        )
    if not isinstance(specs, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in specs.items()
    ):
        raise InvalidInputError(f"{path}: 'spec_hashes' must map grader keys to strings")
    return ids, hashes, dict(specs)
