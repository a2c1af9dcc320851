"""EvaluationResult: HUD's combined grade payload."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from gradewire.core._errors import InvalidTypeError
from gradewire.core._grade import Grade, _check_children, as_finite_float

__all__ = ["EvaluationResult"]


class EvaluationResult:
    """The outcome of grading one episode, with HUD's fields and defaults.

    Attributes:
        reward: The final score.
        done: Whether the episode is complete.
        subscores: The breakdown the reward was combined from, or None.
        info: Extra metadata, read-only.
        content: A human-readable explanation.
        isError: Whether grading itself failed (the reward then means nothing).
    """

    __slots__ = ("_content", "_done", "_info", "_is_error", "_reward", "_subscores")

    def __init__(
        self,
        reward: float = 0.0,
        done: bool = True,
        subscores: Iterable[Grade] | None = None,
        info: Mapping[str, Any] | None = None,
        content: str | None = None,
        isError: bool = False,
    ) -> None:
        """Build a result; every argument has HUD's default."""
        self._reward = as_finite_float(reward, "EvaluationResult reward")
        self._done = bool(done)
        self._subscores = None if subscores is None else _check_children(subscores)
        if info is not None and not isinstance(info, Mapping):
            raise InvalidTypeError(f"info must be a dict or None, not {type(info).__name__}")
        self._info: Mapping[str, Any] = MappingProxyType(dict(info or {}))
        if content is not None and not isinstance(content, str):
            raise InvalidTypeError(f"content must be a str or None, not {type(content).__name__}")
        self._content = content
        self._is_error = bool(isError)

    @classmethod
    def from_float(cls, value: float) -> EvaluationResult:
        """Wrap a bare reward."""
        return cls(reward=value, done=True)

    @classmethod
    def from_grade(cls, grade: Grade) -> EvaluationResult:
        """The result of a single grade: its value as reward, its children as subscores."""
        return cls(
            reward=grade.value,
            subscores=grade.children or None,
            content=grade.reasoning,
            info=grade.info,
        )

    @property
    def reward(self) -> float:
        """The final score."""
        return self._reward

    @property
    def done(self) -> bool:
        """Whether the episode is complete."""
        return self._done

    @property
    def subscores(self) -> tuple[Grade, ...] | None:
        """The breakdown of the reward, if any."""
        return self._subscores

    @property
    def info(self) -> Mapping[str, Any]:
        """Extra metadata, read-only."""
        return self._info

    @property
    def content(self) -> str | None:
        """A human-readable explanation."""
        return self._content

    @property
    def isError(self) -> bool:
        """Whether grading itself failed."""
        return self._is_error

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict, subscores included."""
        return {
            "reward": self._reward,
            "done": self._done,
            "subscores": None
            if self._subscores is None
            else [s.to_dict() for s in self._subscores],
            "info": dict(self._info),
            "content": self._content,
            "isError": self._is_error,
        }

    def _fields(self) -> tuple[Any, ...]:
        return (
            self._reward,
            self._done,
            self._subscores,
            self._info,
            self._content,
            self._is_error,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EvaluationResult):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        fields = self._fields()
        return hash((*fields[:3], *fields[4:]))

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            EvaluationResult,
            (
                self._reward,
                self._done,
                self._subscores,
                dict(self._info),
                self._content,
                self._is_error,
            ),
        )

    def __repr__(self) -> str:
        return (
            f"EvaluationResult(reward={self._reward!r}, done={self._done!r}, "
            f"subscores={None if self._subscores is None else list(self._subscores)!r}, "
            f"info={dict(self._info)!r}, content={self._content!r}, "
            f"isError={self._is_error!r})"
        )
