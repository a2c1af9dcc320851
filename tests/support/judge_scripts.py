"""Script the loopback judge server like a judge that reads its prompt.

`JudgeRules` answers each chat request with the reply of the first rule whose text occurs in
the request's last user message (the judge task, its tagged material and answer format), so
a test decides verdicts by what the judge was actually shown. A request no rule matches gets
a 400 naming it, which surfaces as a `ModelCallError` in the test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Union

from support.judge_server import Reply, Request, error

__all__ = ["JudgeRules", "last_user", "sections", "verdict", "verdicts"]

RuleReply = Union[Reply, str, Callable[[Request], Any]]  # noqa: UP007 - runtime alias on 3.10


def last_user(request: Request) -> str:
    """The content of the last user message of a chat request."""
    messages = request.json["messages"]
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


def sections(text: str, tag: str) -> list[str]:
    """The contents of every ``<tag ...>...</tag>`` section of a prompt, in order."""
    pattern = re.compile(rf"<{tag}(?:\s[^>]*)?>\n(.*?)\n</{tag}>", re.DOTALL)
    return pattern.findall(text)


def verdict(label: str, reasoning: str = "because") -> str:
    """A judge answer ``{"reasoning": ..., "verdict": label}``."""
    return json.dumps({"reasoning": reasoning, "verdict": label})


def verdicts(*labels: str) -> str:
    """A list-judge answer ``{"verdicts": [...]}``, one entry per label."""
    return json.dumps(
        {"verdicts": [{"reasoning": f"item {i}", "verdict": v} for i, v in enumerate(labels, 1)]}
    )


class JudgeRules:
    """A judge server handler: the first rule whose text is in the last user message answers."""

    def __init__(self) -> None:
        self.rules: list[tuple[str, RuleReply]] = []

    def when(self, text: str, reply: RuleReply) -> JudgeRules:
        """Answer requests whose last user message contains ``text`` with ``reply``."""
        self.rules.append((text, reply))
        return self

    def __call__(self, request: Request) -> Any:
        content = last_user(request)
        for text, reply in self.rules:
            if text in content:
                return reply(request) if callable(reply) else reply
        return error(400, f"no test rule matches this judge prompt: {content[:200]!r}")
