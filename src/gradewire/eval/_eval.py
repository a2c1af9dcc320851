"""run_eval: load the data, grade what the run folder lacks, write the summary and report."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from gradewire.core import BaseGrader, InvalidInputError
from gradewire.core._grader import timeout_setting
from gradewire.eval._data import data_format, data_hash, load_samples
from gradewire.eval._engines import GradingEngine
from gradewire.eval._outcomes import spec_hash
from gradewire.eval._report import write_report
from gradewire.eval._run import EvalRun, load_run
from gradewire.eval._run_folder import CONFIG, REPORT, SUMMARY, read_config, write_json
from gradewire.eval._runner import EvalDisplay, GradingReport, grade_samples
from gradewire.eval._samples import EvalSample
from gradewire.eval._statistics import GraderSummary, cluster_labels

__all__ = ["EvalResult", "run_eval"]


@dataclass(frozen=True)
class EvalResult:
    """What `run_eval` did and the run it left in the folder.

    Attributes:
        run: The run as it now is in the folder (every sample of the data).
        summaries: Statistics per grader over the run.
        outcome: What this invocation graded, skipped or abandoned.
        report: The HTML report written.
    """

    run: EvalRun
    summaries: list[GraderSummary]
    outcome: GradingReport
    report: Path

    @property
    def error_samples(self) -> int:
        """Samples on which at least one grader failed."""
        return sum(
            any(
                (o := r.outcomes.get(key)) is not None
                and o.spec_hash == spec
                and o.status == "error"
                for key, spec in self.run.spec_hashes.items()
            )
            for r in self.run.records
        )


async def run_eval(
    data: str | os.PathLike[str] | Sequence[EvalSample],
    graders: Sequence[BaseGrader],
    out: str | os.PathLike[str],
    *,
    concurrency: int = 32,
    limit: int | None = None,
    retry_errors: bool = False,
    cluster_key: str | None = None,
    display: EvalDisplay | None = None,
    grader_file: str | None = None,
    engine: GradingEngine | None = None,
    timeout: float | None = None,
) -> EvalResult:
    """Grade a data set into a run folder, resuming what an earlier run left.

    Args:
        data: A data file (JSONL, CSV, Parquet, a saved Hugging Face dataset) or samples.
        graders: The graders; their keys name them in the folder and dashboards.
        out: The run folder. Run again with the same folder to resume: samples already
            graded by a grader with the same spec are skipped.
        concurrency: Samples in flight at once (each runs its graders concurrently).
        limit: Grade only the first ``limit`` samples.
        retry_errors: Also re-grade the outcomes that were errors.
        cluster_key: A metadata field whose samples are not independent (a topic, a
            source document): standard errors are clustered by it.
        display: A progress display (see `EvalDisplay`); None shows nothing.
        grader_file: The grader file's path, recorded in the config.
        engine: Where the samples are graded (`eval_engine`); None: in this process.
            The folder, resumption, statistics and report are the same either way.
        timeout: Seconds one grade may take, for graders that set no `timeout` of their
            own (see `BaseGrader.timeout`); a timed-out grade is an error of kind
            ``"timeout"``, counted apart in the summary, and grading goes on.

    Returns:
        The run and its statistics; ``outcome.interrupted`` tells if Ctrl-C stopped it.

    Raises:
        DataError: Bad data (before anything is graded).
        InvalidInputError: No graders, two with one key, a sample without the cluster key.
    """
    folder = Path(out)
    timeout = timeout_setting(timeout, "timeout")
    if not graders:
        raise InvalidInputError("run_eval needs at least one grader")
    keys = [grader.grader_key for grader in graders]
    if len(set(keys)) != len(keys):
        raise InvalidInputError(f"two graders share a key ({keys}); give each its own key")
    if isinstance(data, (str, os.PathLike)):
        samples = load_samples(data, limit=limit)
        data_info: dict[str, Any] = {
            "path": str(Path(data).resolve()),
            "format": data_format(Path(data)),
            "sha256": data_hash(data),
        }
    else:
        samples = list(data)[:limit] if limit is not None else list(data)
        data_info = {"path": None, "format": "samples"}
    data_info["rows"] = len(samples)
    if cluster_key is not None:
        cluster_labels(
            [_as_record(sample) for sample in samples], cluster_key
        )  # fail before grading, not after
    folder.mkdir(parents=True, exist_ok=True)
    hashes = {grader.grader_key: spec_hash(grader) for grader in graders}
    _write_config(folder, graders, hashes, data_info, samples, cluster_key, grader_file)
    # Passed only when set: an engine written before timeouts existed still runs the rest.
    bound: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    outcome = await (engine or grade_samples)(
        samples,
        graders,
        folder,
        concurrency=concurrency,
        retry_errors=retry_errors,
        display=display,
        **bound,
    )
    run = load_run(folder)
    summaries = run.summaries()
    write_json(
        folder / SUMMARY,
        {
            "samples": len(run.records),
            "complete": not outcome.interrupted,
            "cluster_key": cluster_key,
            "graders": [summary.to_dict() for summary in summaries],
            "metrics": run.metrics(),
        },
    )
    report = write_report(run, folder / REPORT, summaries=summaries)
    return EvalResult(run, summaries, outcome, report)


def _as_record(sample: EvalSample) -> Any:
    from gradewire.eval._records import SampleRecord

    return SampleRecord(sample.id, sample.thread.to_dict(), sample.input_hash, {})


def _write_config(
    folder: Path,
    graders: Sequence[BaseGrader],
    hashes: dict[str, str],
    data_info: dict[str, Any],
    samples: Sequence[EvalSample],
    cluster_key: str | None,
    grader_file: str | None,
) -> None:
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    old = read_config(folder) or {}
    specs = []
    for grader in graders:
        spec = getattr(grader, "spec", None)
        specs.append(
            dict(spec)
            if isinstance(spec, dict)
            else {"key": grader.grader_key, "class": type(grader).__qualname__}
        )
    invocations = [*old.get("invocations", []), {"time": now, "data": data_info}]
    write_json(
        folder / CONFIG,
        {
            "gradewire_eval": 1,
            "created": old.get("created", now),
            "updated": now,
            "grader_file": grader_file,
            "graders": specs,
            "spec_hashes": hashes,
            "data": data_info,
            "cluster_key": cluster_key,
            "versions": _versions(),
            "invocations": invocations[-50:],
            "sample_ids": [sample.id for sample in samples],
        },
    )


def _versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in ("gradewire", "pydantic", "numpy", "httpx"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "unknown"
    return versions
