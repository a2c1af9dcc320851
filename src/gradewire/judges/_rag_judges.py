"""The prebuilt RAG judges: faithfulness, context relevancy and answer relevancy.

Context documents come from the sample's ``document`` turns, else ``metadata["documents"]``.
Each judge checks a list of items (claims, documents, statements) with one batched call that
returns one verdict per item, in order; a judge that skips or adds an item gets the repair
request. Calls per sample: faithfulness 2 (claims, then support), answer relevancy 2
(statements, then relevance), context relevancy 1; fewer when it stops early.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from typing_extensions import Unpack

from gradewire.core._errors import IgnoreGradeException, InvalidInputError, InvalidTypeError
from gradewire.core._grade import Grade
from gradewire.judges._judge_base import JudgeGrader
from gradewire.judges._judge_context import JudgedSample
from gradewire.judges._judge_prompts import (
    answer_relevancy_prompt,
    claims_prompt,
    context_relevancy_prompt,
    statements_prompt,
    support_prompt,
)
from gradewire.judges._judge_settings import JudgeSettings
from gradewire.judges._verdict_lists import (
    Claims,
    RelevanceVerdict,
    Statements,
    SupportVerdict,
    clean_items,
    verdict_children,
    verdict_list_schema,
)
from gradewire.models._chat_model import ChatModel

__all__ = ["AnswerRelevancyGrader", "ContextRelevancyGrader", "FaithfulnessGrader"]

# The language codes Adaptive Harmony's faithfulness judge takes, by name for the prompt.
_LANGUAGES = {
    "en": "English",
    "hi": "Hindi",
    "mr": "Marathi",
    "zh": "Chinese",
    "es": "Spanish",
    "am": "Amharic",
    "ar": "Arabic",
    "hy": "Armenian",
    "bg": "Bulgarian",
    "ur": "Urdu",
    "ru": "Russian",
    "pl": "Polish",
    "fa": "Persian",
    "nl": "Dutch",
    "da": "Danish",
    "fr": "French",
    "my": "Burmese",
    "el": "Greek",
    "it": "Italian",
    "ja": "Japanese",
    "de": "German",
    "kk": "Kazakh",
    "sk": "Slovak",
}

_NO_DOCUMENTS = (
    "the sample has no context documents, so {what} cannot be judged; pass the retrieved "
    'chunks as document turns or as metadata["documents"]'
)


def _fraction(
    grader_key: str, children: Sequence[Grade], noun: str, passed: str, failed: str
) -> Grade:
    """The share of children that passed, explained by listing the ones that did not."""
    hits = sum(child.value for child in children)
    total = len(children)
    lines = [f"{hits:g} of {total} {noun} {passed}."]
    lines += [f"{failed.capitalize()}: {c.name} ({c.reasoning})" for c in children if not c.value]
    return Grade(
        hits / total,
        grader_key,
        "\n".join(lines),
        children=children,
        info={noun: total, passed: int(hits)},
    )


def _need_question(sample: JudgedSample, what: str) -> str:
    if sample.question is None:
        raise InvalidInputError(
            f"{what} needs the user's question, and the sample has no user turn before the "
            "answer; add it with thread.user(question)"
        )
    return sample.question


class FaithfulnessGrader(JudgeGrader):
    """Does the completion stick to the context documents? Supported claims / all claims.

    One call breaks the completion (``<think>`` blocks removed) into atomic factual claims;
    a second checks every claim against the documents at once, one verdict per claim. The
    Grade has one child per claim (``name`` the claim, 1.0 if supported, the reason in
    ``info["reason"]``). It abstains when the sample has no documents, or when the answer
    asserts no fact to check. 2 judge calls per sample (1 without claims, 0 without
    documents or answer), whatever the number of claims.

    Example: with documents "Tim Berners-Lee created the first website." and "Tim
    Berners-Lee invented the world wide web.", the question "Who published the first
    website?" and the answer "Tim Berners-Lee published the first website in August 1990.",
    a correct judge finds two claims, supports the first and not the date: 0.5.

    ``language`` names the language of the answers (an ISO 639-1 code such as ``"fr"``, as
    Adaptive Harmony takes it, or a language name): the claims are written in it. The key
    defaults to ``"faithfulness_judge"``, so Adaptive Harmony's
    ``FaithfulnessGrader(model, language="fr")`` works too.
    """

    logs_completion: ClassVar[bool] = False  # Adaptive Harmony's tables, as there

    def __init__(
        self,
        grader_key: str | ChatModel = "faithfulness_judge",
        model: ChatModel | None = None,
        *,
        language: str | None = None,
        **settings: Unpack[JudgeSettings],
    ) -> None:
        """Set up the judge (see `JudgeGrader`; ``language`` as in the class docstring)."""
        if model is None and not isinstance(grader_key, str):
            # Adaptive Harmony's form: the model first (or alone), the key by name.
            model = grader_key
            grader_key = "faithfulness_judge"
        if model is None:
            raise InvalidTypeError(
                "FaithfulnessGrader needs a judge model: FaithfulnessGrader('key', model) or "
                "FaithfulnessGrader(model=model)"
            )
        if language is not None and (not isinstance(language, str) or not language.strip()):
            raise InvalidInputError(
                f"language must be a language code such as 'fr', not {language!r}"
            )
        super().__init__(
            grader_key,  # type: ignore[arg-type]
            model,
            **settings,
        )
        self.language = language
        self._language_name = None if language is None else _LANGUAGES.get(language, language)

    async def judge(self, sample: JudgedSample) -> Grade:
        """Extract the claims, then check them against the documents."""
        if not sample.documents:
            raise IgnoreGradeException(_NO_DOCUMENTS.format(what="faithfulness"))
        if not sample.completion:
            raise IgnoreGradeException("the answer is empty: it makes no claim to check")
        extracted, _ = await self.ask(claims_prompt(sample, self._language_name), Claims)
        claims = clean_items(extracted.claims)
        if not claims:
            raise IgnoreGradeException("the answer asserts no fact to check against documents")
        schema = verdict_list_schema(SupportVerdict, len(claims))
        checked, _ = await self.ask(support_prompt(sample.documents, claims), schema)
        verdicts: list[SupportVerdict] = checked.verdicts  # type: ignore[attr-defined]
        children = verdict_children(claims, verdicts, "SUPPORTED")
        return _fraction(self.grader_key, children, "claims", "supported", "unsupported")

    def log_fields(self, grade: Grade) -> dict[str, Any]:
        """The number of claims, and of supported ones."""
        return {"claims": grade.info["claims"], "supported_claims": grade.info["supported"]}


class ContextRelevancyGrader(JudgeGrader):
    """Is the retrieved context relevant to the question? Relevant documents / all documents.

    One call judges every document against the question (and earlier turns, if any), one
    verdict per document. The Grade has one child per document (``name`` "document 1"...,
    the text in ``info["text"]``). The sample needs no assistant turn: retrieval can be
    judged before anything is generated. It abstains when there are no documents; a sample
    without a user question is an error. 1 judge call per sample.
    """

    logs_completion: ClassVar[bool] = False  # Adaptive Harmony's tables, as there

    requires_answer = False

    async def judge(self, sample: JudgedSample) -> Grade:
        """Judge every document's relevance in one call."""
        if not sample.documents:
            raise IgnoreGradeException(_NO_DOCUMENTS.format(what="context relevancy"))
        _need_question(sample, "context relevancy")
        schema = verdict_list_schema(RelevanceVerdict, len(sample.documents))
        judged, _ = await self.ask(context_relevancy_prompt(sample), schema)
        verdicts: list[RelevanceVerdict] = judged.verdicts  # type: ignore[attr-defined]
        names = [f"document {index}" for index in range(1, len(sample.documents) + 1)]
        children = verdict_children(names, verdicts, "RELEVANT", texts=sample.documents)
        return _fraction(self.grader_key, children, "documents", "relevant", "irrelevant")

    def log_fields(self, grade: Grade) -> dict[str, Any]:
        """The number of documents, and of relevant ones."""
        return {"documents": grade.info["documents"], "relevant_documents": grade.info["relevant"]}


class AnswerRelevancyGrader(JudgeGrader):
    """Does the completion answer the question? Relevant statements / all statements.

    One call breaks the completion (``<think>`` blocks removed) into statements; a second
    judges each against the question (and earlier turns), one verdict per statement. Extra
    information the user did not ask for counts as irrelevant, so it lowers the score. The
    Grade has one child per statement. An empty answer, or one that makes no statement,
    scores 0.0 (it does not address the question) with that reason; a sample without a user
    question is an error. 2 judge calls per sample (1 without statements, 0 when empty).
    """

    logs_completion: ClassVar[bool] = False  # Adaptive Harmony's tables, as there

    async def judge(self, sample: JudgedSample) -> Grade:
        """Extract the statements, then judge their relevance in one call."""
        _need_question(sample, "answer relevancy")
        if not sample.completion:
            return Grade(
                0.0,
                self.grader_key,
                "The answer is empty: it does not address the question.",
                info={"statements": 0, "relevant": 0},
            )
        extracted, _ = await self.ask(statements_prompt(sample), Statements)
        statements = clean_items(extracted.statements)
        if not statements:
            return Grade(
                0.0,
                self.grader_key,
                "The answer makes no statement, so it does not address the question.",
                info={"statements": 0, "relevant": 0},
            )
        schema = verdict_list_schema(RelevanceVerdict, len(statements))
        judged, _ = await self.ask(answer_relevancy_prompt(sample, statements), schema)
        verdicts: list[RelevanceVerdict] = judged.verdicts  # type: ignore[attr-defined]
        children = verdict_children(statements, verdicts, "RELEVANT")
        return _fraction(self.grader_key, children, "statements", "relevant", "irrelevant")

    def log_fields(self, grade: Grade) -> dict[str, Any]:
        """The number of statements, and of relevant ones."""
        return {
            "statements": grade.info["statements"],
            "relevant_statements": grade.info["relevant"],
        }
