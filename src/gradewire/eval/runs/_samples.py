"""EvalSample: one row of eval data as a thread, with the id that resumes and pairs it."""

from __future__ import annotations

import difflib
import hashlib
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradewire.core import GradewireError, StringThread
from gradewire.eval.runs._evals_rows import evals_fields, is_evals_row

# Re-exported: the row's rules are imported from here by the readers built on samples.
from gradewire.eval.runs._row_shape import DataError, DataOptions, RowShape, canonical_json
from gradewire.eval.runs._values import ValueRefused, stored_value

__all__ = [
    "MESSAGE_FIELDS",
    "DataError",
    "DataOptions",
    "EvalSample",
    "MissingCompletion",
    "RowShape",
    "assign_ids",
    "canonical_json",
    "checked_samples",
    "id_problem",
    "likely_completion_fields",
    "listing",
    "no_completion",
    "no_completion_advice",
    "prompt_hash",
    "sample_from_row",
]

MESSAGE_FIELDS = "message_fields"
"""The metadata key that keeps a message's fields beyond role and content (``tool_calls``)."""

# Column names that often hold a model's answer, most likely first ("answer" is often the
# reference instead, so it comes late).
_COMPLETION_NAMES = (
    "response",
    "output",
    "generation",
    "model_output",
    "model_response",
    "generated_text",
    "output_text",
    "prediction",
    "predicted",
    "pred",
    "reply",
    "completion_text",
    "text",
    "result",
    "answer",
)


class MissingCompletion(DataError):
    """A row with no completion; the data reader reports such rows together."""

    def __init__(self, where: str, fields: Sequence[str], shape: RowShape) -> None:
        self.where = where
        self.fields = list(fields)
        super().__init__(f"{where}: {no_completion(shape)}; {no_completion_advice(fields, shape)}")


@dataclass(frozen=True, slots=True)
class EvalSample:
    """One sample of an eval: its id, the thread the graders score, and its input hash.

    Attributes:
        id: The row's ``id`` field, else a hash of the prompt (the turns before the
            completion), so two runs of different models on the same questions pair up.
        thread: The conversation and the row's other fields as metadata.
        input_hash: A hash of the whole input (completion and metadata included): a
            resumed run re-grades a sample whose input changed under the same id.
        where: Where the row came from (``data.jsonl:12``), for messages.
    """

    id: str
    thread: StringThread
    input_hash: str
    where: str


def _digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def likely_completion_fields(fields: Iterable[str], shape: RowShape) -> list[str]:
    """The fields that probably hold the completion: near its name, or a usual name."""
    taken = {shape.prompt_key, shape.completion_key, "id", "metadata", "messages"}
    candidates = [field for field in dict.fromkeys(fields) if field not in taken]
    close = difflib.get_close_matches(shape.completion_key, candidates, n=3, cutoff=0.6)
    lowered = {field.lower(): field for field in candidates}
    usual = [lowered[name] for name in _COMPLETION_NAMES if name in lowered]
    return list(dict.fromkeys([*close, *usual]))


def no_completion(shape: RowShape) -> str:
    """What a row with no completion lacks."""
    return (
        f"no completion (no {shape.completion_key!r} field, and no 'messages' ending with "
        "an assistant turn)"
    )


def no_completion_advice(fields: Iterable[str], shape: RowShape) -> str:
    """The fields found in rows with no completion, and the likely fix."""
    found = sorted(dict.fromkeys(fields))
    text = f"the fields are: {', '.join(found) or '(none)'}"
    likely = likely_completion_fields(found, shape)
    if likely:
        text += (
            f". If {likely[0]!r} holds the answers, pass completion_key={likely[0]!r} "
            f"(--completion-key {likely[0]} on the command line)"
        )
        if len(likely) > 1:
            text += f"; other candidates: {', '.join(likely[1:])}"
    return text + ". To grade prompts alone, pass allow_prompt_only=True (--allow-prompt-only)"


def sample_from_row(
    row: Mapping[str, Any], where: str, shape: RowShape | None = None
) -> tuple[str | None, StringThread]:
    """The explicit id (if any) and the thread of one data row.

    A row holds OpenAI-style ``messages``, or a prompt (a string or a list of messages)
    and a completion, in the fields `RowShape` names; every other field (``answer``,
    ``documents``, ...) becomes metadata, as do the fields of a ``metadata`` object. A
    message's fields beyond role and content (``tool_calls``, ``tool_call_id``, ``name``)
    are kept in ``metadata["message_fields"]``, by the turn's index. Values JSON lacks are
    mapped as `gradewire.eval.runs._values` says, so the thread holds what the run stores.

    Raises:
        MissingCompletion: The row has no completion (and prompt-only rows were not asked
            for).
        DataError: The row has neither shape, a field has the wrong type, or a value
            cannot be stored; the message names ``where`` and the field.
    """
    shape = shape or RowShape()
    if not isinstance(row, Mapping):
        raise DataError(f"{where}: a row must be an object with fields, not {type(row).__name__}")
    for key in row:
        if not isinstance(key, str):
            raise DataError(f"{where}: the field name {key!r} is not text")
    try:
        fields = {key: stored_value(value, (key,)) for key, value in row.items()}
    except ValueRefused as exc:
        raise DataError(f"{where}: {exc}") from None
    evals = is_evals_row(fields, shape)
    original = fields
    for key in (shape.completion_key, shape.prompt_key):
        fields = _plucked(fields, key)
    if evals:
        fields = evals_fields(original, fields, where, shape)
    raw_id = fields.get("id")
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, (str, int))):
        raise DataError(f"{where}: field 'id' must be a string or an integer, not {raw_id!r}")
    sample_id = None if raw_id is None else str(raw_id)
    if sample_id is not None:
        problem = id_problem(sample_id)
        if problem:
            raise DataError(f"{where}: field 'id' {problem}")
    nested = fields.get("metadata")
    if nested is not None and not isinstance(nested, Mapping):
        raise DataError(f"{where}: field 'metadata' must be an object, not {type(nested).__name__}")
    conversation = {shape.prompt_key, shape.completion_key, "messages"}
    # A "metadata" object (as StringThread.to_dict writes it) and the other fields both count.
    metadata = dict(nested or {})
    metadata.update(
        # Interned: the same column names on every row are one string, not one per row.
        (sys.intern(key), value)
        for key, value in fields.items()
        if key not in conversation and key not in ("id", "metadata")
    )
    thread = _thread(fields, metadata, where, shape)
    if thread is None:
        raise MissingCompletion(where, list(row), shape)
    return sample_id, thread


def _plucked(fields: dict[str, Any], key: str) -> dict[str, Any]:
    """``fields`` with a dotted ``key`` (``sample.output_text``) lifted to the top level.

    A key that is a field of its own, or names nothing, leaves the row as it is. The
    value is taken out of its parent (a copy), so it is not kept twice in the metadata.
    """
    if "." not in key or key in fields:
        return fields
    head, *path = key.split(".")
    parent = fields.get(head)
    if not isinstance(parent, Mapping):
        return fields
    out = dict(fields)
    copies = [dict(parent)]
    for part in path[:-1]:
        inner = copies[-1].get(part)
        if not isinstance(inner, Mapping):
            return fields
        copies.append(dict(inner))
    if path[-1] not in copies[-1]:
        return fields
    value = copies[-1].pop(path[-1])
    for index in range(len(copies) - 1, 0, -1):
        copies[index - 1][path[index - 1]] = copies[index]
    out[head] = copies[0]
    out[key] = value
    return out


def id_problem(sample_id: str) -> str | None:
    """Why ``sample_id`` cannot be an id, or None."""
    if sample_id == "":
        return "is empty; give each sample a non-empty id"
    try:
        sample_id.encode("utf-8")
    except UnicodeEncodeError:
        return (
            "holds a lone surrogate (half of a character, such as an emoji cut in two); "
            "use whole text"
        )
    return None


def _thread(
    fields: Mapping[str, Any], metadata: dict[str, Any], where: str, shape: RowShape
) -> StringThread | None:
    """The row's thread; None when it has no completion and one was needed."""
    prompt = fields.get(shape.prompt_key)
    messages = None if shape.prompt_key == "messages" else fields.get("messages")
    completion = _completion(fields.get(shape.completion_key), shape.completion_key, where)
    if messages is not None:
        if prompt is not None:
            raise DataError(
                f"{where}: the row has 'messages' and {shape.prompt_key!r}; give one or the other"
            )
        field, turns = "messages", _listed("messages", messages, where)
    elif prompt is not None:
        if isinstance(prompt, str):
            field, turns = shape.prompt_key, [{"role": "user", "content": prompt}]
        elif isinstance(prompt, list):
            field, turns = shape.prompt_key, _listed(shape.prompt_key, prompt, where)
        else:
            raise DataError(
                f"{where}: field {shape.prompt_key!r} must be a string or a list of messages, "
                f"not {type(prompt).__name__}"
            )
    else:
        raise DataError(
            f"{where}: no 'messages' field and no {shape.prompt_key!r} field; a row holds "
            f"OpenAI-style 'messages', or a {shape.prompt_key!r} and a "
            f"{shape.completion_key!r}"
        )
    ends_with_answer = bool(turns) and _role(turns[-1]) == "assistant"
    if completion is not None:
        if field == "messages" and ends_with_answer:
            raise DataError(
                f"{where}: the row has two completions: 'messages' ends with an assistant "
                f"turn and {shape.completion_key!r} holds another; give one or the other"
            )
        turns.extend(completion)
    extras = {
        str(index): {k: v for k, v in turn.items() if k not in ("role", "content")}
        for index, turn in enumerate(turns)
        if isinstance(turn, Mapping) and set(turn) - {"role", "content"}
    }
    if extras:
        if MESSAGE_FIELDS in metadata:
            raise DataError(
                f"{where}: the row has a field {MESSAGE_FIELDS!r}, the metadata key that keeps "
                "the messages' other fields (tool_calls, ...); rename that field"
            )
        metadata[MESSAGE_FIELDS] = extras
    try:
        thread = StringThread.from_messages(turns, metadata)
    except GradewireError as exc:
        raise DataError(f"{where}: field {field!r}: {exc}") from None
    has_completion = completion is not None or ends_with_answer
    return thread if has_completion or shape.allow_prompt_only else None


def _completion(value: Any, key: str, where: str) -> list[Any] | None:
    """The completion's turns, or None when there is none.

    A completion is a string, or messages ending with the assistant's (as TRL's
    conversational data sets hold it).
    """
    if value is None:
        return None
    if isinstance(value, str):
        return [{"role": "assistant", "content": value}]
    if not isinstance(value, list):
        raise DataError(
            f"{where}: field {key!r} must be a string or a list of messages, not "
            f"{type(value).__name__}"
        )
    turns = _listed(key, value, where)
    try:
        StringThread.from_messages(turns)
    except GradewireError as exc:
        raise DataError(f"{where}: field {key!r}: {exc}") from None
    if _role(turns[-1]) != "assistant":
        raise DataError(f"{where}: field {key!r} does not end with an assistant message")
    return turns


def _listed(field: str, messages: Any, where: str) -> list[Any]:
    if not isinstance(messages, list):
        raise DataError(
            f"{where}: field {field!r} must be a list of messages, not {type(messages).__name__}"
        )
    if not messages:
        raise DataError(f"{where}: field {field!r} is empty; a sample needs at least one turn")
    return list(messages)


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, Mapping) else None


def prompt_hash(turns: Sequence[Mapping[str, Any]]) -> str:
    """Hash of the prompt part of a conversation: every turn before the completion.

    ``turns`` are message dicts (`StringThread.to_messages`, or the ``turns`` a results
    line stores). A final assistant turn (the completion) and the metadata are left out,
    so two models' answers to one question share it; compare checks that paired samples
    do, and a sample without an ``id`` is named after it.
    """
    if turns and turns[-1].get("role") == "assistant":
        turns = turns[:-1]
    return _digest(list(turns))[:16]


def assign_ids(
    rows: Iterable[tuple[str | None, StringThread, str]],
) -> tuple[list[EvalSample], list[str]]:
    """Samples with their ids, and the problems: an id that two rows share.

    Rows without an explicit id get a hash of the prompt; a prompt that repeats (several
    completions per question) gets ``#2``, ``#3``, ... in file order, so ids stay stable
    as long as the file's order does. Any id used twice is a problem, whatever made it:
    two explicit ids, or an explicit id equal to another row's hashed one (as rows
    exported from an earlier run carry).
    """
    samples: list[EvalSample] = []
    origins: dict[str, bool] = {}
    seen: dict[str, int] = {}
    for raw_id, thread, where in rows:
        if raw_id is not None:
            sample_id = raw_id
        else:
            base = "h" + prompt_hash(thread.to_messages())
            count = seen.get(base, 0) + 1
            seen[base] = count
            sample_id = base if count == 1 else f"{base}#{count}"
        origins[where] = raw_id is None
        samples.append(EvalSample(sample_id, thread, _digest(thread.to_dict())[:32], where))
    return samples, _repeated_ids(samples, origins)


def _repeated_ids(samples: Sequence[EvalSample], hashed: Mapping[str, bool]) -> list[str]:
    first: dict[str, EvalSample] = {}
    problems = []
    for sample in samples:
        earlier = first.setdefault(sample.id, sample)
        if earlier is sample:
            continue
        how = ""
        if hashed.get(sample.where) or hashed.get(earlier.where):
            made = [s.where for s in (earlier, sample) if hashed.get(s.where)]
            how = (
                f" ({' and '.join(made)} got it as a hash of the prompt, as rows without an "
                "'id' field do; give the rows distinct 'id' fields)"
            )
        problems.append(
            f"{sample.where}: id {sample.id!r} is used again (first at {earlier.where}){how}; "
            "ids must be unique, they resume runs and pair samples in compare"
        )
    return problems


def checked_samples(samples: Iterable[EvalSample], shape: RowShape) -> list[EvalSample]:
    """Samples given in Python, held to the rules of a data file.

    Ids must be non-empty, whole text and unique; each thread must end with a completion
    (unless ``shape.allow_prompt_only``); metadata is mapped to what the run stores, and a
    sample whose metadata changed gets a thread holding the stored values.

    Raises:
        DataError: The problems, each with the sample's ``where`` (else its position).
    """
    out: list[EvalSample] = []
    problems: list[str] = []
    for index, sample in enumerate(samples):
        if not isinstance(sample, EvalSample):
            problems.append(f"samples[{index}] is a {type(sample).__name__}, not an EvalSample")
            continue
        where = sample.where or f"samples[{index}]"
        problem = (
            id_problem(sample.id)
            if isinstance(sample.id, str)
            else f"must be a str, not {sample.id!r}"
        )
        if problem:
            problems.append(f"{where}: id {problem}")
            continue
        thread = sample.thread
        if not isinstance(thread, StringThread):
            problems.append(f"{where}: thread is a {type(thread).__name__}, not a StringThread")
            continue
        try:
            metadata = stored_value(thread.metadata, ("metadata",))
        except ValueRefused as exc:
            problems.append(f"{where}: {exc}")
            continue
        ends_with_answer = bool(thread.turns) and thread.turns[-1].role == "assistant"
        if not ends_with_answer and not shape.allow_prompt_only:
            problems.append(
                f"{where}: no completion (the thread does not end with an assistant turn); "
                "to grade prompts alone, pass allow_prompt_only=True"
            )
            continue
        if metadata != thread.metadata:
            thread = StringThread(thread.turns, metadata)
            sample = EvalSample(sample.id, thread, sample.input_hash, sample.where)
        out.append(sample)
    problems.extend(_repeated_ids(out, {}))
    if problems:
        raise DataError(listing("the samples", problems, "sample"))
    return out


def listing(
    what: str, problems: Sequence[str], noun: str, count: int | None = None, shown: int = 20
) -> str:
    """One message for many bad rows: how many, then up to ``shown`` problems.

    ``count`` is the number of bad rows when a problem stands for several.
    """
    more = len(problems) - shown
    tail = f"\n  ... and {more} more" if more > 0 else ""
    total = len(problems) if count is None else count
    return (
        f"{what}: {total} bad {noun}(s), nothing was graded:\n  "
        + "\n  ".join(problems[:shown])
        + tail
    )
