"""What the reward server reads and answers, without the HTTP framework.

Requests are checked here and turned into (grader, threads); grading outcomes are turned
into JSON-ready answers. A bad request raises `RequestError` with the HTTP status and a
message that says what is wrong.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gradewire.core._errors import GradewireError, IgnoreGradeException, InvalidInputError
from gradewire.core._grade import Grade
from gradewire.core._grader import BaseGrader
from gradewire.core._table import Table
from gradewire.core._thread import StringThread
from gradewire.helpers._special_tokens import strip_end_tokens

__all__ = [
    "Outcome",
    "RequestError",
    "batch_request",
    "grade_request",
    "jsonable",
    "logs_answer",
    "openrlhf_answer",
    "openrlhf_request",
    "outcome_answer",
    "pick_grader",
]

Outcome = Grade | Exception


class RequestError(GradewireError):
    """A request the server cannot serve: answered with ``status`` and the message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def pick_grader(graders: Mapping[str, BaseGrader], name: object) -> BaseGrader:
    """The grader a request names, or the only one when it names none."""
    if name is None:
        if len(graders) == 1:
            return next(iter(graders.values()))
        raise RequestError(
            422,
            f"this server hosts {len(graders)} graders ({', '.join(graders)}); name one in "
            "'grader' (or ?grader= for /get_reward and /verify)",
        )
    if not isinstance(name, str):
        raise RequestError(422, f"'grader' must be a string, not {type(name).__name__}")
    grader = graders.get(name)
    if grader is None:
        raise RequestError(
            422, f"no grader {name!r} on this server; it hosts: {', '.join(graders)}"
        )
    return grader


def _object(data: object, endpoint: str, fields: Sequence[str]) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise RequestError(
            422,
            f"{endpoint} takes a JSON object with {', '.join(fields)}, not a JSON "
            f"{_json_type(data)}",
        )
    unknown = [name for name in data if name not in fields]
    if unknown:
        raise RequestError(
            422,
            f"unknown field {unknown[0]!r} in a {endpoint} request; it takes: {', '.join(fields)}",
        )
    return data


def _thread(raw: object, where: str) -> StringThread:
    if not isinstance(raw, Mapping):
        raise RequestError(
            422,
            f"{where} must be an object as written by StringThread.to_dict() "
            f"({{'turns': [{{'role': ..., 'content': ...}}], 'metadata': {{}}}}), not a JSON "
            f"{_json_type(raw)}",
        )
    turns = raw.get("turns")
    if "turns" in raw and not isinstance(turns, list):
        raise RequestError(
            422,
            f"{where}: 'turns' must be a list of {{'role': ..., 'content': ...}} objects, not "
            f"a JSON {_json_type(turns)}",
        )
    try:
        return StringThread.from_dict(raw)
    except InvalidInputError as exc:
        raise RequestError(422, f"{where}: {exc}") from None


def grade_request(
    data: object, graders: Mapping[str, BaseGrader]
) -> tuple[BaseGrader, StringThread]:
    """Read a ``/v1/grade`` body: ``{"grader": key (optional), "thread": {...}}``."""
    body = _object(data, "/v1/grade", ("grader", "thread"))
    if "thread" not in body:
        raise RequestError(422, "a /v1/grade request needs 'thread' (StringThread.to_dict())")
    grader = pick_grader(graders, body.get("grader"))
    return grader, _thread(body["thread"], "'thread'")


def batch_request(
    data: object, graders: Mapping[str, BaseGrader], max_batch: int
) -> tuple[BaseGrader, list[StringThread]]:
    """Read a ``/v1/grade_batch`` body: ``{"grader": key (optional), "threads": [...]}``."""
    body = _object(data, "/v1/grade_batch", ("grader", "threads"))
    raw = body.get("threads")
    if not isinstance(raw, list):
        raise RequestError(
            422, "a /v1/grade_batch request needs 'threads': a list of StringThread.to_dict()"
        )
    _check_size(len(raw), max_batch)
    grader = pick_grader(graders, body.get("grader"))
    return grader, [_thread(item, f"threads[{i}]") for i, item in enumerate(raw)]


def openrlhf_request(
    data: object, max_batch: int, label_key: str = "label"
) -> tuple[list[StringThread], list[bool]]:
    """Read OpenRLHF's ``{"query": [...], "prompts": [...], "labels": [...]}``.

    Each thread is ``[("user", prompt), ("assistant", response)]`` with the label in
    ``metadata[label_key]`` (``"label"`` unless the server was started with another
    ``--label-key``, such as ``answer`` for graders that read ``metadata["answer"]``). The
    response is ``query[len(prompt):]`` when the query starts with the prompt, else the
    whole query (flagged in the second list), with a trailing end-of-turn marker such as
    ``</s>`` cut off (OpenRLHF decodes with special tokens kept). Other fields (OpenRLHF
    forks send more) are ignored.
    """
    if not isinstance(data, Mapping):
        raise RequestError(
            422,
            f"/get_reward takes a JSON object with 'query', 'prompts' and 'labels', not "
            f"a JSON {_json_type(data)}",
        )
    query = data.get("query")
    if not isinstance(query, list) or not all(isinstance(q, str) for q in query):
        raise RequestError(422, "'query' must be a list of strings (prompt + response each)")
    _check_size(len(query), max_batch)
    prompts = data.get("prompts")
    if prompts is None:
        prompts = [""] * len(query)
    elif not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
        raise RequestError(422, "'prompts' must be a list of strings, one per query")
    labels = data.get("labels")
    if labels is not None and not isinstance(labels, list):
        raise RequestError(422, "'labels' must be a list, one label per query, or null")
    for name, values in (("prompts", prompts), ("labels", labels)):
        if values is not None and len(values) != len(query):
            raise RequestError(
                422,
                f"'{name}' has {len(values)} items for {len(query)} queries; send one per query",
            )
    threads: list[StringThread] = []
    mismatched: list[bool] = []
    for i, (text, prompt) in enumerate(zip(query, prompts, strict=True)):
        matches = text.startswith(prompt)
        # OpenRLHF decodes with special tokens kept: cut the end marker off the response.
        response = strip_end_tokens(text[len(prompt) :] if matches else text)
        metadata = {} if labels is None else {label_key: labels[i]}
        threads.append(StringThread([("user", prompt), ("assistant", response)], metadata))
        mismatched.append(not matches)
    return threads, mismatched


def _check_size(count: int, max_batch: int) -> None:
    if count > max_batch:
        raise RequestError(
            413,
            f"a batch of {count} samples is over this server's limit of {max_batch}; "
            "send smaller batches, or start the server with a larger --max-batch",
        )


def outcome_answer(outcome: Outcome) -> dict[str, Any]:
    """``{"grade": Grade.to_dict() | None, "error": str | None, "abstained": bool}``."""
    if isinstance(outcome, Grade):
        return {"grade": jsonable(outcome.to_dict()), "error": None, "abstained": False}
    if isinstance(outcome, IgnoreGradeException):
        return {"grade": None, "error": outcome.reason, "abstained": True}
    return {"grade": None, "error": f"{type(outcome).__name__}: {outcome}", "abstained": False}


def openrlhf_answer(
    outcomes: Sequence[Outcome], mismatched: Sequence[bool], failure_value: float
) -> dict[str, Any]:
    """OpenRLHF's ``{"rewards", "scores", "extra_logs"}``, plus ``errors``.

    A sample that abstained or failed gets ``failure_value`` and is flagged in
    ``extra_logs`` (per-sample 0/1 lists, as OpenRLHF logs them): ``reward_abstained``,
    ``reward_failed``, ``prompt_not_in_query``. ``errors`` holds each sample's reason or None.
    """
    rewards: list[float] = []
    abstained: list[float] = []
    failed: list[float] = []
    errors: list[str | None] = []
    for outcome in outcomes:
        if isinstance(outcome, Grade):
            rewards.append(outcome.value)
            abstained.append(0.0)
            failed.append(0.0)
            errors.append(None)
            continue
        rewards.append(failure_value)
        skipped = isinstance(outcome, IgnoreGradeException)
        abstained.append(1.0 if skipped else 0.0)
        failed.append(0.0 if skipped else 1.0)
        errors.append(outcome_answer(outcome)["error"])
    return {
        "rewards": rewards,
        "scores": list(rewards),
        "extra_logs": {
            "reward_abstained": abstained,
            "reward_failed": failed,
            "prompt_not_in_query": [1.0 if m else 0.0 for m in mismatched],
        },
        "errors": errors,
    }


def logs_answer(
    graders: Iterable[BaseGrader], *, clear: bool, max_bytes: int | None = None
) -> dict[str, Any]:
    """Every grader's `get_logs()`, tables as `Table.to_dict()`.

    With ``max_bytes``, each table keeps its newest rows whose JSON fits in an equal share
    of ``max_bytes``; how many rows each table left out is under ``"rows_left_out"``.
    """
    answer: dict[str, Any] = {}
    tables: list[tuple[str, str, dict[str, Any]]] = []
    for grader in graders:
        values: dict[str, Any] = {}
        for key, value in grader.get_logs(clear=clear).items():
            if isinstance(value, Table):
                table = jsonable(value.to_dict())
                tables.append((grader.grader_key, key, table))
                values[key] = table
            else:
                values[key] = jsonable(value)
        answer[grader.grader_key] = values
    result: dict[str, Any] = {"graders": answer}
    if max_bytes is not None and tables:
        left_out: dict[str, dict[str, int]] = {}
        share = max_bytes // len(tables)
        for grader_key, key, table in tables:
            rows = table["data"]
            kept = _newest_rows(rows, share)
            if kept < len(rows):
                table["data"] = rows[len(rows) - kept :]
                left_out.setdefault(grader_key, {})[key] = len(rows) - kept
        if left_out:
            result["rows_left_out"] = left_out
    return result


def _newest_rows(rows: Sequence[Any], budget: int) -> int:
    """How many of the last ``rows`` fit in ``budget`` bytes of JSON."""
    used = 0
    for kept, row in enumerate(reversed(rows)):
        used += len(json.dumps(row, ensure_ascii=False).encode("utf-8", "replace")) + 1
        if used > budget:
            return kept
    return len(rows)


def jsonable(value: Any) -> Any:
    """``value`` as strict JSON data: NaN and inf become None, other objects their str."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "__float__") and not isinstance(value, (bytes, str)):
        try:
            return jsonable(float(value))  # numpy numbers
        except (TypeError, ValueError):
            pass
    return str(value)


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else type(value).__name__
