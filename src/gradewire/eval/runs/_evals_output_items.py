"""OpenAI Evals runs as eval runs: a JSONL of a run's output items.

OpenAI's hosted Evals keep each graded item of a run as an output item, one per line as
``client.evals.runs.output_items.list`` returns them (``model_dump_json()`` of each):
``datasource_item_id``, ``datasource_item`` (the data row), ``sample`` (the model's
``input`` and ``output`` messages, its ``error`` if the call failed) and ``results``, one
per testing criterion with its ``name``, ``score`` and ``passed``.

As a run: a sample is one data item, id ``str(datasource_item_id)``; its thread is the
sample's input messages then the last output message as the completion, its metadata the
data row (the fields of its ``item`` when the row is held under ``item``, as Evals'
``{{item.x}}`` templates name them) with ``datasource_item_id``. A grader is a testing
criterion, keyed by its ``name``; its value is the result's ``score``, and ``passed`` is
kept as the grade's pass verdict, so statistics give the pass rate beside the mean score.
A result with no score but a verdict scores 1 or 0; a NaN score is an abstention; an item
whose model call failed (``sample.error``) is an error for each criterion it has no
result of: never a 0. The criteria's own definitions are not in the output items: two
files' criteria of one name and type are taken to be one grader.

As data (`output_item_rows`, for ``gradewire eval``): each item is a row of gradewire's
shape, to grade again with the eval's ``testing_criteria`` run locally: its id the
``datasource_item_id``, its metadata the data row (as above, OpenAI's ``item``), its prompt
the sample's input messages and its completion the last output message. The recorded
``results`` are not part of the row: read the same file as a run to hold the graded run
against them (`gradewire.eval.runs._recorded_agreement`).

The file is read as JSON: no import of openai.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from gradewire.core import InvalidInputError
from gradewire.eval.runs._eval_run import EvalRun
from gradewire.eval.runs._records import GradeOutcome, SampleRecord
from gradewire.eval.runs._row_shape import DataError, canonical_json
from gradewire.eval.runs._samples import prompt_hash
from gradewire.eval.runs._sources import GraderKeys

__all__ = ["is_evals_output_items", "output_item_rows", "read_evals_output_items"]

_FIX = (
    "pass a JSONL file of an OpenAI Evals run's output items, one per line as "
    "client.evals.runs.output_items.list returns them (item.model_dump_json())"
)
_SUFFIXES = (".jsonl", ".json", ".ndjson")


def _first_line(path: Path) -> str | None:
    """The first non-blank line, decoded alone: a bad byte further down is its line's fault."""
    try:
        with path.open("rb") as file:
            for raw in file:
                if raw.strip():
                    return raw.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return None


def is_evals_output_items(path: Path) -> bool:
    """Whether ``path`` is a JSONL file whose first line is an Evals run output item."""
    if path.suffix.lower() not in _SUFFIXES or not path.is_file():
        return False
    line = _first_line(path)
    if line is None:
        return False
    try:
        first = json.loads(line)
    except (ValueError, RecursionError):  # the JSONL reader says what is wrong with it
        return False
    return isinstance(first, dict) and (
        first.get("object") == "eval.run.output_item"
        or ("datasource_item_id" in first and "results" in first)
    )


def _text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
            else:
                parts.append(json.dumps(part, sort_keys=True, default=str))
        return "".join(parts)
    if content is None:
        return ""
    return json.dumps(content, sort_keys=True, default=str)


def _messages(value: Any, where: str, field: str) -> list[dict[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInputError(f"{where}: sample.{field} is not a list of messages; {_FIX}")
    out = []
    for message in value:
        if not isinstance(message, Mapping):
            raise InvalidInputError(f"{where}: a message of sample.{field} is not an object")
        out.append(
            {"role": str(message.get("role") or "user"), "content": _text(message.get("content"))}
        )
    return out


def _outcome(result: Mapping[str, Any], key: str, spec: str, where: str) -> GradeOutcome:
    score = result.get("score")
    passed = result.get("passed")
    verdict = passed if isinstance(passed, bool) else None
    info: dict[str, Any] = {} if verdict is None else {"passed": verdict}
    reasoning = None
    if isinstance(score, bool) or score is None:
        if verdict is None:
            return GradeOutcome("error", spec, None, f"{where}: result {key!r} has no score")
        value = float(verdict)
        reasoning = "no score recorded: the pass verdict scores 1 or 0"
    elif isinstance(score, (int, float)):
        value = float(score)
    else:
        return GradeOutcome("error", spec, None, f"not a number: {score!r}")
    if math.isnan(value):
        return GradeOutcome("abstained", spec, None, "the result's score is NaN")
    if not math.isfinite(value):
        return GradeOutcome("error", spec, None, f"not a finite number: {score!r}")
    grade = {
        "value": value,
        "grader_key": key,
        "reasoning": reasoning,
        "weight": 1.0,
        "children": [],
        "info": info,
    }
    return GradeOutcome("ok", spec, grade)


def _item_fields(item: Mapping[str, Any]) -> dict[str, Any]:
    """The item's data row as OpenAI's ``item`` namespace, with its ``datasource_item_id``."""
    found = item.get("datasource_item")
    row: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    inner = row.get("item")
    fields: Mapping[str, Any] = inner if isinstance(inner, Mapping) else row
    return {**fields, "datasource_item_id": item["datasource_item_id"]}


def _items(path: Path) -> Iterator[tuple[Any, str]]:
    """Each non-blank line of ``path`` decoded, or a `DataError` saying why it is not JSON."""
    try:
        file = path.open("rb")
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc}") from None
    with file:
        for number, raw in enumerate(file, 1):
            if not raw.strip():
                continue
            where = f"{path}:{number}"
            try:
                yield json.loads(raw.decode("utf-8")), where
            except UnicodeDecodeError as exc:
                yield DataError(f"{where} is not UTF-8 (byte {exc.start + 1}); {_FIX}"), where
            except json.JSONDecodeError as exc:
                yield DataError(f"{where} is not JSON ({exc.msg}); {_FIX}"), where
            except RecursionError:
                yield DataError(f"{where} is nested too deep to read; {_FIX}"), where
            except ValueError as exc:  # an integer longer than Python reads, and the like
                yield DataError(f"{where} cannot be read ({exc}); {_FIX}"), where


def output_item_rows(
    path: Path, prompt_key: str = "prompt", completion_key: str = "completion"
) -> Iterator[tuple[dict[str, Any] | DataError, str]]:
    """Each output item of ``path`` as a data row of gradewire's shape, with where it was.

    ``{"id", "prompt" (the input messages; absent when there are none), "completion" (the
    last output message's text), "metadata" (`_item_fields`)}``, the prompt and the
    completion under the names the data options give (`RowShape`). An item whose model call
    failed has no completion to grade: it is a `DataError` naming the failure, as is a
    line that is not an output item.
    """
    for item, where in _items(path):
        if isinstance(item, DataError):
            yield item, where
            continue
        if not isinstance(item, dict) or "datasource_item_id" not in item:
            yield DataError(f"{where} is not an output item (no datasource_item_id)"), where
            continue
        found = item.get("sample")
        sample: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        try:
            prompt = _messages(sample.get("input"), where, "input")
            output = _messages(sample.get("output"), where, "output")
        except InvalidInputError as exc:
            yield DataError(str(exc)), where
            continue
        if not output:
            error = sample.get("error")
            why = (
                f"its model call failed ({error.get('message') or error.get('code')})"
                if isinstance(error, Mapping) and (error.get("message") or error.get("code"))
                else "its sample has no output message"
            )
            yield (
                DataError(
                    f"{where}: item {item['datasource_item_id']!r}: {why}, so there is no "
                    "completion to grade; leave the item out of the file"
                ),
                where,
            )
            continue
        completion = output[-1]["content"]
        row: dict[str, Any] = {
            "id": str(item["datasource_item_id"]),
            "metadata": _item_fields(item),
        }
        if prompt:
            row[prompt_key] = prompt
            row[completion_key] = completion
        else:  # graded on the completion alone, as Evals' rows without input are
            row["messages"] = [{"role": "assistant", "content": completion}]
        yield row, where


def read_evals_output_items(path: Path) -> EvalRun:
    """The OpenAI Evals run whose output items ``path`` holds, one per line.

    Raises:
        InvalidInputError: A line that is not an output item, an item id used twice, or
            two results of one criterion on one item (the message names the line).
    """
    specs: dict[str, str] = {}
    graders: list[dict[str, Any]] = []
    keys = GraderKeys(str(path))
    records: list[SampleRecord] = []
    failed: dict[str, str] = {}
    seen: set[str] = set()
    runs: set[str] = set()
    evals: set[str] = set()
    models: set[str] = set()
    for item, where in _items(path):
        if isinstance(item, DataError):
            raise item
        if not isinstance(item, dict) or "datasource_item_id" not in item:
            raise InvalidInputError(
                f"{where} is not an output item (no datasource_item_id); {_FIX}"
            )
        sample_id = str(item["datasource_item_id"])
        if sample_id in seen:
            raise InvalidInputError(
                f"{where}: datasource_item_id {sample_id} is in the file twice; pass the "
                "output items of one run"
            )
        seen.add(sample_id)
        for name, bucket in (("run_id", runs), ("eval_id", evals)):
            if isinstance(item.get(name), str):
                bucket.add(item[name])
        found = item.get("sample")
        sample: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        if isinstance(sample.get("model"), str):
            models.add(sample["model"])
        turns = _messages(sample.get("input"), where, "input")
        output = _messages(sample.get("output"), where, "output")
        if output:
            turns.append({"role": "assistant", "content": output[-1]["content"]})
        metadata = _item_fields(item)
        outcomes: dict[str, GradeOutcome] = {}
        for result in item.get("results") or ():
            if not isinstance(result, Mapping) or not isinstance(result.get("name"), str):
                raise InvalidInputError(f"{where}: a result without a name; {_FIX}")
            name = result["name"]
            kind = str(result.get("type") or "")
            key = keys.claim(name, f"testing criterion {name!r}")
            if key in outcomes:
                raise InvalidInputError(
                    f"{where}: two results of the testing criterion {name!r} on one item"
                )
            if key not in specs:
                spec = {
                    "key": key,
                    "type": "openai_evals",
                    "criterion": name,
                    "criterion_type": kind,
                }
                specs[key] = hashlib.sha256(canonical_json(spec).encode()).hexdigest()[:16]
                graders.append(spec)
            outcomes[key] = _outcome(result, key, specs[key], where)
        error = sample.get("error")
        if isinstance(error, Mapping) and (error.get("message") or error.get("code")):
            failed[sample_id] = str(error.get("message") or error.get("code"))
        data = {"turns": turns, "metadata": metadata}
        records.append(
            SampleRecord(
                sample_id,
                data,
                hashlib.sha256(canonical_json(data).encode()).hexdigest()[:32],
                outcomes,
                prompt_hash(turns),
            )
        )
    if not records:
        raise InvalidInputError(f"{path} holds no output item; {_FIX}")
    records = [_with_errors(r, specs, failed.get(r.id)) for r in records]
    return EvalRun(
        name=path.stem,
        records=records,
        spec_hashes=specs,
        config={
            "source": "openai-evals",
            "log": str(path),
            "graders": graders,
            "eval_id": _one(evals),
            "run_id": _one(runs),
            "model": _one(models),
        },
    )


def _one(values: set[str]) -> str | list[str] | None:
    if not values:
        return None
    return next(iter(values)) if len(values) == 1 else sorted(values)


def _with_errors(record: SampleRecord, specs: Mapping[str, str], error: str | None) -> SampleRecord:
    """An item whose model call failed: an error for each criterion it has no result of."""
    if error is None:
        return record
    outcomes = dict(record.outcomes)
    for key, spec in specs.items():
        outcomes.setdefault(
            key, GradeOutcome("error", spec, None, f"the model call failed: {error}")
        )
    return SampleRecord(record.id, record.input, record.input_hash, outcomes, record.prompt_hash)
