"""The answer shapes of the RAG judges: item lists, and one verdict per item."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, create_model

from gradewire.core._grade import Grade
from gradewire.judges._judge_base import upper_label

__all__ = [
    "Claims",
    "RelevanceVerdict",
    "Statements",
    "SupportVerdict",
    "clean_items",
    "verdict_children",
    "verdict_list_schema",
]


# Bounds for grammar-constrained servers (OpenAI's strict mode refuses them, so the
# "json_schema" dialect leaves them out; nothing is validated against them): a small model
# held to a list grammar otherwise writes items, or one string that never closes, until the
# token limit cuts it off. llama.cpp expands maxLength into nested rules, so it stays small
# (1,500 no longer compiles, and the server dies on it).
_ITEM_BOUNDS: dict[str, Any] = {"maxItems": 20, "items": {"type": "string", "maxLength": 300}}


class Claims(BaseModel):
    """The atomic factual claims of an answer."""

    claims: list[str] = Field(json_schema_extra=_ITEM_BOUNDS)


class Statements(BaseModel):
    """The statements an answer makes."""

    statements: list[str] = Field(json_schema_extra=_ITEM_BOUNDS)


# One short reason per item is what the prompts ask; the bound keeps a looping model from
# writing one reason until the token limit on a grammar-constrained server.
def _short() -> Any:
    return Field(json_schema_extra={"maxLength": 300})


class SupportVerdict(BaseModel):
    """Whether the documents support one claim."""

    reasoning: str = _short()
    verdict: Annotated[Literal["SUPPORTED", "UNSUPPORTED"], BeforeValidator(upper_label)]


class RelevanceVerdict(BaseModel):
    """Whether one item is relevant to the question."""

    reasoning: str = _short()
    verdict: Annotated[Literal["RELEVANT", "IRRELEVANT"], BeforeValidator(upper_label)]


@functools.lru_cache(maxsize=256)
def verdict_list_schema(item: type[BaseModel], count: int) -> type[BaseModel]:
    """``{"verdicts": [item, ...]}`` holding exactly ``count`` items.

    The count is in the JSON schema (``minItems`` = ``maxItems``), so a grammar-constrained
    server writes exactly ``count`` verdicts; OpenAI's strict mode refuses those keywords, so
    the ``"json_schema"`` dialect leaves them out, and the validator checks the count there:
    a judge that skips an item gets a repair request naming the count, not a misaligned score.
    """

    def exactly(verdicts: list[Any]) -> list[Any]:
        if len(verdicts) != count:
            raise ValueError(
                f"expected exactly {count} verdicts, one per item in order, got {len(verdicts)}"
            )
        return verdicts

    schema: type[BaseModel] = create_model(
        f"{item.__name__}List",
        verdicts=(
            Annotated[list[item], AfterValidator(exactly)],  # type: ignore[valid-type]
            Field(json_schema_extra={"minItems": count, "maxItems": count}),
        ),  # type: ignore[arg-type]
    )
    return schema


def clean_items(items: Iterable[str]) -> list[str]:
    """The non-blank items, stripped, without repeats, in order."""
    seen: dict[str, None] = {}
    for item in items:
        text = item.strip()
        if text:
            seen.setdefault(text, None)
    return list(seen)


def verdict_children(
    names: Sequence[str],
    verdicts: Sequence[SupportVerdict | RelevanceVerdict],
    positive: str,
    texts: Sequence[str] | None = None,
) -> list[Grade]:
    """One child per item: 1.0 when the verdict is ``positive``, with the judge's reason.

    ``texts`` (when the name is only a label, such as "document 2") is kept in
    ``info["text"]``.
    """
    children: list[Grade] = []
    for index, (name, verdict) in enumerate(zip(names, verdicts, strict=True)):
        info: dict[str, Any] = {"verdict": verdict.verdict, "reason": verdict.reasoning}
        if texts is not None:
            info["text"] = texts[index]
        children.append(
            Grade(
                1.0 if verdict.verdict == positive else 0.0,
                name,
                verdict.reasoning,
                info=info,
            )
        )
    return children
