"""Eval runs in MLflow the way MLflow's own GenAI evaluation logs them.

One MLflow run per run folder; one trace per sample inside it (the conversation as the
trace's request, the completion as its response); each grader's grade attached to the
trace as a Feedback assessment (value, rationale, source; an error as the feedback's
error); the statistics as run metrics; the report, config and summary as artifacts; the
run tagged ``mlflow.runType = genai_evaluate``. MLflow's evaluation views then list the
samples with their scores, and `mlflow.search_traces` reads them back.

Each trace is built on the client with its Feedback inside and written by `TraceWriter`
(one request per trace for its info and assessments, spans a hundred traces to a
request), not through MLflow's fluent tracing, whose export queue sends traces one at a
time, polls once a second and drops what fails with only a warning. A store that takes
no spans (a server before MLflow 3.4, a file store) gets the traces through the fluent
API, which keeps spans as artifacts there; so does Databricks.
Re-running an eval logs traces only for samples whose outcomes changed, and deletes the
traces they replace; ``mlflow.json`` in the run folder remembers the run and its traces.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from gradewire import MissingDependencyError
from gradewire.eval import EvalRun, GraderSummary, Leaderboard, SampleRecord
from gradewire.eval.runs._folder import write_json
from gradewire.eval.runs._judge_facts import judge_facts
from gradewire.eval.runs._records import plain
from gradewire_mlflow._keys import KeyCleaner
from gradewire_mlflow._run import default_tracking_uri, sqlite_artifact_location, ui_command
from gradewire_mlflow._traces import (
    INPUT_HASH,
    PROMPT_HASH,
    SAMPLE_TAG,
    SPEC_HASH,
    SpansUnsupportedError,
    TraceWriter,
    judge_metadata,
)

__all__ = ["MlflowEvalTracker", "eval_tracker", "metric_names"]

STATE = "mlflow.json"
DEFAULT_EXPERIMENT = "gradewire-eval"
BATCH = 400
_FLUENT_ENV = ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME")
_JUDGE_TYPES = {"binary_judge", "prebuilt_judge", "rubric_judge", "range_judge"}


@contextlib.contextmanager
def _fluent(uri: str) -> Iterator[None]:
    """MLflow's fluent API pointed at ``uri``, and put back as it was afterwards.

    Tracing only works through the fluent API, which keeps the tracking URI and the active
    experiment in globals and environment variables; the caller's are restored.
    """
    import mlflow
    from mlflow.tracking import fluent

    saved_env = {name: os.environ.get(name) for name in _FLUENT_ENV}
    from mlflow.tracking._tracking_service import utils

    # The URI set in code, not one read from the environment (restored apart, below).
    previous = getattr(utils, "_tracking_uri", None)
    experiment = getattr(fluent, "_active_experiment_id", None)
    mlflow.set_tracking_uri(uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(previous)  # type: ignore[arg-type]
        fluent._active_experiment_id = experiment
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _fingerprint(record: SampleRecord, spec_hashes: Mapping[str, str]) -> str:
    outcomes = {
        key: current.to_json()
        for key, spec in spec_hashes.items()
        if (current := record.current(key, spec)) is not None
    }
    for outcome in outcomes.values():
        # Timing varies, and a current outcome's input is the record's (hashed below).
        outcome.pop("seconds", None)
        outcome.pop("input_hash", None)
    text = json.dumps([record.input_hash, outcomes], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class MlflowEvalTracker:
    """Logs eval runs and comparisons to MLflow (the ``mlflow`` eval tracker)."""

    def __init__(
        self,
        folder: Path,
        *,
        tracking_uri: str | None = None,
        experiment_name: str | None = None,
    ) -> None:
        """Set up the tracker.

        Args:
            folder: The run folder (holds ``mlflow.json``, the run and trace ids).
            tracking_uri: Default: ``MLFLOW_TRACKING_URI``, else ``./mlflow.db`` (sqlite).
            experiment_name: Default: ``MLFLOW_EXPERIMENT_NAME``, else ``gradewire-eval``.
        """
        try:  # fail here, before anything is graded, if MLflow is missing
            import mlflow
        except ImportError:
            raise MissingDependencyError(
                "mlflow", extra="mlflow", purpose="log evals to MLflow"
            ) from None
        del mlflow
        self.folder = folder
        self.tracking_uri = (
            tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()
        )
        self.experiment_name = (
            experiment_name or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
        )

    def _state(self) -> dict[str, Any]:
        path = self.folder / STATE
        if path.exists():
            state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            if state.get("tracking_uri") == self.tracking_uri:
                return state
        return {"tracking_uri": self.tracking_uri, "run_id": None, "traces": {}}

    def _save(self, state: Mapping[str, Any]) -> None:
        path = self.folder / STATE
        write_json(path, state)  # atomically: a crash mid-write never loses the trace ids

    def log_run(self, run: EvalRun, summaries: Sequence[GraderSummary]) -> list[str]:
        """Log the run: traces with feedback for new or changed samples, metrics, artifacts."""
        with _fluent(self.tracking_uri):
            return self._log_run(run)

    def _log_run(self, run: EvalRun) -> list[str]:
        import mlflow
        from mlflow import MlflowClient

        state = self._state()
        client = MlflowClient(self.tracking_uri)
        experiment = self._experiment(client)
        run_id = state.get("run_id")
        if run_id is not None:
            try:
                client.get_run(run_id)
            except Exception:  # deleted, or another store: start afresh
                run_id, state["traces"] = None, {}
        traces: dict[str, list[str]] = state["traces"]
        with mlflow.start_run(run_id=run_id, run_name=None if run_id else run.name) as active:
            state["run_id"] = active.info.run_id
            mlflow.set_tag("mlflow.runType", "genai_evaluate")
            self._save(state)
            todo = [
                (record, fingerprint)
                for record in run.records
                if traces.get(record.id, [None, None])[1]
                != (fingerprint := _fingerprint(record, run.spec_hashes))
            ]
            stale = [traces[r.id][0] for r, _ in todo if r.id in traces]
            for start in range(0, len(stale), 100):
                client.delete_traces(experiment.experiment_id, trace_ids=stale[start : start + 100])
            self._log_traces(todo, traces, state, run, experiment.experiment_id)
            steps = len(run.config.get("invocations", [])) or 1
            mlflow.log_metrics(metric_names(run.metrics(), run.graders), step=steps - 1)
            mlflow.log_params(_params(run))
            for name in ("report.html", "summary.json", "config.json"):
                if run.folder is not None and (run.folder / name).exists():
                    mlflow.log_artifact(str(run.folder / name), artifact_path="gradewire")
        return [
            f"MLflow: {len(todo)} trace(s) logged to run {state['run_id']} "
            f"(experiment {self.experiment_name!r}) at {self.tracking_uri}",
            (
                f"  view it: {ui_command(self.tracking_uri)}"
                if self.tracking_uri.startswith("sqlite:")
                else f"  view it: {self.tracking_uri}"
            ),
        ]

    def _log_traces(
        self,
        todo: Sequence[tuple[SampleRecord, str]],
        traces: dict[str, list[str]],
        state: dict[str, Any],
        run: EvalRun,
        experiment_id: str,
    ) -> None:
        """One trace per sample of ``todo``, its trace id kept in ``state`` once stored."""
        import mlflow

        sources = _sources(run)
        fingerprints = {record.id: fingerprint for record, fingerprint in todo}
        left = list(todo)
        if not self.tracking_uri.startswith("databricks"):
            writer = TraceWriter(
                self.tracking_uri, experiment_id, state["run_id"], run.spec_hashes, sources
            )

            def done(record: SampleRecord, trace_id: str) -> None:
                traces[record.id] = [trace_id, fingerprints[record.id]]

            try:
                for start in range(0, len(todo), BATCH):
                    writer.write([record for record, _ in todo[start : start + BATCH]], done)
                    self._save(state)
                return
            except SpansUnsupportedError:
                # The store keeps spans as artifacts: MLflow's exporter knows how.
                left = [(r, f) for r, f in todo if traces.get(r.id, [None, None])[1] != f]
            finally:
                self._save(state)
        for start in range(0, len(left), BATCH):
            for record, fingerprint in left[start : start + BATCH]:
                traces[record.id] = [_log_trace(record, run.spec_hashes, sources), fingerprint]
            mlflow.flush_trace_async_logging()
            self._save(state)

    def _experiment(self, client: Any) -> Any:
        """The experiment, made active.

        A new experiment on a sqlite store keeps its artifacts beside the database, not in
        ``./mlruns`` of whatever folder the command ran in.
        """
        import mlflow

        location = sqlite_artifact_location(self.tracking_uri)
        if location is not None and client.get_experiment_by_name(self.experiment_name) is None:
            # Made meanwhile by another process? Then that one is used.
            with contextlib.suppress(Exception):
                client.create_experiment(self.experiment_name, artifact_location=location)
        return mlflow.set_experiment(self.experiment_name)

    def log_comparison(self, comparison: Any, html: str) -> list[str]:
        """Log a comparison as its own MLflow run: the figures as metrics, the report."""
        from mlflow import MlflowClient

        with _fluent(self.tracking_uri):
            self._experiment(MlflowClient(self.tracking_uri))
            return self._log_comparison(comparison, html)

    def log_report(
        self,
        kind: str,
        name: str,
        metrics: Mapping[str, float],
        graders: Sequence[str],
        html: str,
        data: Mapping[str, Any],
    ) -> list[str]:
        """Log figures about a run (an agreement) as an MLflow run: metrics and the page."""
        from mlflow import MlflowClient

        with _fluent(self.tracking_uri):
            self._experiment(MlflowClient(self.tracking_uri))
            return _log_report(self, kind, name, metrics, graders, html, data)

    def log_leaderboard(self, board: Leaderboard, html: str, runs: Sequence[EvalRun]) -> list[str]:
        """Log a leaderboard as an MLflow run, and tag each MLflow run it ranks.

        The leaderboard's run holds ``leaderboard/<grader>/<run>/mean``, ``/ci_low``,
        ``/ci_high``, ``/rank_low``, ``/rank_high``, ``/tier`` (and ``/pass_rate``) as
        metrics, the page (``gradewire/leaderboard.html``), its JSON and the standings as a
        table (``gradewire/standings.json``). Each ranked run that is an MLflow run of this
        tracking store gets the tags ``gradewire.leaderboard.run_id`` (the leaderboard's
        run), and per grader ``gradewire.leaderboard.<grader>.rank_interval`` (``1-3``),
        ``.tier`` and ``.mean``: a later leaderboard of it writes over them.
        """
        from mlflow import MlflowClient

        with _fluent(self.tracking_uri):
            self._experiment(MlflowClient(self.tracking_uri))
            return self._log_leaderboard(board, html, runs)

    def _log_leaderboard(self, board: Leaderboard, html: str, runs: Sequence[EvalRun]) -> list[str]:
        import mlflow

        from gradewire.eval.reporting._trackers import LEADERBOARD_COLUMNS, leaderboard_rows

        clean_grader, clean_run = KeyCleaner("grader"), KeyCleaner("run name")
        metrics: dict[str, float] = {}
        for g in board.graders:
            for r in g.runs:
                head = f"leaderboard/{clean_grader(g.grader)}/{clean_run(r.run)}"
                figures = {
                    "mean": r.mean,
                    "ci_low": r.low,
                    "ci_high": r.high,
                    "rank_low": float(r.rank_low),
                    "rank_high": float(r.rank_high),
                    "tier": float(r.tier),
                }
                if r.pass_rate is not None:
                    figures["pass_rate"] = r.pass_rate
                metrics.update({f"{head}/{k}": v for k, v in figures.items() if math.isfinite(v)})
            metrics[f"leaderboard/{clean_grader(g.grader)}/separable_from_leader"] = float(
                len(g.separable_from_leader())
            )
        with mlflow.start_run(run_name=f"leaderboard of {len(board.runs)} runs") as active:
            leaderboard_id = active.info.run_id
            mlflow.set_tags(
                {
                    "gradewire.report": "leaderboard",
                    "gradewire.leaderboard.runs": ", ".join(board.runs)[:5000],
                    NOTE_TAG: _leaderboard_note(board),
                }
            )
            items = list(metrics.items())
            for start in range(0, len(items), 1000):  # MLflow takes 1000 metrics a batch
                mlflow.log_metrics(dict(items[start : start + 1000]))
            mlflow.log_text(html, "gradewire/leaderboard.html")
            mlflow.log_dict(board.to_dict(), "gradewire/leaderboard.json")
            table = "gradewire/standings.json"
            mlflow.log_dict(
                {"columns": list(LEADERBOARD_COLUMNS), "data": leaderboard_rows(board)}, table
            )
            mlflow.set_tag(LOGGED_ARTIFACTS, json.dumps([{"path": table, "type": "table"}]))
        notes = [f"MLflow: leaderboard logged as run {leaderboard_id} at {self.tracking_uri}"]
        notes += self._tag_ranked_runs(board, runs, leaderboard_id, clean_grader)
        return notes

    def _tag_ranked_runs(
        self,
        board: Leaderboard,
        runs: Sequence[EvalRun],
        leaderboard_id: str,
        clean_grader: KeyCleaner,
    ) -> list[str]:
        """Each ranked MLflow run of this store tagged with its standing per grader."""
        from mlflow import MlflowClient
        from mlflow.entities import RunTag

        client = MlflowClient(self.tracking_uri)
        tagged: list[str] = []
        elsewhere: list[str] = []
        for name, run in zip(board.runs, runs, strict=True):
            run_id = run.config.get("mlflow_run_id")
            if not isinstance(run_id, str):
                continue  # not an MLflow run: a folder, a log, a file
            store = run.config.get("mlflow_tracking_uri")
            if store is not None and store != self.tracking_uri:
                elsewhere.append(name)
                continue
            tags = {"gradewire.leaderboard.run_id": leaderboard_id}
            for g in board.graders:
                for r in g.runs:
                    if r.run != name:
                        continue
                    head = f"gradewire.leaderboard.{clean_grader(g.grader)}"
                    tags[f"{head}.rank_interval"] = (
                        f"{r.rank_low}"
                        if r.rank_low == r.rank_high
                        else f"{r.rank_low}-{r.rank_high}"
                    )
                    tags[f"{head}.tier"] = str(r.tier)
                    tags[f"{head}.mean"] = f"{r.mean:.6g}"
            entries = [RunTag(key, value) for key, value in tags.items()]
            for start in range(0, len(entries), 100):  # MLflow takes 100 tags a batch
                client.log_batch(run_id, tags=entries[start : start + 100])
            tagged.append(name)
        notes = []
        if tagged:
            notes.append(
                f"MLflow: {len(tagged)} ranked run(s) tagged with their rank interval and tier "
                "(gradewire.leaderboard.*)"
            )
        if elsewhere:
            notes.append(f"MLflow: not tagged, in another tracking store: {', '.join(elsewhere)}")
        return notes

    def _log_comparison(self, comparison: Any, html: str) -> list[str]:
        import mlflow

        from gradewire.eval.reporting._trackers import (
            SLICE_COLUMNS,
            VERDICT_COLUMNS,
            comparison_metrics,
            comparison_slices,
            comparison_verdicts,
        )

        name = f"compare {comparison.run_b} vs {comparison.run_a}"
        with mlflow.start_run(run_name=name[:250]) as active:
            mlflow.set_tags(
                {
                    "gradewire.compare.run_a": comparison.run_a[:5000],
                    "gradewire.compare.run_b": comparison.run_b[:5000],
                    # The run's description in MLflow's UI (Markdown): the verdicts first.
                    NOTE_TAG: _verdict_note(comparison),
                }
            )
            graders = [result.grader for result in comparison.graders]
            mlflow.log_metrics(
                metric_names(comparison_metrics(comparison), graders, prefix="compare/")
            )
            mlflow.log_text(html, "gradewire/compare.html")
            mlflow.log_dict(comparison.to_dict(), "gradewire/compare.json")
            tables: dict[str, tuple[Sequence[str], list[list[Any]]]] = {
                "gradewire/verdicts.json": (VERDICT_COLUMNS, comparison_verdicts(comparison))
            }
            if comparison.by is not None:
                tables["gradewire/slices.json"] = (SLICE_COLUMNS, comparison_slices(comparison))
            for path, (columns, rows) in tables.items():
                # What `mlflow.log_table` writes (pandas' "split" form) and the tag by which
                # MLflow's UI shows it as a table, without pandas.
                mlflow.log_dict({"columns": list(columns), "data": rows}, path)
            mlflow.set_tag(
                LOGGED_ARTIFACTS, json.dumps([{"path": p, "type": "table"} for p in tables])
            )
        return [f"MLflow: comparison logged as run {active.info.run_id} at {self.tracking_uri}"]


NOTE_TAG = "mlflow.note.content"
LOGGED_ARTIFACTS = "mlflow.loggedArtifacts"


def _verdict_note(comparison: Any) -> str:
    """The verdicts as a Markdown list, escaped (grader keys are untrusted text)."""
    lines = [
        f"**{html.escape(comparison.run_b)}** (B) against **{html.escape(comparison.run_a)}** "
        "(A); the compare page is the artifact gradewire/compare.html.",
        "",
    ]
    lines += [f"- {_markdown_text(g.verdict)}" for g in comparison.graders]
    return "\n".join(lines)[:5000]


def _leaderboard_note(board: Leaderboard) -> str:
    """Each grader's sentence and warnings as a Markdown list, escaped (names are untrusted)."""
    lines = [
        f"Leaderboard of {len(board.runs)} runs on {board.n_shared} shared samples; the page "
        "is the artifact gradewire/leaderboard.html.",
        "",
    ]
    for g in board.graders:
        lines.append(f"- **{_markdown_text(g.grader)}**: {_markdown_text(g.summary())}")
        lines += [f"  - warning: {_markdown_text(line)}" for line in g.judge_drift]
    return "\n".join(lines)[:5000]


def _markdown_text(text: str) -> str:
    """Plain text that Markdown shows as it is: HTML escaped, Markdown's marks backslashed."""
    return re.sub(r"([\\`*_\[\]#|~])", r"\\\1", html.escape(text, quote=False))


def _log_report(
    tracker: MlflowEvalTracker,
    kind: str,
    name: str,
    metrics: Mapping[str, float],
    graders: Sequence[str],
    html: str,
    data: Mapping[str, Any],
) -> list[str]:
    import mlflow

    with mlflow.start_run(run_name=name[:250]) as active:
        mlflow.set_tag("gradewire.report", kind)
        mlflow.log_metrics(metric_names(metrics, graders, prefix=f"{kind}/"))
        mlflow.log_text(html, f"gradewire/{kind}.html")
        mlflow.log_dict(dict(data), f"gradewire/{kind}.json")
    return [f"MLflow: {kind} logged as run {active.info.run_id} at {tracker.tracking_uri}"]


def metric_names(
    metrics: Mapping[str, float], graders: Sequence[str], *, prefix: str = ""
) -> dict[str, float]:
    """``metrics`` (``<prefix><grader>/...``) under names MLflow takes.

    Grader keys such as ``pass@1``, ``acc(strict)`` or ``f1+bleu`` are ordinary, and
    MLflow refuses them in a metric name: each grader key is cleaned once, by
    `MlflowSink`'s rule (`KeyCleaner`, which warns once per key and never lets two keys
    share a name), and every metric of that grader is logged under the clean key.
    """
    clean_grader = KeyCleaner("grader")
    clean = KeyCleaner("metric")
    # Longest first: a grader key may itself hold "/" and be the prefix of another.
    ordered = sorted(dict.fromkeys(graders), key=len, reverse=True)
    out: dict[str, float] = {}
    for key, value in metrics.items():
        name = key
        for grader in ordered:
            head = f"{prefix}{grader}/"
            if key.startswith(head):
                name = f"{prefix}{clean_grader(grader)}/{key[len(head) :]}"
                break
        out[clean(name)] = value
    return out


def _sources(run: EvalRun) -> dict[str, str]:
    kinds = {}
    for spec in run.config.get("graders", []):
        if isinstance(spec, Mapping) and isinstance(spec.get("key"), str):
            kinds[spec["key"]] = "LLM_JUDGE" if spec.get("type") in _JUDGE_TYPES else "CODE"
    return {key: kinds.get(key, "CODE") for key in run.spec_hashes}


def _params(run: EvalRun) -> dict[str, str]:
    data = run.config.get("data") or {}
    params = {
        "gradewire.graders": ", ".join(run.graders)[:6000],
        "gradewire.samples": str(len(run.records)),
        "gradewire.data": str(data.get("path"))[:6000],
        "gradewire.data_sha256": str(data.get("sha256")),
    }
    if run.cluster_key:
        params["gradewire.cluster_key"] = run.cluster_key
    # Which judge gave each grader's verdicts: its identity (several, when it changed).
    for key, facts in judge_facts(run).items():
        identities = list(facts["identities"]) or [facts["identity"]]
        params[f"gradewire.judge.{key}"] = ", ".join(str(i) for i in identities)[:6000]
    return params


def _log_trace(
    record: SampleRecord, spec_hashes: Mapping[str, str], sources: Mapping[str, str]
) -> str:
    import mlflow
    from mlflow.entities import AssessmentError, AssessmentSource

    turns = list(record.input.get("turns") or [])
    prompt = turns[:-1] if turns and turns[-1].get("role") == "assistant" else turns
    with mlflow.start_span(name="gradewire_sample", span_type="CHAIN") as span:
        span.set_inputs({"messages": prompt, "metadata": dict(record.metadata)})
        span.set_outputs({"completion": record.completion()})
        tags = {SAMPLE_TAG: record.id}
        for key, spec in spec_hashes.items():
            outcome = record.current(key, spec)
            if outcome is None:
                continue
            source = AssessmentSource(source_type=sources[key], source_id=f"gradewire:{key}")
            if outcome.status == "ok" and outcome.grade is not None:
                mlflow.log_feedback(
                    trace_id=span.trace_id,
                    name=key,
                    value=outcome.value,
                    rationale=outcome.grade.get("reasoning") or None,
                    source=source,
                    metadata={SPEC_HASH: spec, **judge_metadata(plain(outcome.grade))},
                    span_id=span.span_id,
                )
            elif outcome.status == "error":
                code, _, message = (outcome.message or "error").partition(": ")
                mlflow.log_feedback(
                    trace_id=span.trace_id,
                    name=key,
                    error=AssessmentError(
                        error_code=code[:100] or "error", error_message=message or code
                    ),
                    source=source,
                    metadata={SPEC_HASH: spec},
                    span_id=span.span_id,
                )
            else:  # an abstention is no score and no error: it is noted on the trace
                tags[f"gradewire.abstained.{key}"] = (outcome.message or "abstained")[:4000]
        mlflow.update_current_trace(
            tags=tags,
            metadata={
                SAMPLE_TAG: record.id,
                INPUT_HASH: record.input_hash,
                # compare checks that paired samples are the same question by it.
                PROMPT_HASH: record.prompt_hash,
            },
        )
    return str(span.trace_id)


def eval_tracker(folder: Path) -> MlflowEvalTracker:
    """The ``eval_tracker.mlflow`` entry point: an `MlflowEvalTracker` for ``folder``."""
    return MlflowEvalTracker(folder)
