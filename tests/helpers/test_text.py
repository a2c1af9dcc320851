"""Tests for the HUD-compatible text helpers in gradewire.helpers._text."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradewire import (
    InvalidInputError,
    InvalidTypeError,
    contains,
    contains_all,
    contains_any,
    exact_match,
    f1_score,
    normalize,
)

# Anything a caller might hand over as an answer: the helpers convert non-str with str().
ANSWERS = st.one_of(
    st.text(),
    st.integers(),
    st.floats(),
    st.none(),
    st.booleans(),
    st.lists(st.text(max_size=5), max_size=3),
)


# --- normalize ---------------------------------------------------------------------------


def test_normalize_hud_docstring_example() -> None:
    assert normalize("  The Answer is: 42! ") == "answer is 42"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, World!", "hello world"),
        # Punctuation becomes a space, it is not deleted: the two halves stay two words.
        ("don't", "don t"),
        ("e-mail", "e mail"),
        ("3.14", "3 14"),
        ("A cat and an owl saw the mouse", "cat and owl saw mouse"),
        ("THE END", "end"),
        ("An", ""),
        # Whole words only.
        ("theory of another atheist", "theory of another atheist"),
        ("Anthem, Theta", "anthem theta"),
        # Articles freed by punctuation are removed too.
        ("(a)", ""),
        ("a.b", "b"),
        ("the-end", "end"),
        # Underscore is a word character, so it stays and keeps the word whole.
        ("snake_case the_a", "snake_case the_a"),
        ("  many \t\n  spaces\r\n", "many spaces"),
        ("", ""),
        ("!!!", ""),
        ("Ça va? Über-Größe, 東京!", "ça va über größe 東京"),
        ("½ × 2 = 1", "½ 2 1"),
    ],
)
def test_normalize_cases(text: str, expected: str) -> None:
    assert normalize(text) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(42, "42"), (3.5, "3 5"), (None, "none"), (True, "true"), (["A", "b"], "b")],
)
def test_normalize_converts_non_str_with_str(value: object, expected: str) -> None:
    assert normalize(value) == expected


@given(st.text())
def test_normalize_output_is_clean(text: str) -> None:
    result = normalize(text)
    assert result == result.strip()
    assert "  " not in result
    assert all(char.isspace() is False or char == " " for char in result)
    assert not any(word in {"a", "an", "the"} for word in result.split(" "))


@given(st.text())
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


# --- exact_match -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected", "score"),
    [
        ("Paris", "Paris", 1.0),
        ("  paris.  ", "Paris", 1.0),
        ("The Eiffel Tower!", "eiffel tower", 1.0),
        ("Paris, France", "Paris", 0.0),
        ("", "", 1.0),
        ("", "x", 0.0),
        (42, "42", 1.0),
        ("42", 42, 1.0),
        ("42.0", "42", 0.0),
    ],
)
def test_exact_match_normalized(answer: object, expected: object, score: float) -> None:
    assert exact_match(answer, expected) == score


@pytest.mark.parametrize(
    ("answer", "expected", "score"),
    [
        ("  PARIS \n", "paris", 1.0),
        ("Paris", "  Paris  ", 1.0),
        ("Paris.", "Paris", 0.0),
        ("the paris", "paris", 0.0),
        ("a  b", "a b", 0.0),
        (42, "42", 1.0),
        (None, "none", 1.0),
    ],
)
def test_exact_match_without_normalization(answer: object, expected: str, score: float) -> None:
    assert exact_match(answer, expected, normalize_text=False) == score


def test_exact_match_normalize_text_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        exact_match("a", "a", False)  # type: ignore[call-arg]


@given(ANSWERS)
def test_exact_match_reflexive(value: object) -> None:
    assert exact_match(value, value) == 1.0
    assert exact_match(value, value, normalize_text=False) == 1.0


@given(ANSWERS, ANSWERS, st.booleans())
def test_exact_match_is_binary_and_symmetric(answer: object, expected: object, norm: bool) -> None:
    score = exact_match(answer, expected, normalize_text=norm)
    assert score in (0.0, 1.0)
    assert type(score) is float
    assert exact_match(expected, answer, normalize_text=norm) == score


# --- contains ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "substring", "case_sensitive", "score"),
    [
        ("The answer is PARIS", "paris", False, 1.0),
        ("The answer is PARIS", "paris", True, 0.0),
        ("The answer is PARIS", "PARIS", True, 1.0),
        ("The answer is Paris", "London", False, 0.0),
        ("anything", "", False, 1.0),
        ("", "", True, 1.0),
        ("", "x", False, 0.0),
        # No normalization: punctuation and spacing count.
        ("Paris, France", "paris france", False, 0.0),
        (12345, "234", False, 1.0),
        (None, "non", False, 1.0),
    ],
)
def test_contains(answer: object, substring: str, case_sensitive: bool, score: float) -> None:
    assert contains(answer, substring, case_sensitive=case_sensitive) == score


def test_contains_rejects_a_list_with_a_pointer_to_contains_any() -> None:
    with pytest.raises(InvalidTypeError, match=r"contains_any\(\) or contains_all\(\)"):
        contains("a b", ["a", "b"])  # type: ignore[arg-type]


def test_contains_rejects_a_non_str_substring() -> None:
    with pytest.raises(InvalidTypeError, match=r"got int.*str\(value\)") as caught:
        contains("42", 42)  # type: ignore[arg-type]
    # gradewire's type errors are both TypeError and ValueError, as documented.
    assert isinstance(caught.value, TypeError)
    assert isinstance(caught.value, InvalidInputError)


@pytest.mark.parametrize(
    ("substrings", "case_sensitive", "any_score", "all_score"),
    [
        (["paris", "london"], False, 1.0, 0.0),
        (["paris", "france"], False, 1.0, 1.0),
        (["PARIS", "FRANCE"], True, 0.0, 0.0),
        (["PARIS", "France"], True, 1.0, 0.0),
        (["Paris", "France"], True, 1.0, 1.0),
        (["berlin", "rome"], False, 0.0, 0.0),
        (("paris", "france"), False, 1.0, 1.0),
        ({"paris"}, False, 1.0, 1.0),
        ([""], False, 1.0, 1.0),
    ],
)
def test_contains_any_and_all(
    substrings: list[str], case_sensitive: bool, any_score: float, all_score: float
) -> None:
    answer = "Paris is the capital of France"
    assert contains_any(answer, substrings, case_sensitive=case_sensitive) == any_score
    assert contains_all(answer, substrings, case_sensitive=case_sensitive) == all_score


def test_empty_substrings_any_is_false_all_is_vacuously_true() -> None:
    assert contains_any("anything", []) == 0.0
    assert contains_all("anything", []) == 1.0
    assert contains_any("", ()) == 0.0
    assert contains_all("", ()) == 1.0


def test_substrings_may_be_any_iterable_of_str() -> None:
    assert contains_any("abc", (s for s in ["x", "b"])) == 1.0
    assert contains_all("abc", iter(["a", "c"])) == 1.0
    assert contains_all("abc", {"a": 1, "b": 2}) == 1.0


def test_substrings_non_str_answer_is_converted() -> None:
    assert contains_any(3.25, ["3.2"]) == 1.0
    assert contains_all(None, ["no", "ne"]) == 1.0


ContainsMany = Callable[..., float]
MANY: list[ContainsMany] = [contains_any, contains_all]


@pytest.mark.parametrize("function", MANY)
def test_bare_str_substrings_is_a_type_error(function: ContainsMany) -> None:
    # The classic bug: contains_any(answer, "yes") would test "y", "e" and "s" one by one.
    with pytest.raises(InvalidTypeError) as caught:
        function("yes", "yes")
    message = str(caught.value)
    assert function.__name__ in message
    assert 'pass a list of strings, e.g. ["x"]; a str would be split into characters' in message


@pytest.mark.parametrize("function", MANY)
@pytest.mark.parametrize("bad", [b"yes", bytearray(b"yes")])
def test_bytes_substrings_is_a_type_error(function: ContainsMany, bad: object) -> None:
    with pytest.raises(InvalidTypeError, match="decode bytes first"):
        function("yes", bad)


@pytest.mark.parametrize("function", MANY)
@pytest.mark.parametrize("bad", [None, 42, 3.5])
def test_non_iterable_substrings_is_a_type_error(function: ContainsMany, bad: object) -> None:
    with pytest.raises(InvalidTypeError, match=r"iterable of str.*e\.g\. \[\"x\"\]"):
        function("yes", bad)


@pytest.mark.parametrize("function", MANY)
def test_non_str_item_is_a_type_error_naming_its_index(function: ContainsMany) -> None:
    with pytest.raises(InvalidTypeError, match=r"substrings\[1\] is int"):
        function("a 1", ["a", 1])


@given(st.text(), st.lists(st.text()), st.booleans())
def test_contains_family_is_binary(answer: str, substrings: list[str], case: bool) -> None:
    for score in (
        contains_any(answer, substrings, case_sensitive=case),
        contains_all(answer, substrings, case_sensitive=case),
        *(contains(answer, sub, case_sensitive=case) for sub in substrings),
    ):
        assert score in (0.0, 1.0)
        assert type(score) is float


@given(st.text(), st.data())
def test_slices_of_the_answer_are_contained(answer: str, data: st.DataObject) -> None:
    starts = st.integers(0, len(answer))
    slices = []
    for _ in range(3):
        start = data.draw(starts)
        end = data.draw(st.integers(start, len(answer)))
        slices.append(answer[start:end])
    assert contains_all(answer, slices, case_sensitive=True) == 1.0
    assert contains_any(answer, [*slices, "\x00never"], case_sensitive=True) == 1.0
    assert all(contains(answer, piece, case_sensitive=True) == 1.0 for piece in slices)


@given(st.text(), st.lists(st.text()))
def test_any_and_all_agree_with_contains(answer: str, substrings: list[str]) -> None:
    singles = [contains(answer, sub) for sub in substrings]
    assert contains_any(answer, substrings) == (1.0 if any(singles) else 0.0)
    assert contains_all(answer, substrings) == (1.0 if all(singles) else 0.0)


# --- f1_score ----------------------------------------------------------------------------


def test_f1_hud_docstring_examples() -> None:
    assert f1_score("The capital is Paris, France", "Paris") == 0.4
    assert f1_score("Paris", "Paris") == 1.0


@pytest.mark.parametrize(
    ("answer", "reference", "score"),
    [
        ("x x y", "x y", 0.8),  # multiset overlap: 2 shared tokens of 3 and 2
        ("x x x", "x", 0.5),  # repeats count only as often as the reference has them
        ("paris france", "france paris", 1.0),  # order does not matter
        ("Paris!", "the paris", 1.0),  # both sides normalized
        ("berlin", "paris", 0.0),
        ("", "paris", 0.0),
        ("paris", "", 0.0),
        ("", "", 0.0),
        ("the a an", "the", 0.0),  # articles only: no tokens
        ("...", "!!!", 0.0),
        (42, "42", 1.0),
        ("one two three four", "two four six", 4 / 7),
    ],
)
def test_f1_cases(answer: object, reference: object, score: float) -> None:
    assert f1_score(answer, reference) == pytest.approx(score)


def _reference_f1(answer: str, reference: str) -> float:
    # Precision/recall written out, to check the single-division form against it.
    predicted = normalize(answer).split()
    gold = normalize(reference).split()
    if not predicted or not gold:
        return 0.0
    shared = sum((Counter(predicted) & Counter(gold)).values())
    if shared == 0:
        return 0.0
    precision = shared / len(predicted)
    recall = shared / len(gold)
    return 2 * precision * recall / (precision + recall)


WORDS = st.lists(st.sampled_from(["paris", "france", "the", "a", "capital", "is", "x", "!"]))


@given(st.one_of(st.text(), WORDS.map(" ".join)), st.one_of(st.text(), WORDS.map(" ".join)))
def test_f1_properties(answer: str, reference: str) -> None:
    score = f1_score(answer, reference)
    assert 0.0 <= score <= 1.0
    assert type(score) is float
    assert f1_score(reference, answer) == score
    assert score == pytest.approx(_reference_f1(answer, reference))


@given(st.text())
def test_f1_of_text_with_itself(text: str) -> None:
    assert f1_score(text, text) == (1.0 if normalize(text) else 0.0)


# --- robustness --------------------------------------------------------------------------


@given(ANSWERS, st.text(), st.booleans())
def test_no_input_crashes_any_text_helper(answer: object, other: str, flag: bool) -> None:
    assert isinstance(normalize(answer), str)
    assert exact_match(answer, other, normalize_text=flag) in (0.0, 1.0)
    assert contains(answer, other, case_sensitive=flag) in (0.0, 1.0)
    assert contains_any(answer, [other], case_sensitive=flag) in (0.0, 1.0)
    assert contains_all(answer, [other], case_sensitive=flag) in (0.0, 1.0)
    assert 0.0 <= f1_score(answer, other) <= 1.0


@pytest.mark.parametrize(
    ("answer", "expected", "score"),
    [
        ("", "A", 0.0),  # HUD's normalize erases "A": an empty answer would earn 1.0
        ("The", "A", 0.0),
        ("an", "(a)", 0.0),
        ("A", "A", 1.0),
        ("(a)", "A", 1.0),
        ("a.", "A", 1.0),
        ("B", "A", 0.0),
        ("...", "!", 0.0),
        ("!", "!", 1.0),
        ("", "", 1.0),
    ],
)
def test_exact_match_never_rewards_an_empty_answer_for_a_label(
    answer: str, expected: str, score: float
) -> None:
    assert exact_match(answer, expected) == score
