"""Inspect AI eval logs as eval runs: `gradewire compare` and `gradewire eval` read them.

A sample is one sample of the log in one epoch: id ``<id>`` for epoch 1 and ``<id>#<epoch>``
for the later ones (as gradewire names repeated prompts), so a run of one epoch pairs with
the first epoch of a run of several. Its thread is the sample's input messages then the
model's output as the completion; its metadata the sample's metadata, with the target under
``target`` (a list for several), and ``inspect_id`` and ``epoch``. The prompt hash is
gradewire's, over the input messages, so compare holds two logs to the same questions.

Each scorer is a grader, keyed by its name; a scorer whose values are dicts is one grader
per key, ``<scorer>/<key>`` (a scorer named ``x/y`` beside the key ``y`` of a scorer ``x``
is refused, naming both). Values: ``C`` 1, ``I`` 0, ``P`` 0.5, ``N`` (no answer) 0, as
Inspect's own metrics count them; numbers, and strings that spell a decimal number in ASCII
digits (``"0.5"``, ``"1e-3"``; not ``"1_000"`` or other scripts' digits, which Python's
``float`` would take), as they are; booleans and ``yes``/``no``, ``true``/``false`` as
1/0. A sample with no score from a scorer (unscored, NaN as a number or as the string
``"NaN"``, or invalidated) is an abstention, a sample that errored an error for every
scorer it lacks, and a value that is none of these an error: never a 0. A grader's spec is the
scorer's name and options as the log records them, so two logs scored differently are
refused unless allowed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import math
import os
import re
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gradewire import InvalidInputError, MissingDependencyError
from gradewire.eval import EvalRun, GradeOutcome, SampleRecord
from gradewire.eval.runs._samples import canonical_json, prompt_hash
from gradewire.eval.runs._sources import GraderKeys

__all__ = ["EPOCH_KEY", "ID_KEY", "read_inspect_log"]

ID_KEY = "inspect_id"
"""The metadata key of a sample's Inspect id (cluster by it to treat epochs as one sample)."""
EPOCH_KEY = "epoch"
"""The metadata key of a sample's epoch."""

_SUFFIXES = (".eval", ".json")
_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
# A number as a string: ASCII digits only, no "_" (float() takes "1_000" and "١٢").
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_NAN = re.compile(r"[+-]?nan", re.IGNORECASE)
_INFINITE = re.compile(r"[+-]?inf(?:inity)?", re.IGNORECASE)
_FIX = (
    "pass a log Inspect wrote (a .eval or .json file from inspect eval's --log-dir, "
    "default ./logs), a gradewire run folder, or lm-eval's samples_<task>_<date>.jsonl"
)


def read_inspect_log(ref: str | os.PathLike[str]) -> EvalRun | None:
    """The ``eval_source.inspect`` entry point: the Inspect log at ``ref``, or None.

    None when ``ref`` is not a ``.eval`` or ``.json`` file; such a file that is not an
    Inspect log is refused.

    Raises:
        InvalidInputError: The file is not an Inspect eval log (the message names it and
            says what to pass), or holds one sample and epoch twice.
        MissingDependencyError: inspect-ai is not installed.
    """
    path = Path(ref)
    if path.suffix.lower() not in _SUFFIXES or not path.is_file():
        return None
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise MissingDependencyError(
            "inspect-ai", extra="inspect", purpose=f"read the Inspect AI log {path}"
        ) from None
    try:
        log = _off_the_running_loop(read_eval_log, str(path))
    except (ValueError, OSError, KeyError, zipfile.BadZipFile) as exc:
        # pydantic's ValidationError is a ValueError: a JSON file of another shape.
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidInputError(f"{path} is not an Inspect AI eval log ({first}); {_FIX}") from None
    return _run(path, log)


def _off_the_running_loop(read: Callable[[str], Any], path: str) -> Any:
    """``read(path)``, on a thread of its own when this thread runs an event loop.

    Inspect's sync readers, called where a loop is running (`run_eval` reads an Inspect log
    as its data from inside one), apply nest_asyncio to the whole process, for good: from
    then on ``asyncio.run`` neither shuts down async generators nor closes its loop (Python
    3.11), in the user's code as in ours. On a thread with no loop they run one of their own.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return read(path)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gradewire-inspect") as pool:
        return pool.submit(read, path).result()


def _spec_hash(spec: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(spec).encode()).hexdigest()[:16]


def _scorer_specs(log: Any) -> dict[str, dict[str, Any]]:
    """The scorers the log records, by name: their options are their spec."""
    specs: dict[str, dict[str, Any]] = {}
    for scorer in log.eval.scorers or ():
        specs[scorer.name] = {"scorer": scorer.name, "options": scorer.options or {}}
    return specs


def _number(value: Any) -> float | str | None:
    """A score value as a number; None for unscored; an error message for anything else."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        number = float(value)
        if math.isnan(number):
            return None
        return number if math.isfinite(number) else f"not a finite number: {value!r}"
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text in _LETTERS:
            return _LETTERS[text]
        if text.lower() in _WORDS:
            return _WORDS[text.lower()]
        if _NAN.fullmatch(text):
            return None  # NaN written as text: unscored, as the number NaN is
        if _INFINITE.fullmatch(text):
            return f"not a finite number: {value!r}"
        if not _DECIMAL.fullmatch(text):
            return f"not a score gradewire can read: {value!r} (C, I, P, N, a number, yes/no)"
        number = float(text)
        return number if math.isfinite(number) else f"not a finite number: {value!r}"
    return f"a {type(value).__name__} is not a score gradewire can read: {value!r}"


def _grade(key: str, value: float, score: Any) -> dict[str, Any]:
    stored = (score.metadata or {}).get("grade")
    if (
        isinstance(stored, Mapping)
        and stored.get("value") == value
        and isinstance(stored.get("children"), list)
    ):
        # Scored by gradewire_inspect.scorer: the whole grade tree (sub-grades, info).
        return {**stored, "grader_key": key}
    info = {"answer": score.answer} if score.answer is not None else {}
    return {
        "value": value,
        "grader_key": key,
        "reasoning": score.explanation,
        "weight": 1.0,
        "children": [],
        "info": info,
    }


class _Keys(GraderKeys):
    """The grader keys of a log, each with the scorer it was made from."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.scorer: dict[str, str] = {}


def _key(names: _Keys, scorer: str, part: Any = None) -> str:
    """The grader key of a scorer, or of the key ``part`` of its dict values, claimed."""
    if part is None:
        key = names.claim(scorer, f"scorer {scorer!r}")
    else:
        key = names.claim(f"{scorer}/{part}", f"the key {str(part)!r} of scorer {scorer!r}")
    names.scorer[key] = scorer
    return key


def _outcomes(
    name: str, score: Any, spec: str, keys: dict[str, str], names: _Keys
) -> dict[str, GradeOutcome]:
    """The outcomes of one scorer's score (one per key of a dict value)."""
    value = score.value
    parts = (
        {_key(names, name, k): v for k, v in value.items()}
        if isinstance(value, Mapping)
        else {_key(names, name): value}
    )
    out: dict[str, GradeOutcome] = {}
    for key, part in parts.items():
        keys.setdefault(key, spec)
        number = _number(part)
        if number is None:
            reason = score.reason or score.explanation or "unscored"
            out[key] = GradeOutcome("abstained", spec, None, str(reason))
        elif isinstance(number, str):
            out[key] = GradeOutcome("error", spec, None, number)
        else:
            grade = _grade(key, number, score)
            out[key] = GradeOutcome("ok", spec, grade)
    return out


def _text(content: Any) -> str:
    return content if isinstance(content, str) else str(content)


def _input_turns(sample: Any) -> list[dict[str, str]]:
    if isinstance(sample.input, str):
        return [{"role": "user", "content": sample.input}]
    # Text parts only, as Inspect's `.text` gives them: graders read text.
    return [{"role": message.role, "content": message.text} for message in sample.input]


def _target(target: Any) -> str | list[str] | None:
    texts = [target] if isinstance(target, str) else list(target or ())
    texts = [t for t in texts if t != ""]
    if not texts:
        return None
    return texts[0] if len(texts) == 1 else texts


def _sample_input(sample: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = dict(sample.metadata or {})
    target = _target(sample.target)
    if target is not None:
        metadata.setdefault("target", target)
    metadata[ID_KEY] = sample.id
    metadata[EPOCH_KEY] = sample.epoch
    turns = _input_turns(sample)
    completion = sample.output.completion if sample.output is not None else ""
    if completion or sample.error is None:
        turns.append({"role": "assistant", "content": completion})
    # An errored sample with no output has no completion to grade or show.
    return {"turns": turns, "metadata": metadata}


def _sample_id(sample: Any) -> str:
    return str(sample.id) if sample.epoch == 1 else f"{sample.id}#{sample.epoch}"


def _record(
    sample: Any, specs: Mapping[str, dict[str, Any]], keys: dict[str, str], names: _Keys
) -> SampleRecord:
    data = _sample_input(sample)
    outcomes: dict[str, GradeOutcome] = {}
    for name, score in (sample.scores or {}).items():
        spec = _spec_hash(specs.get(name) or {"scorer": name})
        outcomes.update(_outcomes(name, score, spec, keys, names))
    invalid = sample.invalidation
    if invalid is not None:
        # An invalidated sample counts for no scorer: unscored, never its old score.
        why = f"invalidated in Inspect: {getattr(invalid, 'reason', None) or 'no reason given'}"
        outcomes = {
            k: GradeOutcome("abstained", o.spec_hash, None, why) for k, o in outcomes.items()
        }
    return SampleRecord(
        _sample_id(sample),
        data,
        hashlib.sha256(canonical_json(data).encode()).hexdigest()[:32],
        outcomes,
        prompt_hash(data["turns"]),
    )


def _fill(
    records: Sequence[SampleRecord], samples: Sequence[Any], keys: Mapping[str, str]
) -> list[SampleRecord]:
    """Every grader on every sample: what a sample lacks is its error, or unscored."""
    out = []
    for record, sample in zip(records, samples, strict=True):
        outcomes = dict(record.outcomes)
        for key, spec in keys.items():
            if key in outcomes:
                continue
            if sample.error is not None:
                message = sample.error.message or "the sample errored"
                outcomes[key] = GradeOutcome("error", spec, None, f"Inspect: {message}")
            else:
                outcomes[key] = GradeOutcome("abstained", spec, None, "not scored in Inspect")
        out.append(
            SampleRecord(record.id, record.input, record.input_hash, outcomes, record.prompt_hash)
        )
    return out


def _run(path: Path, log: Any) -> EvalRun:
    specs = _scorer_specs(log)
    keys: dict[str, str] = {}
    names = _Keys(str(path))
    # Scorers the log declares come first, in its order, even when no sample has a score.
    for name, spec in specs.items():
        results = log.results.scores if log.results is not None else []
        sub = [r.name for r in results if r.scorer == name and r.name != name]
        for key in [_key(names, name, s) for s in sub] or [_key(names, name)]:
            keys.setdefault(key, _spec_hash(spec))
    order = {str(i): n for n, i in enumerate(log.eval.dataset.sample_ids or ())}
    samples = sorted(
        log.samples or (),
        key=lambda s: (order.get(str(s.id), len(order)), str(s.id), s.epoch),
    )
    records = [_record(sample, specs, keys, names) for sample in samples]
    seen: dict[str, Any] = {}
    for record, sample in zip(records, samples, strict=True):
        earlier = seen.setdefault(record.id, sample)
        if earlier is not sample:
            raise InvalidInputError(
                f"{path}: sample id {record.id!r} is used twice (sample {earlier.id!r} epoch "
                f"{earlier.epoch} and sample {sample.id!r} epoch {sample.epoch}); gradewire "
                "names epoch k of sample X as X#k: give the samples ids without '#'"
            )
    records = _fill(records, samples, keys)
    graders = [
        {"key": key, "type": "inspect", **(specs.get(names.scorer[key]) or {})} for key in keys
    ]
    epochs = log.eval.config.epochs or 1
    dataset = log.eval.dataset.samples
    return EvalRun(
        name=f"{log.eval.task} {log.eval.model} ({path.name})",
        records=records,
        spec_hashes=keys,
        config={
            "source": "inspect",
            "log": str(path),
            "status": log.status,
            "task": log.eval.task,
            "model": log.eval.model,
            "epochs": epochs,
            "graders": graders,
        },
        cluster_key=ID_KEY if epochs > 1 else None,
        samples_in_data=dataset * epochs if isinstance(dataset, int) else None,
    )
