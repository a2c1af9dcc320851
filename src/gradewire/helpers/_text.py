"""Text comparison helpers with the signatures and semantics of HUD's native graders.

Each returns a float ready to use as a score: 1.0 or 0.0, or a value in [0, 1] for
`f1_score`. Switching from HUD is a change of import.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from gradewire.core._errors import InvalidTypeError

__all__ = ["contains", "contains_all", "contains_any", "exact_match", "f1_score", "normalize"]

_PUNCTUATION_RE = re.compile(r"[^\w\s]")
_ARTICLES_RE = re.compile(r"\b(?:a|an|the)\b", re.IGNORECASE)
_WHITESPACE_RE = re.compile(r"\s+")


def normalize(text: object) -> str:
    """Normalize text for comparison: lowercase, drop punctuation and English articles.

    Every character that is neither a word character nor whitespace becomes a space, the
    whole words "a", "an" and "the" become spaces, whitespace runs collapse to one space and
    the ends are stripped. Letters and digits of any script are kept.

    Args:
        text: The text; anything else is converted with `str()`.

    Returns:
        The normalized text.

    Example:
        >>> normalize("  The Answer is: 42! ")
        'answer is 42'
    """
    lowered = (text if isinstance(text, str) else str(text)).lower()
    # Punctuation goes first so that "the," or "(a)" are bare words when articles are removed.
    spaced = _PUNCTUATION_RE.sub(" ", lowered)
    without_articles = _ARTICLES_RE.sub(" ", spaced)
    return _WHITESPACE_RE.sub(" ", without_articles).strip()


def exact_match(answer: object, expected: object, *, normalize_text: bool = True) -> float:
    """Score 1.0 if the answer equals the expected text, else 0.0.

    When normalizing erases either side ("A", "(a)", "?", "The"), the two are compared
    with articles kept (lowercased, punctuation dropped), so an empty or article-only answer
    never matches the multiple-choice label "A"; HUD's helper scores
    ``exact_match("", "A")`` 1.0, a reward a policy learns to exploit.

    Args:
        answer: The text to grade; anything else is converted with `str()`.
        expected: The right answer; anything else is converted with `str()`.
        normalize_text: Compare `normalize()` of both (the default). When False, compare
            only after stripping surrounding whitespace and lowercasing.

    Returns:
        1.0 on a match, 0.0 otherwise.

    Example:
        >>> exact_match("The Eiffel Tower.", "eiffel tower")
        1.0
        >>> exact_match("The Eiffel Tower.", "eiffel tower", normalize_text=False)
        0.0
    """
    if normalize_text:
        got, wanted = normalize(answer), normalize(expected)
        if got and wanted:
            return 1.0 if got == wanted else 0.0
        # A side that normalize() erased ("A", "(a)", "The", "?") is compared as words with
        # articles kept, and text made only of punctuation as written.
        got_words, wanted_words = _bare_words(answer), _bare_words(expected)
        if got_words or wanted_words:
            return 1.0 if got_words == wanted_words else 0.0
        same = _as_str(answer).strip().lower() == _as_str(expected).strip().lower()
        return 1.0 if same else 0.0
    return 1.0 if _as_str(answer).strip().lower() == _as_str(expected).strip().lower() else 0.0


def contains(answer: object, substring: str, *, case_sensitive: bool = False) -> float:
    """Score 1.0 if the answer contains `substring`, else 0.0.

    An empty substring is in every answer.

    Args:
        answer: The text to grade; anything else is converted with `str()`.
        substring: The text to look for.
        case_sensitive: Compare case as written; by default both sides are lowercased.

    Returns:
        1.0 if found, 0.0 otherwise.

    Raises:
        InvalidTypeError: `substring` is not a str.

    Example:
        >>> contains("The answer is PARIS", "paris")
        1.0
    """
    if not isinstance(substring, str):
        hint = (
            "; to look for several, use contains_any() or contains_all()"
            if _is_collection(substring)
            else ", e.g. str(value)"
        )
        raise InvalidTypeError(
            f"contains() takes one substring as a str, got {type(substring).__name__}{hint}"
        )
    haystack = _as_str(answer)
    if not case_sensitive:
        return 1.0 if substring.lower() in haystack.lower() else 0.0
    return 1.0 if substring in haystack else 0.0


def contains_any(
    answer: object, substrings: Iterable[str], *, case_sensitive: bool = False
) -> float:
    """Score 1.0 if the answer contains at least one of `substrings`, else 0.0.

    Args:
        answer: The text to grade; anything else is converted with `str()`.
        substrings: An iterable of str, e.g. a list. An empty one scores 0.0, since no
            substring was found.
        case_sensitive: Compare case as written; by default both sides are lowercased.

    Returns:
        1.0 if any is found, 0.0 otherwise.

    Raises:
        InvalidTypeError: `substrings` is a bare str, is not iterable, or holds a non-str.

    Example:
        >>> contains_any("It is Paris.", ["London", "Paris"])
        1.0
    """
    haystack, needles = _search_terms("contains_any", answer, substrings, case_sensitive)
    return 1.0 if any(needle in haystack for needle in needles) else 0.0


def contains_all(
    answer: object, substrings: Iterable[str], *, case_sensitive: bool = False
) -> float:
    """Score 1.0 if the answer contains every one of `substrings`, else 0.0.

    Args:
        answer: The text to grade; anything else is converted with `str()`.
        substrings: An iterable of str, e.g. a list. An empty one scores 1.0 (vacuous
            truth: no required substring is missing).
        case_sensitive: Compare case as written; by default both sides are lowercased.

    Returns:
        1.0 if all are found, 0.0 otherwise.

    Raises:
        InvalidTypeError: `substrings` is a bare str, is not iterable, or holds a non-str.

    Example:
        >>> contains_all("Paris is the capital of France", ["paris", "france"])
        1.0
    """
    haystack, needles = _search_terms("contains_all", answer, substrings, case_sensitive)
    return 1.0 if all(needle in haystack for needle in needles) else 0.0


def f1_score(answer: object, reference: object) -> float:
    """Token-level F1 between the answer and a reference, in [0, 1].

    Both sides are split into words after `normalize()`; overlap counts repeated words as
    often as both sides have them. F1 is the harmonic mean of precision and recall, here
    `2 * overlap / (answer_words + reference_words)`. It is 0.0 if either side has no words.

    Args:
        answer: The text to grade; anything else is converted with `str()`.
        reference: The reference text; anything else is converted with `str()`.

    Returns:
        The F1 score, symmetric in its two arguments.

    Example:
        >>> f1_score("The capital is Paris, France", "Paris")
        0.4
        >>> f1_score("Paris", "Paris")
        1.0
    """
    answer_tokens = normalize(answer).split()
    reference_tokens = normalize(reference).split()
    if not answer_tokens or not reference_tokens:
        return 0.0
    overlap = sum((Counter(answer_tokens) & Counter(reference_tokens)).values())
    # Same value as 2PR/(P+R), in one rounding, so it never leaves [0, 1] and is exactly symmetric.
    return 2 * overlap / (len(answer_tokens) + len(reference_tokens))


def _bare_words(text: object) -> str:
    spaced = _PUNCTUATION_RE.sub(" ", _as_str(text).lower())
    return _WHITESPACE_RE.sub(" ", spaced).strip()


def _as_str(value: object) -> str:
    return value if isinstance(value, str) else str(value)


def _is_collection(value: object) -> bool:
    return isinstance(value, (list, tuple, set, frozenset, dict))


def _search_terms(
    function: str, answer: object, substrings: object, case_sensitive: bool
) -> tuple[str, list[str]]:
    """The answer and the substrings to look for, lowercased unless case matters."""
    needles = _substring_list(function, substrings)
    haystack = _as_str(answer)
    if case_sensitive:
        return haystack, needles
    return haystack.lower(), [needle.lower() for needle in needles]


def _substring_list(function: str, substrings: object) -> list[str]:
    if isinstance(substrings, str):
        raise InvalidTypeError(
            f"{function}() got a str for substrings; "
            'pass a list of strings, e.g. ["x"]; a str would be split into characters '
            "(to look for one substring, use contains())"
        )
    if isinstance(substrings, (bytes, bytearray)):
        raise InvalidTypeError(
            f"{function}() got {type(substrings).__name__} for substrings; "
            'pass a list of str, e.g. ["x"] (decode bytes first)'
        )
    if not isinstance(substrings, Iterable):
        raise InvalidTypeError(
            f"{function}() needs an iterable of str for substrings, got "
            f'{type(substrings).__name__}; pass a list of strings, e.g. ["x"]'
        )
    items = list(substrings)
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise InvalidTypeError(
                f"{function}() substrings[{index}] is {type(item).__name__}, not str; "
                "convert it first, e.g. str(value)"
            )
    return items
