"""agreement(): what it reads, what it refuses, what it reports and how it shows it."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from gradewire import InvalidInputError, InvalidTypeError
from gradewire.stats import agreement

JUDGE = {"q1": "pass", "q2": "fail", "q3": "pass", "q4": "pass", "q5": "fail", "q6": "pass"}
PEOPLE = {"q1": "pass", "q2": "fail", "q3": "fail", "q4": "pass", "q5": "fail", "q7": "pass"}


# --- what it reads ------------------------------------------------------------------------


def test_labels_keyed_by_id_pair_up_and_unpaired_ids_are_counted():
    result = agreement(JUDGE, PEOPLE, n_resamples=0)
    assert result.n == 5
    assert result.n_left_out == 2  # q6 (judge only) and q7 (people only)
    assert result.raw_agreement == pytest.approx(4 / 5)
    assert result.disagreements == ("q3",)
    assert result.categories == ("fail", "pass")
    assert result.confusion.tolist() == [[2, 0], [1, 2]]  # rows: the judge; columns: people


def test_none_nan_and_pandas_na_are_missing_labels():
    a = {"x": 1, "y": 0, "z": 1, "w": None, "v": float("nan")}
    b = pd.Series([1, 0, 0, 1, 1], index=["x", "y", "z", "w", "v"], dtype="Int64")
    b["z"] = pd.NA
    result = agreement(a, b, n_resamples=0)
    assert result.n == 2
    assert result.n_left_out == 3


def test_a_series_is_read_by_its_index_not_its_position():
    a = pd.Series(["good", "bad", "good"], index=["s3", "s1", "s2"])
    b = {"s1": "bad", "s2": "good", "s3": "good"}
    assert agreement(a, b, n_resamples=0).raw_agreement == 1.0


def test_sequences_align_with_ids_and_may_mix_with_mappings():
    ids = ["a", "b", "c", "d"]
    judge = [1, 2, 3, None]
    people = {"a": 1, "b": 2, "c": 2, "d": 3}
    result = agreement(judge, people, ids=ids, scale="ordinal", n_resamples=0)
    assert result.n == 3
    assert result.disagreements == ("c",)
    numpy_judge = agreement(np.array([1.0, 2.0, 3.0, np.nan]), people, ids=ids, n_resamples=0)
    assert numpy_judge.n == 3


def test_sequences_without_ids_are_keyed_by_position():
    result = agreement([1, 0, 1, 1], [1, 1, 1, 1], n_resamples=0)
    assert result.n == 4
    assert result.disagreements == (1,)


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "message"),
    [
        ([1, 0], {"x": 1}, {}, "pass ids="),
        ([1, 0, 1], [1, 0], {}, "different lengths"),
        ({"x": 1}, {"x": 1}, {"ids": ["x"]}, "leave ids= out"),
        ([1, 0], [1, 0], {"ids": ["x", "x"]}, "twice"),
        ([1, 0, 1], [1, 0], {"ids": ["x", "y"]}, "has 3 labels but ids has 2"),
        ({1: "a", 2: "b"}, {"1": "a", "2": "b"}, {}, "differ only in type"),
        ("abc", "abd", {}, "not str"),
        (42, [1], {}, "not int"),
    ],
)
def test_ids_that_do_not_line_up_are_refused_with_a_fix(a, b, kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        agreement(a, b, n_resamples=0, **kwargs)


def test_a_table_is_refused_with_the_column_to_pass():
    frame = pd.DataFrame({"label": [1, 0]})
    with pytest.raises(InvalidTypeError, match="pass one of its columns"):
        agreement(frame, [1, 0])


def test_duplicate_index_in_a_series_is_refused():
    with pytest.raises(InvalidInputError, match="twice"):
        agreement(pd.Series([1, 0], index=["x", "x"]), {"x": 1})


# --- label types --------------------------------------------------------------------------


def test_strings_mixed_with_numbers_are_refused():
    with pytest.raises(InvalidTypeError, match="mix strings and numbers"):
        agreement({"x": "1", "y": "0"}, {"x": 1, "y": 0})


def test_bools_are_categories_but_refused_beside_numbers_on_a_categorical_scale():
    result = agreement([True, False, True], [True, True, True], n_resamples=0)
    assert result.categories == (False, True)
    assert result.confusion.tolist() == [[0, 1], [0, 2]]
    with pytest.raises(InvalidTypeError, match="True and 1"):
        agreement([True, False], [1, 0])
    # On an interval scale a bool is the number it stands for.
    interval = agreement([True, False, True], [1.0, 0.0, 0.5], scale="interval", n_resamples=0)
    assert interval.mean_absolute_difference == pytest.approx(0.5 / 3)


def test_one_and_one_point_zero_are_the_same_category():
    result = agreement([1, 0, 1], [1.0, 0.0, 0.0], n_resamples=0)
    assert result.categories == (0, 1)
    assert result.raw_agreement == pytest.approx(2 / 3)


def test_ordinal_strings_need_their_order():
    with pytest.raises(InvalidInputError, match="categories="):
        agreement(["bad", "good"], ["good", "good"], scale="ordinal")
    result = agreement(
        ["bad", "good", "ok", "good"],
        ["ok", "good", "ok", "bad"],
        scale="ordinal",
        categories=["bad", "ok", "good"],
        n_resamples=0,
    )
    assert result.categories == ("bad", "ok", "good")
    # Largest disagreement first: good vs bad (2 steps) before bad vs ok (1 step).
    assert result.disagreements == (3, 0)


def test_a_label_outside_the_categories_is_refused():
    with pytest.raises(InvalidInputError, match="not one of categories"):
        agreement(["bad", "great"], ["bad", "bad"], scale="ordinal", categories=["bad", "ok"])


def test_interval_scale_refuses_strings_categories_and_infinities():
    with pytest.raises(InvalidTypeError, match="interval scale compares numbers"):
        agreement(["a"], ["b"], scale="interval")
    with pytest.raises(InvalidInputError, match="categories="):
        agreement([1, 2], [1, 2], scale="interval", categories=[1, 2])
    with pytest.raises(InvalidInputError, match="finite"):
        agreement([1.0, math.inf], [1.0, 2.0], scale="interval")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scale": "ratio"}, "scale must be one of"),
        ({"confidence": 1.0}, "confidence"),
        ({"n_resamples": 1}, "n_resamples"),
        ({"n_resamples": -5}, "n_resamples"),
        ({"tolerance": 0.5}, "interval scale"),
        ({"tolerance": -1.0, "scale": "interval"}, "tolerance"),
        ({"statistics": ["pearson"]}, "choose among raw_agreement, cohen_kappa"),
        ({"statistics": "cohen_kappa"}, "list of names"),
    ],
)
def test_arguments_out_of_range_are_refused(kwargs, message):
    with pytest.raises(InvalidInputError, match=message):
        agreement([1, 0], [1, 0], **kwargs)


# --- edge cases: undefined statistics are NaN with a reason --------------------------------


def test_one_category_only_leaves_kappa_and_alpha_undefined_never_one():
    # A category nobody used (no) does not make chance agreement less than perfect.
    result = agreement(["yes"] * 6, ["yes"] * 6, scale="ordinal", categories=["no", "yes"])
    assert result.raw_agreement == 1.0
    for name in ("cohen_kappa", "weighted_kappa_linear", "krippendorff_alpha"):
        assert math.isnan(result.statistics[name]), name
        assert "same label" in result.notes[name] or "same (" in result.notes[name]
        assert all(math.isnan(v) for v in result.ci(name))
    assert "every bootstrap resample gives 1" in result.notes["raw_agreement_ci"]


def test_one_rater_constant_gives_kappa_zero_as_scikit_learn_but_no_correlation():
    from sklearn.metrics import cohen_kappa_score

    a, b = [2, 2, 2, 2, 2], [1, 2, 3, 2, 2]
    result = agreement(a, b, scale="ordinal", n_resamples=0)
    assert result.cohen_kappa == pytest.approx(cohen_kappa_score(a, b)) == 0.0
    assert math.isnan(result.spearman)
    assert "rater a gives every item the same label (2)" in result.notes["spearman"]


def test_fewer_than_two_items():
    one = agreement({"x": "a", "y": "b"}, {"x": "a"})
    assert one.n == 1
    assert one.raw_agreement == 1.0  # a true share, if a thin one
    assert math.isnan(one.cohen_kappa)
    assert one.notes["cohen_kappa"] == "fewer than 2 items to compare (n = 1)"
    assert all(math.isnan(v) for v in one.ci("raw_agreement"))


def test_all_missing():
    result = agreement({"x": None}, {"y": 1})
    assert result.n == 0
    assert result.n_left_out == 2
    assert all(math.isnan(v) for v in result.statistics.values())
    assert result.disagreements == ()
    assert result.confusion.shape == (0, 0)
    assert json.dumps(result.to_dict(), allow_nan=True)


def test_undefined_in_some_resamples_gives_no_interval_and_says_why():
    # Two items of "no" among 10: some resamples hold no "no" at all.
    a = ["yes"] * 8 + ["no"] * 2
    b = ["yes"] * 8 + ["no"] * 2
    result = agreement(a, b, n_resamples=500)
    assert result.cohen_kappa == 1.0
    assert all(math.isnan(v) for v in result.ci("cohen_kappa"))
    assert "undefined in" in result.notes["cohen_kappa_ci"]


# --- what it reports ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scale", "statistics"),
    [
        ("nominal", ["raw_agreement", "cohen_kappa", "krippendorff_alpha"]),
        (
            "ordinal",
            [
                "raw_agreement",
                "cohen_kappa",
                "weighted_kappa_linear",
                "weighted_kappa_quadratic",
                "krippendorff_alpha",
                "spearman",
            ],
        ),
        (
            "interval",
            [
                "raw_agreement",
                "mean_absolute_difference",
                "krippendorff_alpha",
                "pearson",
                "spearman",
            ],
        ),
    ],
)
def test_to_dict_has_the_statistics_of_the_scale_with_their_intervals(scale, statistics):
    rng = np.random.default_rng(1)
    a = rng.integers(1, 6, 80)
    b = np.clip(a + rng.integers(-1, 2, 80), 1, 5)
    result = agreement(a, b, scale=scale, n_resamples=300)
    out = result.to_dict()
    expected = {"n", "disagreements", *statistics, *(f"{s}_ci" for s in statistics)}
    assert set(out) == expected
    assert list(result.statistics) == statistics
    assert out["n"] == 80
    for name in statistics:
        low, high = out[f"{name}_ci"]
        assert low <= out[name] <= high, name
    assert out["disagreements"] == list(result.disagreements)
    json.dumps(out)


def test_the_applicable_properties_and_none_for_the_others():
    nominal = agreement([1, 0, 1], [1, 0, 0], n_resamples=0)
    assert nominal.cohen_kappa is not None
    assert nominal.pearson is None
    assert nominal.weighted_kappa_linear is None
    interval = agreement([1, 0, 2], [1, 0.5, 2], scale="interval", n_resamples=0)
    assert interval.cohen_kappa is None
    assert interval.pearson is not None


def test_more_than_two_raters_give_alpha_and_raw_agreement():
    a = {"x": 1, "y": 2, "z": 3}
    b = {"x": 1, "y": 2, "z": 2}
    c = {"x": 1, "y": 3}
    result = agreement(a, b, c, scale="ordinal", n_resamples=0)
    assert result.raters == 3
    assert set(result.statistics) == {"raw_agreement", "krippendorff_alpha"}
    assert result.raw_agreement == pytest.approx(1 / 3)  # only x: every rater agrees
    assert result.confusion is None
    assert result.disagreements == ("y", "z")


def test_interval_disagreements_beyond_the_tolerance_largest_first():
    a = {"p": 0.1, "q": 0.5, "r": 0.9, "s": 1.1}
    b = {"p": 0.1, "q": 0.9, "r": 0.95, "s": 1.3}
    exact = agreement(a, b, scale="interval", n_resamples=0)
    assert exact.disagreements == ("q", "s", "r")
    assert exact.raw_agreement == 0.25
    loose = agreement(a, b, scale="interval", tolerance=0.2, n_resamples=0)
    # 1.3 - 1.1 is 0.20000000000000018 in floating point: still within 0.2.
    assert loose.disagreements == ("q",)
    assert loose.raw_agreement == 0.75
    assert loose.tolerance == 0.2


def test_statistics_subset():
    result = agreement([1, 0, 1, 1], [1, 0, 0, 1], statistics=["krippendorff_alpha"])
    assert list(result.statistics) == ["krippendorff_alpha"]
    assert set(result.to_dict()) == {
        "n",
        "krippendorff_alpha",
        "krippendorff_alpha_ci",
        "disagreements",
    }


def test_result_is_immutable():
    result = agreement([1, 0, 1, 1], [1, 0, 0, 1], n_resamples=0)
    with pytest.raises(AttributeError):
        result.n = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        result.statistics["cohen_kappa"] = 1.0  # type: ignore[index]
    with pytest.raises(ValueError, match="read-only"):
        result.confusion[0, 0] = 9


# --- how it shows it ----------------------------------------------------------------------

HOSTILE = "<script>alert(1)</script>\x1b[2J\u202e"


def test_terminal_text_escapes_control_characters_in_ids_and_labels():
    a = {HOSTILE: "x\x1b[31m", "ok": "y"}
    b = {HOSTILE: "y", "ok": "y"}
    text = str(agreement(a, b, n_resamples=0))
    assert "\x1b" not in text
    assert "\u202e" not in text
    assert "\\x1b[2J" in text
    assert "Cohen's κ" in text
    assert "confusion (rows: first rater, columns: second rater)" in text


def test_notebook_view_escapes_ids_and_labels():
    a = {HOSTILE: "<b>x</b>", "ok": "y"}
    b = {HOSTILE: "y", "ok": "y"}
    page = agreement(a, b, n_resamples=0)._repr_html_()
    assert "<script>" not in page
    assert "<b>x</b>" not in page
    assert "&lt;script&gt;" in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page
    assert "Krippendorff" in page


def test_describe_explains_each_statistic_in_words():
    result = agreement(JUDGE, PEOPLE, n_resamples=200)
    words = result.describe()
    assert "agreement beyond what chance alone would give" in words.lower()
    assert "1 is perfect, 0 is what two raters labelling at random" in words
    assert "95% interval" in words
    assert result.method in words


def test_same_seed_same_intervals():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, 120)
    b = np.where(rng.random(120) < 0.7, a, rng.integers(0, 3, 120))
    first = agreement(a, b, seed=3, n_resamples=500)
    assert agreement(a, b, seed=3, n_resamples=500).intervals == first.intervals
    assert agreement(a, b, seed=4, n_resamples=500).intervals != first.intervals
    assert first.method == "BCa bootstrap, 500 resamples of the items, seed 3"


# --- clusters -----------------------------------------------------------------------------


def test_clusters_by_mapping_or_aligned_sequence():
    ids = [f"s{i}" for i in range(40)]
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 40)
    b = np.where(rng.random(40) < 0.8, a, 1 - a)
    topics = [i // 4 for i in range(40)]
    by_map = agreement(
        dict(zip(ids, a.tolist(), strict=True)),
        dict(zip(ids, b.tolist(), strict=True)),
        clusters=dict(zip(ids, topics, strict=True)),
        n_resamples=300,
    )
    by_sequence = agreement(a, b, ids=ids, clusters=topics, n_resamples=300)
    assert by_map.n_clusters == by_sequence.n_clusters == 10
    assert by_map.intervals == by_sequence.intervals
    assert "10 clusters" in by_map.method


def test_clusters_must_cover_every_compared_item():
    with pytest.raises(InvalidInputError, match="no cluster for 1 compared items"):
        agreement({"x": 1, "y": 0}, {"x": 1, "y": 1}, clusters={"x": "t"})
    with pytest.raises(InvalidInputError, match="mapping id"):
        agreement({"x": 1, "y": 0}, {"x": 1, "y": 1}, clusters=["t", "u"])


def test_one_cluster_gives_no_interval_and_says_why():
    result = agreement([1, 0, 1, 0], [1, 0, 0, 0], clusters=["t"] * 4)
    assert all(math.isnan(v) for v in result.ci("cohen_kappa"))
    assert "one cluster" in result.notes["cohen_kappa_ci"]


def test_named_raters_head_the_confusion_matrix_escaped():
    a, b = {"q1": "pass", "q2": "fail"}, {"q1": "pass", "q2": "pass"}
    result = agreement(a, b, n_resamples=0, names=["judge", HOSTILE])
    assert result.rater_names == ("judge", HOSTILE)
    text = str(result)
    assert "confusion (rows: judge, columns: <script>alert(1)</script>\\x1b[2J\\u202e)" in text
    page = result._repr_html_()
    assert "rows judge, columns &lt;script&gt;" in page
    assert "<script>" not in page
    with pytest.raises(InvalidInputError, match="2 strings, one per rater"):
        agreement(a, b, n_resamples=0, names=["judge"])
