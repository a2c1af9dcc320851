"""What an eval run stores per sample: its input and each grader's outcome."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gradewire.core import Grade, InvalidInputError

__all__ = ["GradeOutcome", "SampleRecord", "Status"]

Status = Literal["ok", "error", "abstained"]
_STATUSES = ("ok", "error", "abstained")


@dataclass(frozen=True)
class GradeOutcome:
    """One grader's result on one sample.

    Attributes:
        status: ``ok`` (scored), ``error`` (the grader failed) or ``abstained``.
        spec_hash: Hash of the grader's spec when it graded: a changed spec re-grades.
        grade: The grade tree as `Grade.to_dict` writes it (``ok`` only).
        message: The error or the reason for abstaining.
        usage: What the grade cost (judge tokens and calls), when the grader says.
        seconds: Wall time of the grading.
        kind: What kind of ``error``: ``"timeout"`` for a grade that took longer than its
            timeout (`GradeTimeoutError`); None for any other.
    """

    status: Status
    spec_hash: str
    grade: Mapping[str, Any] | None = None
    message: str | None = None
    usage: Mapping[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    kind: str | None = None

    @property
    def value(self) -> float | None:
        """The score, for ``ok`` outcomes."""
        return None if self.grade is None else float(self.grade["value"])

    def to_grade(self) -> Grade | None:
        """The grade tree as a `Grade` (None unless ``ok``)."""
        return None if self.grade is None else Grade.from_dict(self.grade)

    def to_json(self) -> dict[str, Any]:
        """The outcome as a JSON object of a results line."""
        out: dict[str, Any] = {"status": self.status, "spec_hash": self.spec_hash}
        if self.grade is not None:
            out["grade"] = dict(self.grade)
        if self.message is not None:
            out["message"] = self.message
        if self.usage:
            out["usage"] = dict(self.usage)
        if self.kind is not None:
            out["kind"] = self.kind
        out["seconds"] = round(self.seconds, 6)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GradeOutcome:
        """Read an outcome back; raises `InvalidInputError` for a malformed one."""
        status = data.get("status")
        if status not in _STATUSES or not isinstance(data.get("spec_hash"), str):
            raise InvalidInputError(f"not a grader outcome: {dict(data)!r}")
        grade = data.get("grade")
        if status == "ok" and not isinstance(grade, Mapping):
            raise InvalidInputError("a scored outcome needs its grade")
        kind = data.get("kind")
        if kind is not None and not isinstance(kind, str):
            raise InvalidInputError(f"an outcome's kind is a string, not {kind!r}")
        return cls(
            status=status,
            spec_hash=data["spec_hash"],
            grade=grade,
            message=data.get("message"),
            usage=dict(data.get("usage") or {}),
            seconds=float(data.get("seconds", 0.0)),
            kind=kind,
        )


@dataclass(frozen=True)
class SampleRecord:
    """A sample of a run folder: its input and the latest outcome of each grader.

    Attributes:
        id: The sample id (pairs samples across runs).
        input: The thread as `StringThread.to_dict` writes it (turns and metadata).
        input_hash: Hash of the input when it was graded.
        outcomes: GradeOutcome per grader key.
    """

    id: str
    input: Mapping[str, Any]
    input_hash: str
    outcomes: Mapping[str, GradeOutcome]

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The sample's metadata (the data row's other fields)."""
        metadata = self.input.get("metadata")
        return metadata if isinstance(metadata, Mapping) else {}

    def prompt(self) -> str:
        """The last user turn."""
        text = ""
        for turn in self.input.get("turns", ()):
            if turn.get("role") == "user":
                text = str(turn.get("content", ""))
        return text

    def completion(self) -> str:
        """The final assistant turn, or "" when the thread does not end with one."""
        turns = self.input.get("turns") or []
        last = turns[-1] if turns else None
        return str(last.get("content", "")) if last and last.get("role") == "assistant" else ""
