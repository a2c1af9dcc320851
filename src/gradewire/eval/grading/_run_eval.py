"""run_eval: load the data, grade what the run folder lacks, write the summary and report."""

from __future__ import annotations

import logging
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from typing_extensions import Unpack

from gradewire.core import BaseGrader, InvalidInputError
from gradewire.core._grader import timeout_setting
from gradewire.eval.grading._engines import GradingEngine
from gradewire.eval.grading._grading_loop import EvalDisplay, GradingReport, grade_samples
from gradewire.eval.grading._outcomes import describe, spec_hash
from gradewire.eval.reporting._eval_report import write_report
from gradewire.eval.runs._data_files import data_format, data_hash, read_samples
from gradewire.eval.runs._eval_run import EvalRun, load_run
from gradewire.eval.runs._folder import (
    CONFIG,
    MARKER,
    REPORT,
    SUMMARY,
    RunFolderError,
    claim_run_folder,
    write_json,
)
from gradewire.eval.runs._judge_facts import judge_facts, within_run_lines
from gradewire.eval.runs._samples import (
    DataOptions,
    EvalSample,
    RowShape,
    checked_samples,
    id_problem,
)
from gradewire.eval.runs._scipy import scipy_stats
from gradewire.eval.runs._statistics import GraderSummary, cluster_labels
from gradewire.judges._certificate import gate_certificates
from gradewire.stats._mean_interval import check_range

logger = logging.getLogger("gradewire")

__all__ = ["EvalResult", "run_eval"]


@dataclass(frozen=True)
class EvalResult:
    """What `run_eval` did and the run it left in the folder.

    Attributes:
        run: The run as it now is in the folder (every sample of the data it holds).
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
                (o := self.run.outcome(r, key)) is not None and o.status == "error"
                for key in self.run.spec_hashes
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
    force: bool = False,
    **options: Unpack[DataOptions],
) -> EvalResult:
    """Grade a data set into a run folder, resuming what an earlier run left.

    The folder is the run of the data: its summary and report cover every sample of
    the data that the folder holds graded on the data's current input, and every
    grader that ever graded into it (a grader of the same key with a new spec replaces
    the old). A rerun that grades less (``limit``, fewer graders) never shrinks it. An
    edited data file (same path, other content) re-grades the samples whose input
    changed, drops the rows that are gone and adds the new ones.

    Args:
        data: A data file (JSONL, CSV, Parquet, a saved Hugging Face dataset) or samples.
            Every row is read and checked, also with ``limit``.
        graders: The graders; their keys name them in the folder and dashboards.
        out: The run folder: new, empty, or a run. Run again with the same folder to
            resume: samples already graded by a grader with the same spec are skipped.
        concurrency: Samples in flight at once (each runs its graders concurrently).
        limit: Grade only the first ``limit`` samples (the run still spans the data).
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
        force: Put the run in a folder that holds other files (never over a file of a
            name gradewire writes: `RunFolderError` even so), or make a run of one
            data file the run of another (its lines are kept: samples whose input is
            the same are not graded again).
        **options: Which fields of a data file hold the prompt and the completion, and
            whether prompt-only samples are graded (`DataOptions`; given samples are held
            to ``allow_prompt_only`` too).

    Returns:
        The run and its statistics; ``outcome.interrupted`` tells if Ctrl-C stopped it.

    Raises:
        DataError: Bad data (before anything is graded).
        InvalidInputError: No graders, two with one key, a bad ``limit`` or
            ``concurrency``, two samples with one id, a sample without the cluster key,
            wrong data options.
        MissingDependencyError: An extra the run needs is missing (checked first).
        RunFolderError: ``out`` is a file or cannot be written, a folder that is not a
            run (without ``force``), a run of another data file (without ``force``), or
            another eval is writing it.
    """
    folder = Path(out)
    shape = RowShape.of(options)
    timeout = timeout_setting(timeout, "timeout")
    if not graders:
        raise InvalidInputError("run_eval needs at least one grader")
    keys = [grader.grader_key for grader in graders]
    if len(set(keys)) != len(keys):
        raise InvalidInputError(f"two graders share a key ({keys}); give each its own key")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidInputError(f"limit must be a positive int or None, not {limit!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise InvalidInputError(f"concurrency must be a positive int, not {concurrency!r}")
    for key in keys:
        problem = id_problem(key)
        if problem:
            raise InvalidInputError(f"grader key {key!r} {problem}")
    scipy_stats()  # the summary needs it: fail before grading, not after
    gate_certificates(graders, where="eval")  # a judge that must hold one: before spending
    samples, data_info = _samples(data, shape, options)
    hashes = {grader.grader_key: spec_hash(grader) for grader in graders}
    with claim_run_folder(folder, force=force) as previous:
        if previous is not None:
            _check_same_data(folder, previous, data_info, force=force)
            # A rerun without --cluster-key keeps the run's: its summary stays clustered.
            if cluster_key is None and isinstance(previous.get("cluster_key"), str):
                cluster_key = previous["cluster_key"]
        if cluster_key is not None:  # every sample has the field, checked before grading
            cluster_labels(((s.id, s.thread.metadata) for s in samples), cluster_key)
        _write_config(
            folder, previous, graders, hashes, data_info, samples, cluster_key, grader_file
        )
        del previous  # the earlier config's sample list is not kept while grading
        todo = samples[:limit] if limit is not None else samples
        del samples  # the run is read back from the folder: keep one copy of the samples
        # Passed only when set: an engine written before timeouts existed still runs.
        bound: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        outcome = await (engine or grade_samples)(
            todo,
            graders,
            folder,
            concurrency=concurrency,
            retry_errors=retry_errors,
            display=display,
            **bound,
        )
        del todo
        run = load_run(folder)
        summaries = run.summaries()
        # Which judge gave the verdicts and which model answered; a change said out loud.
        judges = judge_facts(run, {grader.grader_key: _identity(grader) for grader in graders})
        for line in within_run_lines(judges):
            logger.warning("gradewire eval: %s", line)
        write_json(
            folder / SUMMARY,
            {
                "samples": len(run.records),
                "samples_in_data": run.samples_in_data,
                "complete": run.complete,
                "interrupted": outcome.interrupted,
                "cluster_key": run.cluster_key,
                "graders": [summary.to_dict() for summary in summaries],
                "metrics": run.metrics(),
                "judges": judges,
            },
        )
        report = write_report(run, folder / REPORT, summaries=summaries)
    return EvalResult(run, summaries, outcome, report)


def _identity(grader: BaseGrader) -> str | None:
    identity = getattr(grader, "identity", None)
    return identity if isinstance(identity, str) else None


def _samples(
    data: str | os.PathLike[str] | Sequence[EvalSample],
    shape: RowShape,
    options: DataOptions,
) -> tuple[list[EvalSample], dict[str, Any]]:
    """Every sample of the data (checked), and what the config records of the data."""
    if isinstance(data, (str, os.PathLike)):
        samples = read_samples(data, shape)
        info: dict[str, Any] = {
            "path": _text(str(Path(data).resolve())),
            "format": data_format(Path(data)),
            "sha256": data_hash(data),
        }
    else:
        mapped = sorted({"completion_key", "prompt_key"} & set(options))
        if mapped:
            raise InvalidInputError(
                f"{' and '.join(mapped)} name columns of a data file; samples given in "
                "Python are threads already, so leave them out"
            )
        samples = checked_samples(list(data), shape)
        info = {"path": None, "format": "samples"}
    info["rows"] = len(samples)
    return samples, info


def _text(path: str) -> str:
    """A path as text JSON can hold (an undecodable file name byte becomes an escape)."""
    try:
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = path.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


def _check_same_data(
    folder: Path, previous: dict[str, Any], data_info: dict[str, Any], *, force: bool
) -> None:
    """Refuse (unless ``force``) to make a run of one data file the run of another.

    The same path with new content is an edit of the data; the same content at another
    path is the same data moved. Samples passed in Python have no path: always an edit.
    """
    old = previous.get("data")
    if force or not isinstance(old, dict) or old.get("path") is None:
        return
    if data_info["path"] is None or old.get("path") == data_info["path"]:
        return
    if old.get("sha256") is not None and old.get("sha256") == data_info.get("sha256"):
        return
    raise RunFolderError(
        f"{folder} is the run of {old.get('path')}, not of {data_info['path']}; choose "
        "another --out for other data, or pass --force (force=True) to make it the run "
        "of the new file (results of samples whose input is unchanged are kept)"
    )


def _write_config(
    folder: Path,
    previous: dict[str, Any] | None,
    graders: Sequence[BaseGrader],
    hashes: dict[str, str],
    data_info: dict[str, Any],
    samples: Sequence[EvalSample],
    cluster_key: str | None,
    grader_file: str | None,
) -> None:
    """The run's config: this invocation's graders added to (or replacing) the earlier ones."""
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    old = previous or {}
    specs: dict[str, Any] = {}
    for spec in old.get("graders") or []:
        if isinstance(spec, dict) and isinstance(spec.get("key"), str):
            specs[spec["key"]] = spec
    old_hashes = old.get("spec_hashes")
    spec_hashes = dict(old_hashes) if isinstance(old_hashes, dict) else {}
    old_ranges = old.get("score_ranges")
    ranges = dict(old_ranges) if isinstance(old_ranges, dict) else {}
    for grader in graders:
        specs[grader.grader_key] = describe(grader)
        spec_hashes[grader.grader_key] = hashes[grader.grader_key]
        # The statistics keep each interval inside the range its grader declared.
        declared = check_range(getattr(grader, "score_range", None))
        if declared is None:
            ranges.pop(grader.grader_key, None)
        else:
            ranges[grader.grader_key] = list(declared)
    invocations = [*old.get("invocations", []), {"time": now, "data": data_info}]
    write_json(
        folder / CONFIG,
        {
            MARKER: 1,
            "created": old.get("created", now),
            "updated": now,
            "grader_file": None if grader_file is None else _text(grader_file),
            "graders": [specs[key] for key in spec_hashes if key in specs],
            "spec_hashes": spec_hashes,
            "data": data_info,
            "cluster_key": cluster_key,
            "score_ranges": {key: ranges[key] for key in spec_hashes if key in ranges},
            "versions": _versions(),
            "invocations": invocations[-50:],
            "sample_ids": [sample.id for sample in samples],
            # The input of each sample in the data: a line of another input is stale.
            "input_hashes": [sample.input_hash for sample in samples],
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
