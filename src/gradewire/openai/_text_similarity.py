"""text_similarity: a similarity metric between the templated input and reference."""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from gradewire.core._grade import Grade
from gradewire.core._thread import StringThread
from gradewire.helpers._math_pool import WorkerPool
from gradewire.openai._base import OpenAIGrader
from gradewire.openai._embeddings import EmbeddingsClient, cosine_similarity
from gradewire.openai._errors import ErrorKind, OpenAIGraderError
from gradewire.openai._metrics import INLINE_COST, lexical_metric, metric_cost, size_problem
from gradewire.openai._sample import OpenAISample
from gradewire.openai._template import Template

__all__ = ["TextSimilarity", "metric_pool"]

# Workers that compute long metrics; each runs one at a time, on a core of its own.
_POOL_SIZE = max(1, min(2, os.cpu_count() or 1))
_pool: WorkerPool | None = None
_pool_lock = threading.Lock()


def metric_pool() -> WorkerPool:
    """The process-wide pool of metric workers (started on first use, kept between calls)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = WorkerPool(str(Path(__file__).with_name("_metrics_worker.py")), _POOL_SIZE)
            atexit.register(_pool.close)
        return _pool


class TextSimilarity(OpenAIGrader):
    """OpenAI's ``text_similarity``: the metric's value is the score.

    The lexical metrics are computed by their libraries (see `gradewire.openai._metrics`
    for which computes each): short texts in this process, long ones in a worker process
    that the grade's `timeout` (or a cancellation) kills, so a long text never holds the
    event loop and a timed-out grade is a timeout outcome. A text too long for its metric
    to finish (rougeL and meteor are quadratic) is refused: an ``other_error``, never run.
    ``cosine`` embeds both texts through an OpenAI-compatible embeddings endpoint. With
    ``pass_threshold`` (Evals' testing criteria), a sample passes at or above it.
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
            problem = size_problem(self.metric, text, reference)
            if problem is not None:
                raise OpenAIGraderError(problem)
            if metric_cost(self.metric, text, reference) <= INLINE_COST:
                value = self._lexical(text, reference)
            else:
                value = await self._in_worker(text, reference)
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

    async def _in_worker(self, text: str, reference: str) -> float:
        try:
            value = await metric_pool().acall((self.metric, text, reference))
        except RuntimeError as exc:
            raise OpenAIGraderError(f"the {self.metric} metric failed: {exc}") from None
        return float(value)
