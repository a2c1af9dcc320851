"""text_similarity: a similarity metric between the templated input and reference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from gradewire.core._grade import Grade
from gradewire.core._thread import StringThread
from gradewire.openai._base import OpenAIGrader
from gradewire.openai._embeddings import EmbeddingsClient, cosine_similarity
from gradewire.openai._errors import ErrorKind
from gradewire.openai._metrics import lexical_metric
from gradewire.openai._sample import OpenAISample
from gradewire.openai._template import Template

__all__ = ["TextSimilarity"]


class TextSimilarity(OpenAIGrader):
    """OpenAI's ``text_similarity``: the metric's value is the score.

    The lexical metrics run in this process (see `gradewire.openai._metrics` for which
    library computes each); ``cosine`` embeds both texts through an OpenAI-compatible
    embeddings endpoint. With ``pass_threshold`` (Evals' testing criteria), a sample
    passes at or above it.
    """

    error_kinds: ClassVar[tuple[ErrorKind, ...]] = (
        "invalid_variable_error",
        "sample_parse_error",
        "model_grader_server_error",
        "other_error",
    )

    def __init__(
        self,
        grader_key: str,
        config: Mapping[str, Any],
        *,
        where: str,
        embeddings: EmbeddingsClient | None,
    ) -> None:
        super().__init__(grader_key, config, pass_threshold=config.get("pass_threshold"))
        self.metric: str = config["evaluation_metric"]
        self.input = Template(config["input"], f"{where}.input")
        self.reference = Template(config["reference"], f"{where}.reference")
        self.embeddings = embeddings
        self._lexical = None if self.metric == "cosine" else lexical_metric(self.metric)

    async def grade(self, sample: StringThread) -> Grade:
        """Render both templates and compute the metric."""
        seen = OpenAISample(sample)
        text = self.input.render(seen)
        reference = self.reference.render(seen)
        if self._lexical is not None:
            value = self._lexical(text, reference)
        else:
            assert self.embeddings is not None
            a, b = await self.embeddings.embed([text, reference])
            value = cosine_similarity(a, b)
        return self.scored(
            value,
            sample,
            reasoning=f"{self.metric} = {value:.4f}",
            info={"metric": self.metric, "input": text, "reference": reference},
        )
