"""StringThread: the conversation a grader scores."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, NamedTuple, TypeVar, cast

from gradewire.core._errors import InvalidInputError, InvalidTypeError

__all__ = ["ROLES", "Role", "StringThread", "Turn"]

Role = Literal["system", "user", "assistant", "document", "tool"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant", "document", "tool")
_ROLE_SET = frozenset(ROLES)
# OpenAI's newer name for a system prompt; the meaning is the same.
_ROLE_ALIASES = {"developer": "system"}

_T = TypeVar("_T", bound="StringThread")


class Turn(NamedTuple):
    """One message of a conversation."""

    role: Role
    content: str


def _check_turn(index: int, role: object, content: object) -> Turn:
    if not isinstance(role, str) or role not in _ROLE_SET:
        raise InvalidInputError(f"turn {index} has role {role!r}; use one of {', '.join(ROLES)}")
    if not isinstance(content, str):
        raise InvalidTypeError(
            f"turn {index} ({role}) has content of type {type(content).__name__}; "
            "content must be a str (join multi-part content into one string first)"
        )
    return Turn(role, content)


def _to_turn(index: int, item: object) -> Turn:
    if isinstance(item, tuple) and len(item) == 2:
        # The usual pair (or Turn): no abstract-class checks, which cost the most here
        # when a trainer's batch becomes threads.
        return _check_turn(index, item[0], item[1])
    if isinstance(item, Mapping):
        raise InvalidTypeError(
            f"turn {index} is a dict; build threads from message dicts with "
            "StringThread.from_messages(messages)"
        )
    if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
        raise InvalidTypeError(
            f"turn {index} is {item!r}; pass (role, content) pairs, "
            'e.g. [("user", "Hi"), ("assistant", "Hello")]'
        )
    return _check_turn(index, item[0], item[1])


def _message_content(index: int, message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if content is None and message.get("role") == "assistant":
        # An assistant message that only calls tools has no text.
        return ""
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                texts.append(str(part.get("text", "")))
            else:
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise InvalidInputError(
                    f"message {index} has a content part of type {kind!r}; only text parts "
                    "can be graded, so drop or describe non-text parts first"
                )
        return "".join(texts)
    return cast(str, content)


class StringThread:
    """An immutable conversation: turns of (role, content) plus a metadata dict.

    Roles are ``system``, ``user``, ``assistant``, ``document`` (retrieved context for RAG
    graders) and ``tool``. Builder methods return a new thread and leave this one as it is.

    Example:
        >>> thread = StringThread([("user", "What is 2+2?")]).assistant("4")
        >>> thread.completion()
        '4'
    """

    __slots__ = ("_turns", "metadata")

    def __init__(
        self,
        turns: Iterable[tuple[str, str]] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Build a thread from (role, content) pairs.

        Args:
            turns: The conversation in order, as ``(role, content)`` pairs or `Turn`s.
            metadata: Free-form data that travels with the sample (labels, documents, ids).
                It is copied, so later changes to the caller's dict do not leak in.
        """
        if isinstance(turns, (str, bytes, Mapping)):
            raise InvalidTypeError(
                'turns must be a list of (role, content) pairs, e.g. StringThread([("user", "Hi")])'
            )
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidTypeError(f"metadata must be a dict, not {type(metadata).__name__}")
        self._turns: tuple[Turn, ...] = tuple(
            _to_turn(index, item) for index, item in enumerate(turns)
        )
        self.metadata: dict[str, Any] = dict(metadata) if metadata else {}

    @classmethod
    def from_messages(
        cls: type[_T],
        messages: Iterable[Mapping[str, Any]],
        metadata: Mapping[str, Any] | None = None,
    ) -> _T:
        """Build a thread from OpenAI-style message dicts (``{"role": ..., "content": ...}``).

        Text content parts (``[{"type": "text", "text": ...}]``) are joined; the ``developer``
        role is read as ``system``; an assistant message with only tool calls has empty content.
        """
        if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
            raise InvalidTypeError(
                f"messages must be a list of message dicts, not {type(messages).__name__}; "
                'e.g. [{"role": "user", "content": "Hi"}]'
            )
        turns: list[Turn] = []
        for index, message in enumerate(messages):
            if not isinstance(message, Mapping):
                raise InvalidTypeError(
                    f"message {index} is {type(message).__name__}; pass dicts with "
                    "'role' and 'content' keys"
                )
            if "role" not in message:
                raise InvalidInputError(f"message {index} has no 'role' key: {dict(message)!r}")
            role = message["role"]
            role = _ROLE_ALIASES.get(role, role) if isinstance(role, str) else role
            turns.append(_check_turn(index, role, _message_content(index, message)))
        return cls(turns, metadata)

    @classmethod
    def from_dict(cls: type[_T], data: Mapping[str, Any]) -> _T:
        """Rebuild a thread from `to_dict()` output."""
        if not isinstance(data, Mapping) or "turns" not in data:
            raise InvalidInputError(
                "expected a dict with 'turns' (and optionally 'metadata'), "
                "as written by StringThread.to_dict()"
            )
        return cls.from_messages(data["turns"], data.get("metadata"))

    @classmethod
    def from_json(cls: type[_T], text: str | bytes) -> _T:
        """Rebuild a thread from `to_json()` output."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"not valid JSON for a StringThread: {exc}") from exc
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        """The thread as ``{"turns": [{"role", "content"}, ...], "metadata": {...}}``."""
        return {"turns": self.to_messages(), "metadata": dict(self.metadata)}

    def to_json(self) -> str:
        r"""The thread as JSON; metadata values must be JSON-serialisable.

        The text encodes as UTF-8 whatever the turns hold: a lone surrogate (an emoji cut
        in half by a token limit) is written as a ``\u`` escape, and reads back the same.
        """
        try:
            text = json.dumps(self.to_dict(), ensure_ascii=False)
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                return json.dumps(self.to_dict())
            return text
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"the thread's metadata cannot be written as JSON ({exc}); "
                "keep metadata to str, numbers, bools, None, lists and dicts"
            ) from exc

    def to_messages(self) -> list[dict[str, str]]:
        """The turns as OpenAI-style message dicts (the ``document`` role is kept as is)."""
        return [{"role": turn.role, "content": turn.content} for turn in self._turns]

    # Builders: each returns a new thread with one more turn.
    def _with(self: _T, role: Role, content: str) -> _T:
        new = type(self).__new__(type(self))
        new._turns = (*self._turns, _check_turn(len(self._turns), role, content))
        new.metadata = dict(self.metadata)
        return new

    def system(self: _T, content: str) -> _T:
        """A new thread with a system turn appended."""
        return self._with("system", content)

    def user(self: _T, content: str) -> _T:
        """A new thread with a user turn appended."""
        return self._with("user", content)

    def assistant(self: _T, content: str) -> _T:
        """A new thread with an assistant turn appended."""
        return self._with("assistant", content)

    def document(self: _T, content: str) -> _T:
        """A new thread with a document turn (retrieved context) appended."""
        return self._with("document", content)

    def tool(self: _T, content: str) -> _T:
        """A new thread with a tool turn appended."""
        return self._with("tool", content)

    def with_metadata(self: _T, **updates: Any) -> _T:
        """A new thread with the same turns and ``metadata`` updated by the keywords."""
        new = type(self).__new__(type(self))
        new._turns = self._turns
        new.metadata = {**self.metadata, **updates}
        return new

    # Readers.
    @property
    def turns(self) -> tuple[Turn, ...]:
        """The turns, in order."""
        return self._turns

    def get_turns(self) -> list[Turn]:
        """The turns as a new list (each has ``.role`` and ``.content``)."""
        return list(self._turns)

    def messages(self) -> list[tuple[str, str]]:
        """The prompt part: every turn but the last, when it is the assistant's, as pairs.

        Example:
            >>> StringThread([("user", "2+2?"), ("assistant", "4")]).messages()
            [('user', '2+2?')]
        """
        turns = self._turns
        if turns and turns[-1].role == "assistant":
            turns = turns[:-1]
        return [(turn.role, turn.content) for turn in turns]

    def last_content(self) -> str:
        """Content of the last turn, whatever its role."""
        if not self._turns:
            raise InvalidInputError("the thread has no turns, so it has no last content")
        return self._turns[-1].content

    def completion(self) -> str | None:
        """Content of the last assistant turn, or None if no assistant has spoken."""
        for turn in reversed(self._turns):
            if turn.role == "assistant":
                return turn.content
        return None

    def last_user_content(self) -> str | None:
        """Content of the last user turn (the question being answered), or None."""
        for turn in reversed(self._turns):
            if turn.role == "user":
                return turn.content
        return None

    def documents(self) -> list[str]:
        """Context documents: the ``document`` turns, else ``metadata["documents"]``."""
        docs = [turn.content for turn in self._turns if turn.role == "document"]
        if docs:
            return docs
        meta_docs = self.metadata.get("documents")
        if meta_docs is None:
            return []
        if isinstance(meta_docs, str) or not isinstance(meta_docs, Iterable):
            raise InvalidTypeError(
                f'metadata["documents"] must be a list of str; got {type(meta_docs).__name__}'
            )
        return [str(doc) for doc in meta_docs]

    def __len__(self) -> int:
        return len(self._turns)

    def __iter__(self) -> Iterator[Turn]:
        return iter(self._turns)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StringThread):
            return NotImplemented
        return self._turns == other._turns and self.metadata == other.metadata

    def __hash__(self) -> int:
        # Metadata is a mutable dict, so only the turns take part; equal threads still
        # hash equal because equality requires equal turns.
        return hash(self._turns)

    def __repr__(self) -> str:
        shown = ", ".join(f"({t.role!r}, {_clip(t.content)!r})" for t in self._turns)
        meta = f", metadata={self.metadata!r}" if self.metadata else ""
        return f"StringThread([{shown}]{meta})"

    def __getstate__(self) -> tuple[tuple[Turn, ...], dict[str, Any]]:
        return (self._turns, self.metadata)

    def __setstate__(self, state: tuple[tuple[Turn, ...], dict[str, Any]]) -> None:
        self._turns, self.metadata = state


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
