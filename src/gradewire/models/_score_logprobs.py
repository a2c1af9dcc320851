"""The judge's probabilities over a score, read from the logprobs of the token that holds it."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from gradewire.models._chat_model import TokenLogprob

__all__ = ["ScoreDistribution", "score_distribution"]

# The score field of the judge's JSON answer; the last one wins (the answer comes last).
_SCORE_FIELD = re.compile(r'"score"\s*:\s*"?(-?\d+)')
# A token that is a number, maybe with the JSON around it that some tokenizers merge in.
_NUMBER_TOKEN = re.compile(r'[\s":]*(-?\d+)[\s",}]*')


@dataclass(frozen=True)
class ScoreDistribution:
    """Probabilities of the valid scores at the score token.

    Attributes:
        probabilities: Score -> probability, renormalised over the valid scores found among
            the token's top alternatives.
        mass: The probability those valid scores had before renormalising (how much of the
            judge's belief the top alternatives cover).
    """

    probabilities: dict[int, float]
    mass: float

    @property
    def expected(self) -> float:
        """The expected score."""
        return sum(score * p for score, p in self.probabilities.items())


def _number(token: str) -> int | None:
    match = _NUMBER_TOKEN.fullmatch(token)
    return None if match is None else int(match.group(1))


def score_distribution(
    logprobs: Sequence[TokenLogprob], score: int, low: int, high: int
) -> ScoreDistribution | None:
    """The distribution over ``low``..``high`` at the token holding ``"score": <n>``.

    None when it cannot be read: no score field in the tokens, a score split over several
    tokens (say ``1`` + ``0``), a token that disagrees with the parsed ``score``, or no
    valid integer among the alternatives. An alternative such as ``" 4"`` counts as 4; one
    that is not a whole number in range is left out. When a range holds both ``1`` and
    ``10``..., an alternative ``1`` is read as 1, though a tokenizer that splits numbers
    could have meant the start of 10; the chosen token is always checked to be whole.
    """
    starts: list[int] = []
    position = 0
    for item in logprobs:
        starts.append(position)
        position += len(item.token)
    text = "".join(item.token for item in logprobs)
    match = None
    for match in _SCORE_FIELD.finditer(text):  # noqa: B007 - the last match is wanted
        pass
    if match is None:
        return None
    start, end = match.span(1)
    index = next(i for i in range(len(starts) - 1, -1, -1) if starts[i] <= start)
    chosen = logprobs[index]
    if end > starts[index] + len(chosen.token) or _number(chosen.token) != score:
        return None
    alternatives = dict(chosen.top)
    alternatives.setdefault(chosen.token, chosen.logprob)
    weights: dict[int, float] = {}
    for token, logprob in alternatives.items():
        value = _number(token)
        if value is None or not low <= value <= high or math.isnan(logprob):
            continue
        weights[value] = weights.get(value, 0.0) + math.exp(logprob)
    mass = sum(weights.values())
    if not mass > 0:
        return None
    return ScoreDistribution({s: weights[s] / mass for s in sorted(weights)}, mass)
