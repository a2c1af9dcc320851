"""HUD's comparison helpers: the same answers, except where gradewire deliberately differs.

Runs against ``hud.graders`` and ``gradewire.hud`` alike (see `compat_targets`). A
deliberate difference is pinned on both sides: ``HUD if REAL else GRADEWIRE``.
"""

from __future__ import annotations

import pytest
from compat_targets import REAL
from hud_target import (
    contains,
    contains_all,
    contains_any,
    exact_match,
    f1_score,
    normalize,
    numeric_match,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello World", "hello world"),
        ("answer: 42!", "answer 42"),
        ("The answer is a test", "answer is test"),
        ("  lots   of    space  ", "lots of space"),
        (42, "42"),
        ("An apple, the end.", "apple end"),
        ("Ça va? L'été!", "ça va l été"),
        ("", ""),
    ],
)
def test_normalize(text, expected):
    assert normalize(text) == expected


@pytest.mark.parametrize(
    ("answer", "expected", "kwargs", "score"),
    [
        ("The Answer!", "answer", {}, 1.0),
        ("Paris.", "Paris", {}, 1.0),
        ("The capital is Paris", "capital is Paris", {}, 1.0),
        ("Germany", "france", {}, 0.0),
        (42, "42", {}, 1.0),
        ("", "", {}, 1.0),
        ("Paris", "Paris", {"normalize_text": False}, 1.0),
        (" paris ", "PARIS", {"normalize_text": False}, 1.0),
        ("The Paris!", "Paris", {"normalize_text": False}, 0.0),
    ],
)
def test_exact_match(answer, expected, kwargs, score):
    assert exact_match(answer, expected, **kwargs) == score


def test_exact_match_of_an_answer_normalising_erases():
    # HUD: "" and "The" normalise to "", as does the label "A", so they match it.
    expected = 1.0 if REAL else 0.0
    assert exact_match("", "A") == expected
    assert exact_match("The", "a") == expected


@pytest.mark.parametrize(
    ("helper", "args", "kwargs", "score"),
    [
        (contains, ("The capital of France is Paris", "paris"), {}, 1.0),
        (contains, ("The capital of France is Paris", "berlin"), {}, 0.0),
        (contains, ("Paris", "paris"), {"case_sensitive": True}, 0.0),
        (contains, ("Paris", "Paris"), {"case_sensitive": True}, 1.0),
        (contains, (12345, "234"), {}, 1.0),
        (contains_any, ("I like Toyota cars", ["toyota", "honda"]), {}, 1.0),
        (contains_any, ("I like BMW cars", ["toyota", "honda"]), {}, 0.0),
        (contains_any, ("anything", []), {}, 0.0),
        (contains_any, ("Toyota", ["toyota"]), {"case_sensitive": True}, 0.0),
        (contains_all, ("Toyota and Honda", ["toyota", "honda"]), {}, 1.0),
        (contains_all, ("Toyota only", ["toyota", "honda"]), {}, 0.0),
        (contains_all, ("anything", []), {}, 1.0),
    ],
)
def test_contains_helpers(helper, args, kwargs, score):
    assert helper(*args, **kwargs) == score


@pytest.mark.parametrize(
    ("answer", "expected", "kwargs", "score"),
    [
        ("The answer is 42", 42, {}, 1.0),
        ("Result: 3.14", 3.14, {}, 1.0),
        ("no numbers", 42, {}, 0.0),
        ("The answer is 41", 42, {}, 0.0),
        ("The answer is 41.5", 42, {"tolerance": 1.0}, 1.0),
        ("The answer is 40", 42, {"tolerance": 1.0}, 0.0),
        ("Temperature is -5 degrees", -5, {}, 1.0),
        ("There are 3 items and 5 left", 3, {}, 1.0),
        ("It is +7", 7, {}, 1.0),
        ("about .5 of it", 0.5, {}, 1.0),
        ("Avogadro: 6.02e23", 6.02e23, {}, 1.0),
        (42, 42, {}, 1.0),
    ],
)
def test_numeric_match(answer, expected, kwargs, score):
    assert numeric_match(answer, expected, **kwargs) == score


def test_numeric_match_reads_thousands_separators_and_fractions():
    # HUD takes the first run of digits: "1,000" is 1 and "3/4" is 3.
    assert numeric_match("It costs 1,000 dollars", 1000) == (0.0 if REAL else 1.0)
    assert numeric_match("It costs 1,000 dollars", 1) == (1.0 if REAL else 0.0)
    assert numeric_match("three quarters: 3/4", 0.75) == (0.0 if REAL else 1.0)
    # HUD reads "wait..5" as 0.5; gradewire takes the ".." for an ellipsis before a 5.
    assert numeric_match("wait..5", 0.5) == (1.0 if REAL else 0.0)
    assert numeric_match("wait..5", 5) == (0.0 if REAL else 1.0)
    # HUD reads the "-" of "E-1" as a minus; gradewire as a hyphen joined to a word.
    assert numeric_match("form E-1", -1) == (1.0 if REAL else 0.0)
    assert numeric_match("form E-1", 1) == (0.0 if REAL else 1.0)


@pytest.mark.parametrize(
    ("answer", "reference", "score"),
    [
        ("Paris", "Paris", 1.0),
        ("The capital is Paris, France", "Paris", 0.4),
        ("Berlin", "Paris", 0.0),
        ("", "Paris", 0.0),
        ("Paris", "", 0.0),
        ("New York City", "New York City", 1.0),
        ("The PARIS!", "paris", 1.0),
        ("I believe the answer is 42 degrees", "42 degrees", 0.5),
        ("42", "42 degrees celsius", 0.5),
    ],
)
def test_f1_score(answer, reference, score):
    assert f1_score(answer, reference) == pytest.approx(score, abs=1e-15)
