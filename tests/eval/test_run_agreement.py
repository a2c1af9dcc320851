"""``gradewire agreement``: a grader against labels or another run, held to references."""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest
from scipy.stats import pearsonr
from sklearn.metrics import cohen_kappa_score

from gradewire import InvalidInputError
from gradewire.cli import main
from gradewire.eval.auditing._run_agreement import read_labels, run_agreement
from gradewire.sinks import read_jsonl
from support.eval_helpers import make_run

RNG = np.random.default_rng(7)
N = 40
JUDGE = RNG.integers(0, 2, N).astype(float)
PEOPLE = np.where(RNG.random(N) < 0.8, JUDGE, 1 - JUDGE)


def write_labels(path, labels, ids=None):
    ids = ids or [f"s{i}" for i in range(len(labels))]
    path.write_text(
        "".join(json.dumps({"id": i, "label": v}) + "\n" for i, v in zip(ids, labels, strict=True))
    )
    return path


def test_the_command_against_scikit_learn_and_krippendorff(tmp_path, capsys):
    make_run(tmp_path / "run", {"judge": list(JUDGE)})
    labelled = list(PEOPLE[:30]) + [None] * 10  # ten samples without a label
    labels = write_labels(
        tmp_path / "labels.jsonl", [*labelled, 1.0], [*(f"s{i}" for i in range(N)), "elsewhere"]
    )
    argv = ["agreement", str(tmp_path / "run"), "--labels", str(labels), "--grader", "judge"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 30
    assert out["n_labels"] == 31
    assert out["not_in_run"] == ["elsewhere"]
    assert out["scale"] == "nominal"
    kappa = cohen_kappa_score(JUDGE[:30], PEOPLE[:30])
    assert out["cohen_kappa"] == pytest.approx(kappa, abs=1e-9)
    alpha = krippendorff.alpha(
        reliability_data=np.array([JUDGE[:30], PEOPLE[:30]]), level_of_measurement="nominal"
    )
    assert out["krippendorff_alpha"] == pytest.approx(alpha, abs=1e-9)
    assert out["raw_agreement"] == pytest.approx(float(np.mean(JUDGE[:30] == PEOPLE[:30])))
    low, high = out["cohen_kappa_ci"]
    assert low <= kappa <= high
    disagree = [f"s{i}" for i in range(30) if JUDGE[i] != PEOPLE[i]]
    assert out["disagreements"] == disagree
    page = (tmp_path / "run" / "agreement-judge.html").read_text()
    assert "Cohen" in page
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "30 of 31 labels compared; left out: 1 labelled id(s) not in the run" in text
    assert "report: " in text


def test_csv_labels_pass_fail_and_an_interval_scale(tmp_path, capsys):
    scores = list(RNG.random(20))
    make_run(tmp_path / "run", {"judge": scores})
    people = [min(1.0, max(0.0, s + RNG.normal(0, 0.2))) for s in scores]
    rows = "id,label\n" + "".join(f"s{i},{v}\n" for i, v in enumerate(people))
    (tmp_path / "labels.csv").write_text(rows)
    run = make_run(tmp_path / "run2", {"judge": scores})
    result = run_agreement(run, "judge", read_labels(tmp_path / "labels.csv"))
    assert result.agreement.scale == "interval"
    # Compared at float32's precision, as agreement() documents.
    normal = (
        [float(str(np.float32(v))) for v in scores],
        [float(str(np.float32(v))) for v in people],
    )
    assert result.agreement.pearson == pytest.approx(pearsonr(*normal)[0], abs=1e-9)
    (tmp_path / "pf.csv").write_text("id,label\ns0,pass\ns1,FAIL\ns2,\ns3,true\n")
    assert read_labels(tmp_path / "pf.csv") == {"s0": 1.0, "s1": 0.0, "s2": None, "s3": 1.0}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "label": 1}\n{"id": "a", "label": 0}\n', "labelled twice"),
        ('{"id": "a", "label": "good"}\n', "not a number"),
        ('{"id": "a"}\n', "needs 'id' and 'label'"),
        ('{"id": "a", "label": NaN}\n', "finite"),
    ],
)
def test_bad_labels_are_refused(tmp_path, content, message):
    (tmp_path / "l.jsonl").write_text(content)
    with pytest.raises(InvalidInputError, match=message):
        read_labels(tmp_path / "l.jsonl")


def test_two_runs_give_inter_judge_agreement(tmp_path, capsys):
    make_run(tmp_path / "a", {"small": list(JUDGE)})
    make_run(tmp_path / "b", {"large": list(PEOPLE)})
    argv = ["agreement", str(tmp_path / "a"), "--grader", "small", "--labels", str(tmp_path / "b")]
    assert main([*argv, "--labels-grader", "large", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == N
    assert out["cohen_kappa"] == pytest.approx(cohen_kappa_score(JUDGE, PEOPLE), abs=1e-9)
    assert main(argv) == 2
    assert "no grader 'small'" in capsys.readouterr().err


def test_nothing_is_written_over_and_sinks_get_the_figures(tmp_path, capsys):
    make_run(tmp_path / "run", {"judge": list(JUDGE)})
    labels = write_labels(tmp_path / "labels.jsonl", list(PEOPLE))
    page = tmp_path / "run" / "agreement-judge.html"
    page.write_text("mine")
    argv = ["agreement", str(tmp_path / "run"), "--labels", str(labels), "--grader", "judge"]
    assert main(argv) == 2
    assert "gradewire did not write it" in capsys.readouterr().err
    assert page.read_text() == "mine"
    page.unlink()
    assert main([*argv, "--sink", "jsonl"]) == 0
    [(_, step)] = read_jsonl(tmp_path / "run" / "logs.jsonl").steps
    assert step["agreement/judge/cohen_kappa"] == pytest.approx(cohen_kappa_score(JUDGE, PEOPLE))
    assert main(argv) == 0  # its own page is written again
    assert main([*argv[:-1], "missing"]) == 2
    assert "no grader 'missing'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("l.csv", "id,label\ns0,1\ns1\n", "fewer fields than the header"),
        ("l.csv", "id,label\ns0,1,0\n", "more fields than the header"),
        ("l.jsonl", '{"id": "a", "label": 1, "label": 0}\n', "'label' appears twice"),
        ("l.jsonl", '{"id": "a", "label": "1_000"}\n', "not a number"),
        ("l.jsonl", '{"id": "a", "label": "\u0661"}\n', "not a number"),  # Arabic-Indic 1
        ("l.csv", "id,label\ns0,\uff11\n", "not a number"),  # fullwidth 1
    ],
)
def test_labels_with_a_field_missing_or_twice_or_odd_digits_are_refused(
    tmp_path, name, content, message
):
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=message):
        read_labels(tmp_path / name)


def test_a_quoted_csv_label_may_hold_a_newline_and_an_empty_one_is_missing(tmp_path):
    (tmp_path / "l.csv").write_text('id,label,note\ns0,1,"two\nlines"\ns1,,\n')
    assert read_labels(tmp_path / "l.csv") == {"s0": 1.0, "s1": None}


def test_the_confusion_matrix_names_the_raters_and_shows_the_labels_as_given(tmp_path, capsys):
    make_run(tmp_path / "run", {"judge": list(JUDGE)})
    words = ["pass" if v else "fail" for v in PEOPLE]
    labels = write_labels(tmp_path / "labels.jsonl", words)
    argv = ["agreement", str(tmp_path / "run"), "--labels", str(labels), "--grader", "judge"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert f"confusion (rows: grader judge, columns: {labels})" in text
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("confusion"))
    assert lines[header + 1].split() == ["fail", "pass"]
    assert [line.split()[0] for line in lines[header + 2 : header + 4]] == ["0", "1"]
    table = np.zeros((2, 2), dtype=int)
    np.add.at(table, (JUDGE.astype(int), PEOPLE.astype(int)), 1)
    assert [line.split()[1:] for line in lines[header + 2 : header + 4]] == [
        [str(c) for c in row] for row in table
    ]
    page = (tmp_path / "run" / "agreement-judge.html").read_text()
    assert "rows grader judge, columns" in page
    assert "<th>fail</th><th>pass</th>" in page


def test_grader_keys_that_clean_to_one_name_get_pages_of_their_own(tmp_path, capsys):
    make_run(tmp_path / "run", {"a/b": list(JUDGE), "a_b": list(PEOPLE)})
    labels = write_labels(tmp_path / "labels.jsonl", list(PEOPLE))
    for grader in ("a/b", "a_b"):
        argv = ["agreement", str(tmp_path / "run"), "--labels", str(labels), "--grader", grader]
        assert main(argv) == 0
    pages = sorted(p.name for p in (tmp_path / "run").glob("agreement-*.html"))
    assert len(pages) == 2
    assert "agreement-a_b.html" in pages
    contents = {(tmp_path / "run" / p).read_text().count("a/b") > 0 for p in pages}
    assert contents == {True, False}
    assert not list((tmp_path / "run").glob("*.tmp"))  # no temporary file left
