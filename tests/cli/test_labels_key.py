"""The grader a labels file is of, chosen one way for `eval --labels` and `compare --labels-a`."""

from __future__ import annotations

import pytest

from gradewire import GradewireError
from gradewire.cli._labels_key import labels_grader_key


def test_the_only_grader_needs_no_choice() -> None:
    assert labels_grader_key(None, ["brevity"], "the grader file") == "brevity"


def test_a_choice_among_several_is_kept() -> None:
    assert labels_grader_key("b", ["a", "b"], "both runs") == "b"


def test_several_graders_and_no_choice_are_refused_naming_them() -> None:
    with pytest.raises(GradewireError, match=r"both runs has 2 graders \(a, b\); name the one"):
        labels_grader_key(None, ["a", "b"], "both runs")
    with pytest.raises(GradewireError, match="the grader file has 0 graders"):
        labels_grader_key(None, [], "the grader file")


def test_a_grader_that_is_not_there_is_refused() -> None:
    with pytest.raises(GradewireError, match=r"'c' is not a grader of the grader file \(a, b\)"):
        labels_grader_key("c", ["a", "b"], "the grader file")
