"""What an eval run stores per sample: its input and each grader's outcome.

A run of 100,000 samples is held in memory at once (statistics, the report, compare), so
what is read back from a run folder is kept compact: a sample's input and a grade tree
stay the JSON text they were read from (`JsonMapping`, parsed when looked at), the
score is kept beside it, and strings that repeat on every line (grader keys, spec
hashes, statuses) are shared.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from gradewire.core import Grade, InvalidInputError, StringThread

__all__ = [
    "GradeOutcome",
    "JsonMapping",
    "OutcomeMap",
    "SampleRecord",
    "Status",
    "outcome_map",
    "plain",
]

Status = Literal["ok", "error", "abstained"]
_STATUSES: dict[object, Status] = {"ok": "ok", "error": "error", "abstained": "abstained"}
_NO_USAGE: Mapping[str, float] = MappingProxyType({})


class JsonMapping(Mapping[str, Any]):
    """A read-only mapping kept as its compact JSON text, parsed each time it is read.

    `plain` gives the parsed dict in one parse; ``text`` is the JSON itself (ASCII).
    """

    __slots__ = ("text",)

    def __init__(self, text: bytes) -> None:
        self.text = text

    @classmethod
    def of(cls, value: Mapping[str, Any]) -> JsonMapping:
        """``value`` as compact JSON text (lone surrogates kept as escapes)."""
        text = json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
        return cls(text.encode("ascii"))

    def load(self) -> dict[str, Any]:
        """The mapping, parsed."""
        loaded: dict[str, Any] = json.loads(self.text)
        return loaded

    def __getitem__(self, key: str) -> Any:
        return self.load()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default``."""
        return self.load().get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self.load())

    def __len__(self) -> int:
        return len(self.load())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JsonMapping):
            return self.text == other.text
        return isinstance(other, Mapping) and self.load() == dict(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"JsonMapping({self.load()!r})"


def plain(value: Mapping[str, Any]) -> dict[str, Any]:
    """A mapping as a plain dict (one parse for a `JsonMapping`)."""
    return value.load() if isinstance(value, JsonMapping) else dict(value)


@dataclass(frozen=True, slots=True)
class GradeOutcome:
    """One grader's result on one sample.

    Attributes:
        status: ``ok`` (scored), ``error`` (the grader failed) or ``abstained``.
        spec_hash: Hash of the grader's spec when it graded: a changed spec re-grades.
        grade: The grade tree as `Grade.to_dict` writes it (``ok`` only).
        message: The error or the reason for abstaining.
        usage: What the grade cost (judge tokens and calls), when the grader says.
        seconds: Wall time of the grading.
        input_hash: Hash of the input it graded (`EvalSample.input_hash`): an outcome
            whose input has changed since is stale, whatever the other graders did.
            Empty when unknown (an outcome built by hand, a run read from a tracker).
        kind: What kind of ``error`` (`gradewire.eval.grading._outcomes.error_kind`):
            ``"timeout"`` for a grade that took longer than its timeout
            (`GradeTimeoutError`), ``"parse"``, ``"connection"``, an OpenAI grader's
            kind, ...; None for an abstention, and for errors of runs written before
            kinds were recorded.
    """

    status: Status
    spec_hash: str
    grade: Mapping[str, Any] | None = None
    message: str | None = None
    usage: Mapping[str, float] = field(default_factory=lambda: _NO_USAGE)
    seconds: float = 0.0
    input_hash: str = ""
    kind: str | None = None
    _value: float | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.grade is not None:
            object.__setattr__(self, "_value", _score(self.grade.get("value"), "value"))

    @property
    def value(self) -> float | None:
        """The score, for ``ok`` outcomes."""
        return self._value

    def to_grade(self) -> Grade | None:
        """The grade tree as a `Grade` (None unless ``ok``)."""
        return None if self.grade is None else Grade.from_dict(plain(self.grade))

    def to_json(self) -> dict[str, Any]:
        """The outcome as a JSON object of a results line."""
        out: dict[str, Any] = {"status": self.status, "spec_hash": self.spec_hash}
        if self.input_hash:
            out["input_hash"] = self.input_hash
        if self.grade is not None:
            out["grade"] = plain(self.grade)
        if self.message is not None:
            out["message"] = self.message
        if self.usage:
            out["usage"] = dict(self.usage)
        if self.kind is not None:
            out["kind"] = self.kind
        out["seconds"] = round(self.seconds, 6)
        return out

    @classmethod
    def from_json(
        cls,
        data: Mapping[str, Any],
        *,
        input_hash: str = "",
        shared: dict[bytes, JsonMapping] | None = None,
    ) -> GradeOutcome:
        """Read an outcome back, checking every field.

        Args:
            data: The outcome's JSON object.
            input_hash: The input it graded, when the object does not say (a results
                line written before outcomes recorded it: its line's input).
            shared: Grades read so far by their JSON text: an equal short grade is
                taken from there (a run's 0/1 grades are two objects, not one each).

        Raises:
            InvalidInputError: A malformed outcome; the message says which field.
        """
        if not isinstance(data, Mapping):
            raise InvalidInputError(f"an outcome must be an object, not {_kind(data)}")
        status = _STATUSES.get(data.get("status"))
        if status is None:
            raise InvalidInputError(
                f"'status' must be ok, error or abstained, not {data.get('status')!r}"
            )
        spec = _text(data, "spec_hash", required=True)
        own = _text(data, "input_hash")
        message = _text(data, "message")
        grade = data.get("grade")
        if status == "ok":
            if not isinstance(grade, Mapping):
                raise InvalidInputError("a scored outcome needs its 'grade' object")
            _check_tree(grade, "grade")
            grade = JsonMapping.of(grade)
            if shared is not None and len(grade.text) <= 256:
                grade = shared.setdefault(grade.text, grade)
        elif grade is not None:
            raise InvalidInputError(f"an outcome of status {status!r} has no 'grade'")
        usage = data.get("usage")
        if usage is None or usage == {}:
            usage = _NO_USAGE
        elif isinstance(usage, Mapping):
            usage = {_intern(str(k)): _score(v, f"usage.{k}") for k, v in usage.items()}
        else:
            raise InvalidInputError(f"'usage' must be an object, not {_kind(usage)}")
        seconds = _score(data.get("seconds", 0.0), "seconds")
        kind = data.get("kind")
        if kind is not None and not isinstance(kind, str):
            raise InvalidInputError(f"an outcome's 'kind' must be a string, not {_kind(kind)}")
        return cls(
            status=status,
            spec_hash=_intern(spec or ""),
            grade=grade,
            message=message,
            usage=usage,
            seconds=seconds,
            # The line's string when they are equal: one object per sample, not per outcome.
            input_hash=own if own and own != input_hash else input_hash,
            kind=_intern(kind) if kind is not None else None,
        )


_FLOATS = {0.0: 0.0, 1.0: 1.0, 0.5: 0.5}


def _score(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{name!r} is not a number: {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidInputError(f"{name!r} is not a finite number: {value!r}")
    return _FLOATS.get(number, number)


def _text(data: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = data.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{name!r} must be a string, not {_kind(value)}")
    return value


def _check_tree(grade: Mapping[str, Any], where: str, depth: int = 0) -> None:
    if depth > 100:
        raise InvalidInputError(f"{where!r} is nested more than 100 deep")
    _score(grade.get("value"), f"{where}.value")
    children = grade.get("children") or ()
    if not isinstance(children, (list, tuple)):
        raise InvalidInputError(f"'{where}.children' must be a list, not {_kind(children)}")
    for index, child in enumerate(children):
        if not isinstance(child, Mapping):
            raise InvalidInputError(f"'{where}.children[{index}]' is not an object")
        _check_tree(child, f"{where}.children[{index}]", depth + 1)


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _intern(text: str) -> str:
    # Keys, statuses and hashes repeat on every line: one string object for all of them.
    return sys.intern(text) if len(text) <= 64 else text


class OutcomeMap(Mapping[str, "GradeOutcome"]):
    """A read-only mapping of grader key to outcome, kept compact.

    Records of a run share one tuple of keys; the outcomes sit in a tuple beside it.
    """

    __slots__ = ("_keys", "_values")

    def __init__(self, keys: tuple[str, ...], values: tuple[GradeOutcome, ...]) -> None:
        self._keys = keys
        self._values = values

    def __getitem__(self, key: str) -> GradeOutcome:
        try:
            return self._values[self._keys.index(key)]
        except ValueError:
            raise KeyError(key) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(dict(self.items()))


def outcome_map(
    outcomes: Mapping[str, GradeOutcome], shared: dict[tuple[str, ...], tuple[str, ...]]
) -> OutcomeMap:
    """``outcomes`` as an `OutcomeMap`, its tuple of keys taken from ``shared`` if there."""
    keys = tuple(outcomes)
    return OutcomeMap(shared.setdefault(keys, keys), tuple(outcomes.values()))


@dataclass(frozen=True, slots=True)
class SampleRecord:
    """A sample of a run folder: its input and the latest outcome of each grader.

    Attributes:
        id: The sample id (pairs samples across runs).
        input: The thread as `StringThread.to_dict` writes it (turns and metadata); read
            from a run folder it is a read-only `JsonMapping`.
        input_hash: Hash of this input (`EvalSample.input_hash`).
        outcomes: GradeOutcome per grader key (the latest, current or stale: see
            `current`).
        prompt_hash: Hash of the prompt part of the input (every turn before the
            completion; no metadata): compare checks that paired samples share it.
    """

    id: str
    input: Mapping[str, Any]
    input_hash: str
    outcomes: Mapping[str, GradeOutcome]
    prompt_hash: str = ""

    def current(self, grader: str, spec_hash: str) -> GradeOutcome | None:
        """The grader's outcome if it graded this input with that spec, else None (stale).

        An outcome that does not record its input (made by hand, read from a tracker)
        counts as grading the record's input.
        """
        outcome = self.outcomes.get(grader)
        if outcome is None or outcome.spec_hash != spec_hash:
            return None
        if outcome.input_hash and self.input_hash and outcome.input_hash != self.input_hash:
            return None
        return outcome

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The sample's metadata (the data row's other fields)."""
        metadata = self.input.get("metadata")
        return metadata if isinstance(metadata, Mapping) else {}

    def thread(self) -> StringThread:
        """The input as a `StringThread`."""
        return StringThread.from_dict(plain(self.input))

    def prompt(self) -> str:
        """The last user turn."""
        text = ""
        for turn in self.input.get("turns") or ():
            if turn.get("role") == "user":
                text = str(turn.get("content", ""))
        return text

    def completion(self) -> str:
        """The final assistant turn, or "" when the thread does not end with one."""
        turns = self.input.get("turns") or []
        last = turns[-1] if turns else None
        return str(last.get("content", "")) if last and last.get("role") == "assistant" else ""
