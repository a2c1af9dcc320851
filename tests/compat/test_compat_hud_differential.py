"""HUD's comparison helpers and gradewire's, called side by side on generated text.

Needs both installed (``make compat`` does): where the module docstring of gradewire.hud
names no difference, the two give the same answer on every input.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

hud_graders = pytest.importorskip("hud.graders", reason="HUD is installed by make compat")

from gradewire import hud as ours  # noqa: E402

SIDE_BY_SIDE = settings(max_examples=2_000, deadline=None, suppress_health_check=list(HealthCheck))
text = st.text(max_size=30) | st.sampled_from(
    ["The Answer!", "a an the", "Ça va? L'été", "x-1", "42.", "  ", "ß", "İ", "ﬁ", "½", "Paris"]
)
# Words and numbers written as people write them, apart by spaces.
number_words = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: f"{x:.3f}"),
    st.floats(1e-3, 1e6).map(lambda x: f"{x:.2e}"),
    st.sampled_from(["+7", "-.5", ".25", "3.", "007"]),
)
plain_numbers = st.lists(
    st.one_of(number_words, st.sampled_from(["the", "answer", "is", "about", "x", "="])),
    max_size=6,
).map(" ".join)


@SIDE_BY_SIDE
@given(text, text, st.booleans())
def test_text_helpers_agree(answer, other, case_sensitive):
    assert ours.normalize(answer) == hud_graders.normalize(answer)
    for name in ("contains",):
        assert getattr(ours, name)(answer, other, case_sensitive=case_sensitive) == getattr(
            hud_graders, name
        )(answer, other, case_sensitive=case_sensitive)
    many = [other, answer[:2]]
    for name in ("contains_any", "contains_all"):
        assert getattr(ours, name)(answer, many, case_sensitive=case_sensitive) == getattr(
            hud_graders, name
        )(answer, many, case_sensitive=case_sensitive)
    assert ours.f1_score(answer, other) == pytest.approx(hud_graders.f1_score(answer, other))
    assert ours.exact_match(answer, other, normalize_text=False) == hud_graders.exact_match(
        answer, other, normalize_text=False
    )


@SIDE_BY_SIDE
@given(text, text)
def test_exact_match_agrees_unless_normalising_erases_one_side(answer, expected):
    assume(ours.normalize(answer) and ours.normalize(expected))
    assert ours.exact_match(answer, expected) == hud_graders.exact_match(answer, expected)


@SIDE_BY_SIDE
@given(plain_numbers, st.floats(-1e6, 1e6) | st.integers(-1000, 1000), st.sampled_from([0, 0.5]))
def test_numeric_match_agrees_on_plain_numbers(answer, expected, tolerance):
    assert ours.numeric_match(answer, expected, tolerance=tolerance) == hud_graders.numeric_match(
        answer, expected, tolerance=tolerance
    )
