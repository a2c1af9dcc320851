"""EvalSample: one row of eval data as a thread, with the id that resumes and pairs it."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradewire.core import GradewireError, InvalidInputError, StringThread

__all__ = [
    "DataError",
    "EvalSample",
    "assign_ids",
    "canonical_json",
    "prompt_hash",
    "sample_from_row",
]

# Fields of a data row that make the conversation; every other field is metadata.
_CONVERSATION_FIELDS = ("messages", "prompt", "completion")


class DataError(InvalidInputError):
    """Eval data that cannot be read; the message names the file, the row and the field."""


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


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: the same data always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


def _digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def sample_from_row(row: Mapping[str, Any], where: str) -> tuple[str | None, StringThread]:
    """The explicit id (if any) and the thread of one data row.

    A row holds OpenAI-style ``messages``, or a ``prompt`` (a string or a list of
    messages) and a ``completion``; every other field (``answer``, ``documents``, ...)
    becomes metadata, as do the fields of a ``metadata`` object.

    Raises:
        DataError: The row has neither shape, or a field has the wrong type; the message
            names ``where`` and the field.
    """
    if not isinstance(row, Mapping):
        raise DataError(f"{where}: a row must be an object with fields, not {type(row).__name__}")
    raw_id = row.get("id")
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, (str, int))):
        raise DataError(f"{where}: field 'id' must be a string or an integer, not {raw_id!r}")
    if raw_id is not None and str(raw_id) == "":
        raise DataError(f"{where}: field 'id' is empty; give each sample a non-empty id")
    nested = row.get("metadata")
    if nested is not None and not isinstance(nested, Mapping):
        raise DataError(f"{where}: field 'metadata' must be an object, not {type(nested).__name__}")
    # A "metadata" object (as StringThread.to_dict writes it) and the other fields both count.
    metadata = dict(nested or {})
    metadata.update(
        # Interned: the same column names on every row are one string, not one per row.
        (sys.intern(key) if isinstance(key, str) else key, value)
        for key, value in row.items()
        if key not in _CONVERSATION_FIELDS and key not in ("id", "metadata")
    )
    try:
        thread = _thread(row, metadata, where)
    except DataError:
        raise
    except GradewireError as exc:
        field = "messages" if "messages" in row else "prompt"
        raise DataError(f"{where}: field {field!r}: {exc}") from None
    return (None if raw_id is None else str(raw_id)), thread


def _thread(row: Mapping[str, Any], metadata: dict[str, Any], where: str) -> StringThread:
    if "messages" in row:
        if "prompt" in row or "completion" in row:
            raise DataError(
                f"{where}: the row has 'messages' and 'prompt'/'completion'; give one or the other"
            )
        return StringThread.from_messages(row["messages"], metadata)
    if "prompt" not in row:
        raise DataError(
            f"{where}: no 'messages' field and no 'prompt' field; a row holds OpenAI-style "
            "'messages', or a 'prompt' and a 'completion'"
        )
    prompt, completion = row["prompt"], row.get("completion")
    if completion is not None and not isinstance(completion, str):
        raise DataError(
            f"{where}: field 'completion' must be a string, not {type(completion).__name__}"
        )
    if isinstance(prompt, str):
        turns: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    elif isinstance(prompt, list):
        turns = list(prompt)
    else:
        raise DataError(
            f"{where}: field 'prompt' must be a string or a list of messages, not "
            f"{type(prompt).__name__}"
        )
    if completion is not None:
        turns.append({"role": "assistant", "content": completion})
    return StringThread.from_messages(turns, metadata)


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


def assign_ids(rows: Iterable[tuple[str | None, StringThread, str]]) -> list[EvalSample]:
    """Samples with their ids: explicit ones checked unique, the others hashed from the prompt.

    A prompt that repeats (several completions per question) gets ``#2``, ``#3``, ... in
    file order, so ids stay stable as long as the file's order does.

    Raises:
        DataError: Two rows share an explicit id.
    """
    samples: list[EvalSample] = []
    explicit: dict[str, str] = {}
    seen: dict[str, int] = {}
    for raw_id, thread, where in rows:
        if raw_id is not None:
            if raw_id in explicit:
                raise DataError(
                    f"{where}: id {raw_id!r} is used again (first at {explicit[raw_id]}); "
                    "ids must be unique, they resume runs and pair samples in compare"
                )
            explicit[raw_id] = where
            sample_id = raw_id
        else:
            base = "h" + prompt_hash(thread.to_messages())
            count = seen.get(base, 0) + 1
            seen[base] = count
            sample_id = base if count == 1 else f"{base}#{count}"
        samples.append(EvalSample(sample_id, thread, _digest(thread.to_dict())[:32], where))
    return samples
