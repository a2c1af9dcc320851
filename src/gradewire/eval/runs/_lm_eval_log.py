"""lm-eval's per-sample logs as an eval run: what ``lm_eval --log_samples`` writes.

lm-eval writes one ``samples_<task>_<date>.jsonl`` per task of a run into
``<output_path>/<model>/``, beside ``results_<date>.json``. Each line is one document under
one filter: its ``doc_id``, the ``doc``, the ``target``, the requests' ``arguments``, the
``filtered_resps`` and, named by ``metrics``, each metric's value on that document.

As a run: a sample is one document of one task, id ``<task>/<doc_id>``; a grader is one
metric under one filter of one task, key ``<task>/<metric>,<filter>`` (the names lm-eval's
results use; two names that make one key, as a metric or filter name holding a comma can,
are refused). The prompt is the first request's context, so compare's prompt check holds
two runs to the same documents with the same few-shot context. The completion is the
filtered response when every filter gives the same one, else the model's own response
(``resps``), which every filter's grader scored a part of; each filter's response is kept
in the metadata under ``filtered_resps``. Metric values that are not
one number per document (the inputs of corpus-level metrics such as ``bleu``, which lm-eval
logs as tuples) are not per-sample scores: those metrics are left out and listed in the
run's config under ``not_compared``. A ``null`` or NaN value is an abstention, any other
value that is not a finite number an error: never a 0.

The files are read as JSON: no import of lm-eval.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradewire.core import InvalidInputError
from gradewire.eval.runs._eval_run import EvalRun
from gradewire.eval.runs._records import GradeOutcome, SampleRecord
from gradewire.eval.runs._row_shape import canonical_json
from gradewire.eval.runs._samples import prompt_hash
from gradewire.eval.runs._sources import GraderKeys

__all__ = ["SAMPLES_FILE", "is_lm_eval_log", "read_lm_eval_run"]

SAMPLES_FILE = re.compile(r"^samples_(?P<task>.+)_(?P<date>[^_]+)\.jsonl$")
"""The name lm-eval gives a task's sample log: ``samples_<task>_<date>.jsonl``."""

# Fields lm-eval writes on every line; any other field is a metric's value.
_LINE_FIELDS = frozenset(
    {
        "doc_id",
        "doc",
        "target",
        "arguments",
        "resps",
        "filtered_resps",
        "filter",
        "metrics",
        "doc_hash",
        "prompt_hash",
        "target_hash",
    }
)
# Deeper than any log lm-eval writes, and shallow enough for every recursive reader after.
_MAX_DEPTH = 100
_FIX = (
    "pass the samples_<task>_<date>.jsonl files lm-eval writes with --log_samples, or the "
    "folder that holds those of one run"
)


@dataclass(frozen=True)
class _Line:
    task: str
    doc_id: str
    filter: str
    data: Mapping[str, Any]
    where: str


def _samples_files(path: Path) -> list[Path] | None:
    """The sample logs ``path`` names (a file, or a folder of one run), or None."""
    if path.is_file():
        return [path] if SAMPLES_FILE.match(path.name) else None
    if not path.is_dir():
        return None
    files = sorted(p for p in path.glob("samples_*.jsonl") if SAMPLES_FILE.match(p.name))
    if not files:
        # lm-eval writes into a folder per model under --output_path.
        files = sorted(p for p in path.glob("*/samples_*.jsonl") if SAMPLES_FILE.match(p.name))
    return files or None


def is_lm_eval_log(path: Path) -> bool:
    """Whether ``path`` is an lm-eval sample log, or a folder holding some."""
    return _samples_files(path) is not None


def read_lm_eval_run(path: Path) -> EvalRun:
    """The run lm-eval logged in ``path``: a samples file, or the folder of one run.

    Raises:
        InvalidInputError: ``path`` holds no lm-eval sample log, the logs of several runs
            (several dates), or a malformed line (the message names the file and line).
    """
    files = _samples_files(path)
    if files is None:
        raise InvalidInputError(f"{path} holds no lm-eval sample log; {_FIX}")
    dates = sorted({_match(f).group("date") for f in files})
    if len(dates) > 1:
        raise InvalidInputError(
            f"{path} holds the sample logs of {len(dates)} lm-eval runs (dates "
            f"{', '.join(dates)}); pass one samples_<task>_<date>.jsonl file, or a folder "
            "that holds one run's"
        )
    tasks = [_match(f).group("task") for f in files]
    if len(set(tasks)) != len(tasks):
        raise InvalidInputError(f"{path} holds two sample logs of one task; {_FIX}")
    results = _results(files[0].parent / f"results_{dates[0]}.json")
    lines = [line for file in files for line in _lines(file, _match(file).group("task"))]
    return _run(path, files, lines, results)


def _match(file: Path) -> re.Match[str]:
    match = SAMPLES_FILE.match(file.name)
    assert match is not None
    return match


def _lines(file: Path, task: str) -> Iterator[_Line]:
    try:
        handle = file.open(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"{file}: cannot be read ({exc})") from None
    with handle:
        for number, text in enumerate(handle, 1):
            where = f"{file}:{number}"
            if not text.strip():
                continue
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise InvalidInputError(
                    f"{where}: not a JSON line ({exc}); the file is not an lm-eval sample "
                    f"log as --log_samples writes it: {_FIX}"
                ) from None
            except RecursionError:
                data = None  # refused just below, as any line nested too deeply
            if data is None or _too_deep(data):
                raise InvalidInputError(
                    f"{where}: the line is nested more than {_MAX_DEPTH} levels deep, which "
                    f"no lm-eval sample log is; {_FIX}"
                )
            if not isinstance(data, dict) or "doc_id" not in data:
                raise InvalidInputError(
                    f"{where}: a line of an lm-eval sample log is an object with a 'doc_id'; {_FIX}"
                )
            doc_id = data["doc_id"]
            if isinstance(doc_id, bool) or not isinstance(doc_id, (int, str)):
                raise InvalidInputError(f"{where}: 'doc_id' must be an integer, not {doc_id!r}")
            filter_name = data.get("filter", "none")
            if not isinstance(filter_name, str):
                raise InvalidInputError(f"{where}: 'filter' must be a string")
            yield _Line(task, str(doc_id), filter_name, data, where)


def _too_deep(data: Any) -> bool:
    """Whether ``data`` nests lists and objects more than ``_MAX_DEPTH`` deep (no recursion)."""
    level: list[Any] = [data]
    for _ in range(_MAX_DEPTH + 1):
        level = [
            child
            for node in level
            if isinstance(node, (dict, list))
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return False
    return True


def _results(file: Path) -> Mapping[str, Any]:
    """lm-eval's ``results_<date>.json`` beside the samples (empty when absent or unreadable).

    Raises:
        InvalidInputError: It is nested too deeply to be lm-eval's.
    """
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    except RecursionError:
        data = None
    if data is None or _too_deep(data):
        raise InvalidInputError(
            f"{file}: nested more than {_MAX_DEPTH} levels deep, which lm-eval's results "
            "are not; move it away to read the sample logs without it"
        )
    return data if isinstance(data, dict) else {}


def _samples_in_data(results: Mapping[str, Any], tasks: Sequence[str], where: Path) -> int | None:
    """Documents lm-eval evaluated, from ``n-samples`` (None: it does not say for every task).

    Raises:
        InvalidInputError: ``n-samples`` says it in a form lm-eval does not write.
    """
    counts = results.get("n-samples")
    if counts is None:
        return None
    if not isinstance(counts, dict):
        raise InvalidInputError(
            f"{where}: 'n-samples' must map each task to its counts, not {_short(counts)}; "
            "move the results file away to read the sample logs without it"
        )
    total = 0
    for task in tasks:
        entry = counts.get(task)
        if entry is None:
            return None
        effective = entry.get("effective") if isinstance(entry, dict) else None
        if (
            not isinstance(entry, dict)
            or isinstance(effective, bool)
            or not isinstance(effective, int)
            or effective < 0
        ):
            raise InvalidInputError(
                f"{where}: 'n-samples' of task {task!r} must hold 'effective', a count of "
                f"documents, not {_short(entry)}; move the results file away to read the "
                "sample logs without it"
            )
        total += effective
    return total


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _metric_names(line: _Line) -> list[str]:
    names = line.data.get("metrics")
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        return names
    # Logs written before lm-eval listed its metrics: every other field is one.
    return [name for name in line.data if name not in _LINE_FIELDS]


def _is_corpus_input(value: Any) -> bool:
    # bleu, chrf, ter, perplexities: lm-eval logs each document's part of a corpus figure.
    return isinstance(value, (list, tuple, dict))


def _outcome(value: Any, key: str, spec: str) -> GradeOutcome:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return GradeOutcome("abstained", spec, None, "lm-eval logged no value")
    if isinstance(value, bool):
        value = float(value)
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return GradeOutcome("error", spec, None, f"not a finite number: {value!r}")
    grade = {
        "value": float(value),
        "grader_key": key,
        "reasoning": None,
        "weight": 1.0,
        "children": [],
        "info": {},
    }
    return GradeOutcome("ok", spec, grade)


def _context(data: Mapping[str, Any]) -> str:
    """The first request's context (the prompt the model saw)."""
    arguments = data.get("arguments")
    if isinstance(arguments, Mapping):
        first = next(iter(arguments.values()), None)
        if isinstance(first, Mapping):
            context = first.get("arg_0")
            return context if isinstance(context, str) else canonical_json(context)
    elif isinstance(arguments, list) and arguments:
        first = arguments[0]
        if isinstance(first, list) and first and isinstance(first[0], str):
            return first[0]
    return canonical_json(data.get("doc"))


def _response(data: Mapping[str, Any]) -> str:
    """The filtered response as text: a generation, or the choice with the best loglikelihood."""
    response = data.get("filtered_resps")
    if isinstance(response, list) and len(response) == 1 and isinstance(response[0], str):
        return response[0]
    if isinstance(response, str):
        return response
    arguments = data.get("arguments")
    if isinstance(response, list) and isinstance(arguments, Mapping):
        continuations = [a.get("arg_1") for a in arguments.values() if isinstance(a, Mapping)]
        scores = [_loglikelihood(r) for r in response]
        if (
            len(continuations) == len(scores) > 0
            and all(isinstance(c, str) for c in continuations)
            and all(s is not None for s in scores)
        ):
            best = max(range(len(scores)), key=lambda i: scores[i])  # type: ignore[arg-type,return-value]
            return str(continuations[best])
    return canonical_json(response)


def _raw_response(data: Mapping[str, Any]) -> str:
    """The model's own response (``resps``, before any filter) as text."""
    raw = data.get("resps")
    if isinstance(raw, list):
        raw = [r[0] if isinstance(r, list) and len(r) == 1 else r for r in raw]
    return _response({**data, "filtered_resps": raw})


def _loglikelihood(response: Any) -> float | None:
    value = response[0] if isinstance(response, list) and response else response
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _run(
    path: Path, files: Sequence[Path], lines: Sequence[_Line], results: Mapping[str, Any]
) -> EvalRun:
    found = results.get("versions")
    versions: Mapping[str, Any] = found if isinstance(found, dict) else {}
    # Metrics whose values are a corpus figure's parts, not one score per document.
    corpus = {
        (line.task, name, line.filter)
        for line in lines
        for name in _metric_names(line)
        if _is_corpus_input(line.data.get(name))
    }
    specs: dict[str, str] = {}
    graders: list[dict[str, Any]] = []
    docs: dict[str, dict[str, Any]] = {}
    seen: set[tuple[str, str]] = set()
    keys = GraderKeys(str(path))
    for line in lines:
        sample_id = f"{line.task}/{line.doc_id}"
        if (sample_id, line.filter) in seen:
            raise InvalidInputError(
                f"{line.where}: document {line.doc_id} of task {line.task!r} is logged twice "
                f"under filter {line.filter!r}; {_FIX}"
            )
        seen.add((sample_id, line.filter))
        doc = docs.get(sample_id)
        if doc is None:
            doc = docs[sample_id] = {
                "context": _context(line.data),
                "responses": {},
                "raw": line.data,
                "metadata": {
                    "task": line.task,
                    "doc_id": line.data["doc_id"],
                    "target": line.data.get("target"),
                    "doc": line.data.get("doc"),
                },
                "outcomes": {},
            }
        doc["responses"][line.filter] = _response(line.data)
        for name in _metric_names(line):
            if (line.task, name, line.filter) in corpus:
                continue
            key = keys.claim(
                f"{line.task}/{name},{line.filter}",
                f"metric {name!r} under filter {line.filter!r} of task {line.task!r}",
            )
            if key not in specs:
                spec = {
                    "key": key,
                    "type": "lm_eval",
                    "task": line.task,
                    "metric": name,
                    "filter": line.filter,
                    "task_version": versions.get(line.task),
                }
                specs[key] = hashlib.sha256(canonical_json(spec).encode()).hexdigest()[:16]
                graders.append(spec)
            doc["outcomes"][key] = _outcome(line.data.get(name), key, specs[key])
    records = []
    for sample_id, doc in docs.items():
        responses: dict[str, str] = doc["responses"]
        if len(set(responses.values())) > 1:
            # Each filter's grader scored its own part of the model's response: show it all.
            response = _raw_response(doc["raw"])
            doc["metadata"]["filtered_resps"] = responses
        else:
            response = next(iter(responses.values()))
        turns = [
            {"role": "user", "content": doc["context"]},
            {"role": "assistant", "content": response},
        ]
        data = {"turns": turns, "metadata": doc["metadata"]}
        records.append(
            SampleRecord(
                sample_id,
                data,
                hashlib.sha256(canonical_json(data).encode()).hexdigest()[:32],
                doc["outcomes"],
                prompt_hash(turns),
            )
        )
    model = results.get("model_name") or (path.parent.name if path.is_file() else path.name)
    date = _match(files[0]).group("date")
    in_data = _samples_in_data(
        results, [_match(f).group("task") for f in files], files[0].parent / f"results_{date}.json"
    )
    return EvalRun(
        name=f"{model} ({date})",
        records=records,
        spec_hashes=specs,
        config={
            "source": "lm-eval",
            "log": [str(f) for f in files],
            "graders": graders,
            "not_compared": sorted(f"{t}/{m},{f}" for t, m, f in corpus),
        },
        samples_in_data=in_data,
    )
