"""MLflow runs as eval runs: `gradewire compare` takes an MLflow run id.

Each trace of the run is a sample: its id is the ``gradewire.sample_id`` tag (a run
gradewire logged) or a hash of the trace's request (any other run whose traces carry
Feedback, such as one of ``mlflow.genai.evaluate``); each Feedback is a grader's outcome.
A run gradewire logged carries the hashes compare checks: each sample's prompt hash and
input hash in the trace's metadata, each grader's spec hash in its Feedback's metadata,
and the grader specs in the ``gradewire/config.json`` artifact. Another run's are made
up: the prompt hash from the trace's request, one spec marker (``mlflow``) for all.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gradewire.eval import EvalRun, GradeOutcome, SampleRecord
from gradewire.eval.runs._folder import is_run
from gradewire.eval.runs._samples import prompt_hash
from gradewire_mlflow._eval import _fluent
from gradewire_mlflow._run import default_tracking_uri
from gradewire_mlflow._traces import INPUT_HASH, PROMPT_HASH, SAMPLE_TAG, SPEC_HASH

__all__ = ["read_mlflow_run"]

_RUN_ID = re.compile(r"^(?:runs:/)?([0-9a-f]{32})/?$")
# Feedback from another run is not tied to a gradewire spec: one marker for all of it.
MLFLOW_SPEC = "mlflow"


def _value(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value.strip().lower() in ("yes", "no", "pass", "fail"):
        return 1.0 if value.strip().lower() in ("yes", "pass") else 0.0
    return None


def _outcome(assessment: Any) -> GradeOutcome | None:
    feedback = getattr(assessment, "feedback", None)
    if feedback is None:
        return None  # an expectation (a label), not a grade
    spec = (getattr(assessment, "metadata", None) or {}).get(SPEC_HASH)
    spec = spec if isinstance(spec, str) and spec else MLFLOW_SPEC
    error = getattr(feedback, "error", None)
    if error is not None:
        message = f"{error.error_code}: {error.error_message or ''}"
        return GradeOutcome("error", spec, None, message)
    value = _value(feedback.value)
    if value is None:
        return GradeOutcome("error", spec, None, f"not a number: {feedback.value!r}")
    grade = {
        "value": value,
        "grader_key": assessment.name,
        "reasoning": assessment.rationale,
        "weight": 1.0,
        "children": [],
        "info": {},
    }
    return GradeOutcome("ok", spec, grade)


def _input(trace: Any) -> dict[str, Any]:
    request = trace.data.request if trace.data is not None else None
    response = trace.data.response if trace.data is not None else None
    inputs = json.loads(request) if isinstance(request, str) else request
    outputs = json.loads(response) if isinstance(response, str) else response
    turns: list[dict[str, str]] = []
    metadata: dict[str, Any] = {}
    if isinstance(inputs, Mapping) and isinstance(inputs.get("messages"), list):
        turns = [dict(turn) for turn in inputs["messages"]]
        metadata = dict(inputs.get("metadata") or {})
    elif inputs is not None:
        turns = [{"role": "user", "content": json.dumps(inputs, sort_keys=True, default=str)}]
    if isinstance(outputs, Mapping) and "completion" in outputs:
        turns.append({"role": "assistant", "content": str(outputs["completion"])})
    elif outputs is not None:
        turns.append({"role": "assistant", "content": json.dumps(outputs, default=str)})
    return {"turns": turns, "metadata": metadata}


def read_mlflow_run(ref: str) -> EvalRun | None:
    """The ``eval_source.mlflow`` entry point: the MLflow run ``ref`` names, or None.

    The tracking store is ``MLFLOW_TRACKING_URI`` (default ``./mlflow.db``).
    """
    match = _RUN_ID.match(ref.strip())
    if match is None:
        return None
    import mlflow
    from mlflow import MlflowClient

    uri = os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()
    client = MlflowClient(uri)
    run_id = match.group(1)
    try:
        info = client.get_run(run_id).info
    except Exception:  # not a run of this store
        return None
    with _fluent(uri):
        # Newest first, so a sample logged twice keeps its latest trace.
        traces = mlflow.search_traces(
            run_id=run_id,
            return_type="list",
            order_by=["timestamp_ms DESC"],
            locations=[info.experiment_id],
        )
    records: list[SampleRecord] = []
    specs: dict[str, str] = {}
    seen: set[str] = set()
    for trace in traces:
        data = _input(trace)
        metadata = _trace_metadata(trace)
        sample_id = trace.info.tags.get(SAMPLE_TAG)
        if sample_id is None:
            sample_id = (
                "h"
                + hashlib.sha256(
                    json.dumps(data["turns"][:-1], sort_keys=True).encode()
                ).hexdigest()[:16]
            )
        if sample_id in seen:
            continue  # an older trace of a sample logged again
        seen.add(sample_id)
        outcomes: dict[str, GradeOutcome] = {}
        for assessment in trace.info.assessments or ():
            outcome = _outcome(assessment)
            if outcome is not None:
                outcomes[assessment.name] = outcome
                specs.setdefault(assessment.name, outcome.spec_hash)  # the newest trace's
        prompt = metadata.get(PROMPT_HASH)
        records.append(
            SampleRecord(
                sample_id,
                data,
                str(metadata.get(INPUT_HASH) or ""),
                outcomes,
                prompt if isinstance(prompt, str) and prompt else prompt_hash(data["turns"]),
            )
        )
    records.reverse()  # back to the order they were logged in
    name = info.run_name or run_id
    config = _logged_config(client, run_id)
    return EvalRun(
        name=f"{name} ({run_id[:8]})",
        records=records,
        spec_hashes=specs,
        # Which store the run is of: a leaderboard tags it there, and only there.
        config={**config, "mlflow_run_id": run_id, "mlflow_tracking_uri": uri},
        cluster_key=config.get("cluster_key")
        if isinstance(config.get("cluster_key"), str)
        else None,
    )


def _trace_metadata(trace: Any) -> dict[str, Any]:
    info = trace.info
    metadata = getattr(info, "trace_metadata", None) or getattr(info, "request_metadata", None)
    return dict(metadata or {})


def _logged_config(client: Any, run_id: str) -> dict[str, Any]:
    """The run folder's config gradewire logged as an artifact, without its sample list.

    Empty for a run that has none (not logged by gradewire, or unreadable).
    """
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = client.download_artifacts(run_id, "gradewire/config.json", folder)
            config = json.loads(Path(path).read_text(encoding="utf-8"))
    except Exception:  # not a run gradewire logged, or an unreadable artifact
        return {}
    if not is_run(config):
        return {}
    return {k: v for k, v in config.items() if k not in ("sample_ids", "input_hashes")}
