"""Eval traces written straight to MLflow's trace store, many at a time.

MLflow's fluent tracing exports each trace on its own through a background queue: a
span request and a trace request per sample, the queue polling once a second. An eval
knows every trace up front, so each is built on the client (one root span holding the
conversation and the completion, the trace info holding the tags, the metadata and every
Feedback) and sent with the two calls MLflow's own exporter makes, on MLflow's
`TracingClient`: ``start_trace`` (the trace info with its assessments, one transaction
per trace), several in flight, and ``log_spans`` for a hundred traces at once (one OTLP
request), then links those hundred to the run in one request, as ``mlflow.genai.evaluate``
does. The trace info is written first, so the spans only update it. What is written
is what the fluent API writes (the same span attributes, metadata and previews), so
`mlflow.search_traces` and MLflow's evaluation views read it alike.

Concurrency stays well under the server's database pool (MLflow's default is 5
connections plus 10 overflow): past it requests wait, then fail after 30 seconds.
"""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from gradewire.eval import SampleRecord
from gradewire.eval.runs._judge_facts import served_name
from gradewire.eval.runs._records import plain

__all__ = ["SpansUnsupportedError", "TraceWriter", "judge_metadata"]

SAMPLE_TAG = "gradewire.sample_id"
INPUT_HASH = "gradewire.input_hash"
PROMPT_HASH = "gradewire.prompt_hash"
SPEC_HASH = "gradewire.spec_hash"
SPAN_NAME = "gradewire_sample"
SPANS_PER_REQUEST = 100  # also the most traces MLflow links to a run in one request
IN_FLIGHT = 8  # start_trace requests at once against a tracking server
_METADATA_CHARS = 250  # what MLflow keeps of the inputs and outputs in a trace's metadata
_HTTP = ("http", "https")


class SpansUnsupportedError(Exception):
    """The store takes trace infos but not spans (a server before MLflow 3.4, a file store)."""


def _truncate(text: str) -> str:
    return text if len(text) <= _METADATA_CHARS else text[: _METADATA_CHARS - 3] + "..."


def _id(bits: int) -> int:
    return secrets.randbits(bits) or 1  # an all-zero OTel id is invalid


class TraceWriter:
    """Writes eval samples as MLflow traces with Feedback, in batches."""

    def __init__(
        self,
        tracking_uri: str,
        experiment_id: str,
        run_id: str,
        spec_hashes: Mapping[str, str],
        sources: Mapping[str, str],
    ) -> None:
        """Set up the writer (call inside the fluent context pointed at ``tracking_uri``).

        Args:
            tracking_uri: The MLflow tracking URI.
            experiment_id: The experiment the traces go to.
            run_id: The run the traces belong to (``mlflow.sourceRun``).
            spec_hashes: Each grader's current spec hash.
            sources: Each grader's assessment source type (``CODE`` or ``LLM_JUDGE``).
        """
        from mlflow import MlflowClient
        from mlflow.tracing.client import TracingClient
        from mlflow.tracing.constant import TRACE_SCHEMA_VERSION, TRACE_SCHEMA_VERSION_KEY
        from mlflow.tracing.utils.environment import resolve_env_metadata

        self._client = TracingClient(tracking_uri)
        self._runs = MlflowClient(tracking_uri)
        self.run_id = run_id
        self.experiment_id = experiment_id
        self.spec_hashes = dict(spec_hashes)
        self.sources = dict(sources)
        self._metadata = {
            **resolve_env_metadata(),
            TRACE_SCHEMA_VERSION_KEY: str(TRACE_SCHEMA_VERSION),
            "mlflow.sourceRun": run_id,
        }
        remote = tracking_uri.partition(":")[0].lower() in _HTTP
        # An in-process store is one SQLite writer: threads would only queue on its lock.
        self._in_flight = IN_FLIGHT if remote else 1

    def build(self, record: SampleRecord) -> tuple[Any, Any]:
        """The trace info (tags, metadata, Feedback) and root span of one sample."""
        from mlflow.entities import (
            Assessment,
            AssessmentError,
            AssessmentSource,
            Feedback,
            Span,
            TraceData,
            TraceInfo,
            TraceLocation,
            TraceState,
        )
        from mlflow.tracing.utils.truncation import set_request_response_preview

        turns = list(record.input.get("turns") or [])
        prompt = turns[:-1] if turns and turns[-1].get("role") == "assistant" else turns
        inputs = json.dumps(
            {"messages": prompt, "metadata": dict(record.metadata)}, ensure_ascii=False, default=str
        )
        outputs = json.dumps({"completion": record.completion()}, ensure_ascii=False)
        otel_trace, otel_span = _id(128), _id(64)
        trace_id = f"tr-{otel_trace:032x}"
        span_id = f"{otel_span:016x}"
        now_ns = time.time_ns()
        span = Span.from_dict(
            {
                # Span dicts carry OTel ids in base64, as MLflow serialises them.
                "trace_id": base64.b64encode(otel_trace.to_bytes(16, "big")).decode(),
                "span_id": base64.b64encode(otel_span.to_bytes(8, "big")).decode(),
                "parent_span_id": None,
                "name": SPAN_NAME,
                "start_time_unix_nano": now_ns,
                "end_time_unix_nano": now_ns,
                "events": [],
                "status": {"code": "STATUS_CODE_OK", "message": ""},
                "attributes": {
                    "mlflow.traceRequestId": json.dumps(trace_id),
                    "mlflow.spanType": json.dumps("CHAIN"),
                    "mlflow.spanInputs": inputs,
                    "mlflow.spanOutputs": outputs,
                },
            }
        )
        tags = {"mlflow.traceName": SPAN_NAME, SAMPLE_TAG: record.id}
        feedback: list[Assessment] = []
        for key, spec in self.spec_hashes.items():
            outcome = record.current(key, spec)
            if outcome is None:
                continue
            common: dict[str, Any] = {
                "name": key,
                "source": AssessmentSource(
                    source_type=self.sources[key], source_id=f"gradewire:{key}"
                ),
                "trace_id": trace_id,
                "span_id": span_id,
                "metadata": {SPEC_HASH: spec},
            }
            if outcome.status == "ok" and outcome.grade is not None:
                # Which judge gave the verdict, and which model answered.
                common["metadata"].update(judge_metadata(plain(outcome.grade)))
                feedback.append(
                    Feedback(
                        value=outcome.value,
                        rationale=outcome.grade.get("reasoning") or None,
                        **common,
                    )
                )
            elif outcome.status == "error":
                code, _, message = (outcome.message or "error").partition(": ")
                error = AssessmentError(
                    error_code=code[:100] or "error", error_message=message or code
                )
                feedback.append(Feedback(error=error, **common))
            else:  # an abstention is no score and no error: it is noted on the trace
                tags[f"gradewire.abstained.{key}"] = (outcome.message or "abstained")[:4000]
        info = TraceInfo(
            trace_id=trace_id,
            trace_location=TraceLocation.from_experiment_id(self.experiment_id),
            request_time=now_ns // 1_000_000,
            state=TraceState.OK,
            execution_duration=0,
            trace_metadata={
                **self._metadata,
                "mlflow.traceInputs": _truncate(inputs),
                "mlflow.traceOutputs": _truncate(outputs),
                SAMPLE_TAG: record.id,
                INPUT_HASH: record.input_hash,
                # compare checks that paired samples are the same question by it.
                PROMPT_HASH: record.prompt_hash,
            },
            tags=tags,
            assessments=feedback,
        )
        set_request_response_preview(info, TraceData(spans=[span]))
        return info, span

    def write(
        self, records: Sequence[SampleRecord], done: Callable[[SampleRecord, str], None]
    ) -> None:
        """Write one trace per record; ``done(record, trace_id)`` once its trace is stored.

        On a failure, the traces whose info and spans were both stored are still reported
        through ``done``, and those half written are deleted (as far as the store lets).

        Raises:
            SpansUnsupportedError: The store takes no spans; nothing was kept.
            Exception: What MLflow raised (after its own retries) for a trace or a span
                request.
        """
        built = [(record, *self.build(record)) for record in records]
        groups = [built[i : i + SPANS_PER_REQUEST] for i in range(0, len(built), SPANS_PER_REQUEST)]
        started: list[tuple[Future[Any], list[tuple[SampleRecord, Any, Any]]]] = []
        with ThreadPoolExecutor(self._in_flight, thread_name_prefix="gradewire-mlflow") as pool:
            try:
                for number, group in enumerate(groups):
                    ids = [info.trace_id for _, info, _ in group]
                    infos = [pool.submit(self._client.start_trace, info) for _, info, _ in group]
                    wait(infos)
                    spans = [span for _, _, span in group]
                    try:
                        _raise_first(infos)
                        if number == 0:
                            self._first_spans(spans)
                            self._link(ids)
                    except BaseException:
                        self._delete(ids)
                        raise
                    # The spans of one group are sent while the next group's infos are.
                    stored = _finished() if number == 0 else pool.submit(self._store, spans, ids)
                    started.append((stored, group))
            finally:
                wait([future for future, _ in started])
                orphans = []
                for future, group in started:
                    if future.exception() is None:
                        for record, info, _ in group:
                            done(record, info.trace_id)
                    else:
                        orphans += [info.trace_id for _, info, _ in group]
                if orphans:
                    self._delete(orphans)
        for future, _ in started:
            future.result()

    def _log_spans(self, spans: list[Any]) -> None:
        self._client.log_spans(self.experiment_id, spans)

    def _link(self, trace_ids: list[str]) -> None:
        # What genai.evaluate does too: the run's evaluation views list linked traces.
        self._runs.link_traces_to_run(trace_ids, self.run_id)

    def _store(self, spans: list[Any], trace_ids: list[str]) -> None:
        self._log_spans(spans)
        self._link(trace_ids)

    def _delete(self, trace_ids: list[str]) -> None:
        with contextlib.suppress(Exception):  # the store is failing already
            for start in range(0, len(trace_ids), 100):
                self._client.delete_traces(
                    self.experiment_id, trace_ids=trace_ids[start : start + 100]
                )

    def _first_spans(self, spans: list[Any]) -> None:
        """The first span request, which tells whether the store takes spans at all."""
        try:
            self._log_spans(spans)
        except NotImplementedError as exc:
            raise SpansUnsupportedError(str(exc)) from exc
        except Exception as exc:
            if "span logging is not supported" in str(exc):
                raise SpansUnsupportedError(str(exc)) from exc
            raise


def _raise_first(futures: Sequence[Future[Any]]) -> None:
    for future in futures:
        future.result()


def _finished() -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(None)
    return future


def judge_metadata(grade: Mapping[str, Any]) -> dict[str, str]:
    """The judge identity and served model a grade recorded, as feedback metadata."""
    info = grade.get("info")
    judge = info.get("judge") if isinstance(info, Mapping) else None
    if not isinstance(judge, Mapping):
        return {}
    out = {}
    if isinstance(judge.get("identity"), str):
        out["gradewire.judge_identity"] = judge["identity"]
    served = [served_name(e) for e in judge.get("served") or () if isinstance(e, Mapping)]
    if served:
        out["gradewire.served_model"] = ", ".join(served)[:1000]
    return out
