"""What a judge sees of a sample, and how untrusted text is fenced into a judge prompt."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gradewire.core._errors import InvalidInputError
from gradewire.core._thread import StringThread, Turn
from gradewire.helpers._json_candidates import strip_reasoning

__all__ = ["JudgedSample", "numbered", "section", "strip_thinking"]

# The tags judge prompts wrap material in. Untrusted text that writes one of them (to close a
# section early and smuggle in instructions) has its "<" replaced by "&lt;", so the judge can
# still read it but never as a tag of the prompt.
_TAGS = (
    "answer",
    "claims?",
    "conversation",
    "criterion",
    "documents?",
    "item",
    "mistake",
    "question",
    "requirement",
    "statements?",
    "steps",
    "turn",
)
_TAG_OPENING = re.compile(r"<(?=\s*/?\s*(?:" + "|".join(_TAGS) + r")\b)", re.IGNORECASE)


def strip_thinking(text: str) -> str:
    """``text`` without ``<think>``/``<thinking>`` blocks, stripped of surrounding blanks.

    An unclosed opening tag drops the rest (the answer never came); a closing tag with no
    opening one drops everything before it (models that omit the opening tag).
    """
    return strip_reasoning(text)[0].strip()


def _neutralise(text: str) -> str:
    return _TAG_OPENING.sub("&lt;", text)


def section(tag: str, text: str, **attributes: str | int) -> str:
    """``text`` wrapped in ``<tag>...</tag>``; prompt tags written inside it are defused."""
    attrs = "".join(f' {name}="{value}"' for name, value in attributes.items())
    return f"<{tag}{attrs}>\n{_neutralise(text)}\n</{tag}>"


def numbered(outer: str, inner: str, texts: Sequence[str]) -> str:
    """``texts`` as ``<inner id="1">`` ... sections inside one ``<outer>`` section."""
    body = "\n".join(section(inner, text, id=index) for index, text in enumerate(texts, 1))
    return f"<{outer}>\n{body}\n</{outer}>"


def _turns(tag: str, turns: Sequence[Turn]) -> str:
    body = "\n".join(section("turn", turn.content, role=turn.role) for turn in turns)
    return f"<{tag}>\n{body}\n</{tag}>"


@dataclass(frozen=True)
class JudgedSample:
    """The parts of a sample a judge is shown, reasoning blocks removed from assistant turns.

    Attributes:
        thread: The sample as given.
        completion: The last assistant turn, ``<think>`` blocks removed: the answer judged.
        question: The last user turn before the completion (None if there is none).
        history: Earlier turns, before the question (system prompt, earlier exchanges, tool
            turns), without ``document`` turns.
        steps: Turns between the question and the completion (an agent's tool calls and
            results), without ``document`` turns.
        documents: The context documents (``document`` turns, else ``metadata["documents"]``).
    """

    thread: StringThread
    completion: str
    question: str | None
    history: tuple[Turn, ...]
    steps: tuple[Turn, ...]
    documents: tuple[str, ...]

    @classmethod
    def of(cls, thread: StringThread, *, require_answer: bool = True) -> JudgedSample:
        """Split ``thread`` into what a judge is shown.

        Args:
            thread: The sample.
            require_answer: Refuse a thread with no assistant turn; when False such a thread
                reads as an empty completion after its last turn.

        Raises:
            InvalidInputError: ``require_answer`` and the thread has no assistant turn.
        """
        turns = thread.turns
        answer_at = next(
            (i for i in range(len(turns) - 1, -1, -1) if turns[i].role == "assistant"), None
        )
        if answer_at is None:
            if require_answer:
                raise InvalidInputError(
                    "the sample has no assistant turn, so a judge has no answer to grade; "
                    "append the completion with thread.assistant(text)"
                )
            answer_at = len(turns)
            turns = (*turns, Turn("assistant", ""))
        question_at = next(
            (i for i in range(answer_at - 1, -1, -1) if turns[i].role == "user"), None
        )
        split = answer_at if question_at is None else question_at
        return cls(
            thread=thread,
            completion=strip_thinking(turns[answer_at].content),
            question=None if question_at is None else turns[question_at].content,
            history=_shown(turns[:split]),
            steps=_shown(turns[split + 1 : answer_at]) if question_at is not None else (),
            documents=tuple(thread.documents()),
        )

    def context_sections(self, *, documents: bool = True) -> list[str]:
        """The context as prompt sections: documents, earlier turns, then the question."""
        parts: list[str] = []
        if documents and self.documents:
            parts.append(numbered("documents", "document", self.documents))
        if self.history:
            parts.append(_turns("conversation", self.history))
        parts.append(section("question", self.question or "(no user question)"))
        if self.steps:
            parts.append(_turns("steps", self.steps))
        return parts

    def answer_section(self) -> str:
        """The completion as a prompt section (an empty answer is said to be empty)."""
        return section("answer", self.completion or "(empty answer)")


def _shown(turns: Sequence[Turn]) -> tuple[Turn, ...]:
    return tuple(
        Turn(turn.role, strip_thinking(turn.content)) if turn.role == "assistant" else turn
        for turn in turns
        if turn.role != "document"
    )
