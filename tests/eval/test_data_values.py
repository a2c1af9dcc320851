"""What a data row may hold: each value is stored as JSON faithfully, or refused up front."""

import asyncio
import base64
import datetime as dt
import json
import math
from decimal import Decimal

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gradewire as gw
from gradewire.eval import DataError, EvalSample, load_samples, run_eval


def calls_grader(seen):
    def score(sample):
        seen.append(sample.metadata)
        return 1.0

    return gw.BaseGrader.from_function("ok", score)


def graded_twice(data, folder):
    """Grade into ``folder``, then again: the second run must find everything graded."""
    seen = []
    first = asyncio.run(run_eval(data, [calls_grader(seen)], folder))
    again = asyncio.run(run_eval(data, [calls_grader(seen)], folder))
    assert first.outcome.graded == len(first.run.records)
    assert again.outcome.graded == 0  # the input hash did not flip on resume
    assert again.outcome.skipped == len(first.run.records)
    results = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    # Lines are written as samples finish (sync graders run in worker threads): by id.
    return seen, sorted(results, key=lambda r: r["id"])


def test_jsonl_nan_is_stored_as_null_and_resumes(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(
        json.dumps({"prompt": "q", "completion": "a", "ref": float("nan"), "xs": [1, math.nan]})
        + "\n",
        encoding="utf-8",
    )
    assert "NaN" in path.read_text()  # as Python's json.dumps writes it
    seen, results = graded_twice(path, tmp_path / "run")
    assert seen[0] == {"ref": None, "xs": [1, None]}  # the grader sees what is stored
    assert results[0]["input"]["metadata"] == {"ref": None, "xs": [1, None]}


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"prompt": "q", "completion": "a", "ref": Infinity}', "'ref'"),
        ('{"prompt": "q", "completion": "a", "x": {"y": [-Infinity]}}', "'x'['y'][0]"),
        ('{"prompt": "q", "completion": "a", "big": 1e400}', "'big'"),
    ],
)
def test_jsonl_infinity_is_refused_with_its_field(tmp_path, text, field):
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "q0", "completion": "a"}\n' + text + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"d.jsonl:2: field {_re(field)} is -?Infinity"):
        load_samples(path)


def _re(text):
    import re

    return re.escape(text)


def test_a_huge_integer_is_refused_with_its_field(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"prompt": "q", "completion": "a", "n": ' + "9" * 5000 + "}\n", encoding="utf-8"
    )
    with pytest.raises(DataError, match=r"d.jsonl:1: field 'n' is an integer of 5000 digits"):
        load_samples(path)


def test_a_deeply_nested_row_is_refused(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"prompt": "q", "completion": "a", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
        encoding="utf-8",
    )
    with pytest.raises(DataError, match=r"d.jsonl:1: .*nested more than 100 levels"):
        load_samples(path)
    path.write_text(
        '{"prompt": "q", "completion": "a", "x": ' + "[" * 150 + "]" * 150 + "}\n",
        encoding="utf-8",
    )
    with pytest.raises(DataError, match=r"d.jsonl:1: field 'x'\[0\]\[0\].* nested more than"):
        load_samples(path)


def test_a_lone_surrogate_in_an_id_is_refused(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a\\ud800", "prompt": "q", "completion": "a"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"d.jsonl:1: field 'id' holds a lone surrogate"):
        load_samples(path)


def test_a_lone_surrogate_in_a_completion_is_stored_faithfully(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "q", "completion": "cut \\ud83d"}\n', encoding="utf-8")
    _, results = graded_twice(path, tmp_path / "run")
    assert results[0]["input"]["turns"][-1]["content"] == "cut \ud83d"


PARQUET_ROW = {
    "prompt": "q",
    "completion": "a",
    "nan": float("nan"),
    "when": dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.timezone.utc),
    "naive": dt.datetime(2024, 5, 1, 12, 30, 0, 123456),
    "day": dt.date(2024, 5, 1),
    "clock": dt.time(9, 15),
    "took": dt.timedelta(seconds=90, microseconds=500_000),
    "price": Decimal("12345678901234567890.123456789"),
    "blob": b"\x00\xffbytes",
    "nested": {"at": dt.date(2020, 1, 2), "xs": [float("nan"), 1.5]},
}
STORED = {
    "nan": None,
    "when": "2024-05-01T12:30:00+00:00",
    "naive": "2024-05-01T12:30:00.123456",
    "day": "2024-05-01",
    "clock": "09:15:00",
    "took": 90.5,
    "price": "12345678901234567890.123456789",
    "blob": base64.b64encode(b"\x00\xffbytes").decode(),
    "nested": {"at": "2020-01-02", "xs": [None, 1.5]},
}


def test_parquet_values_are_stored_faithfully_and_resume(tmp_path):
    path = tmp_path / "d.parquet"
    schema = pa.schema(
        [
            ("prompt", pa.string()),
            ("completion", pa.string()),
            ("nan", pa.float64()),
            ("when", pa.timestamp("us", tz="UTC")),
            ("naive", pa.timestamp("us")),
            ("day", pa.date32()),
            ("clock", pa.time64("us")),
            ("took", pa.duration("us")),
            ("price", pa.decimal128(38, 9)),
            ("blob", pa.binary()),
            (
                "nested",
                pa.struct([("at", pa.date32()), ("xs", pa.list_(pa.float64()))]),
            ),
        ]
    )
    pq.write_table(pa.Table.from_pylist([PARQUET_ROW], schema=schema), path)
    seen, results = graded_twice(path, tmp_path / "run")
    assert results[0]["input"]["metadata"] == STORED
    assert seen[0] == STORED


def test_parquet_infinity_is_refused_with_its_row_and_field(tmp_path):
    path = tmp_path / "d.parquet"
    rows = [{"prompt": "q", "completion": "a", "x": 1.0}, {"prompt": "r", "completion": "b"}]
    rows[1]["x"] = float("inf")
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(DataError, match=r"d.parquet row 1: field 'x' is Infinity"):
        load_samples(path)


def test_a_saved_dataset_with_dates_and_bytes(tmp_path):
    folder = tmp_path / "ds"
    features = datasets.Features(
        {
            "prompt": datasets.Value("string"),
            "completion": datasets.Value("string"),
            "when": datasets.Value("timestamp[s]"),
            "blob": datasets.Value("binary"),
            "score": datasets.Value("float64"),
        }
    )
    datasets.Dataset.from_list(
        [
            {
                "prompt": "q",
                "completion": "a",
                "when": dt.datetime(2024, 1, 2, 3, 4, 5),
                "blob": b"hi",
                "score": float("nan"),
            }
        ],
        features=features,
    ).save_to_disk(str(folder))
    _, results = graded_twice(folder, tmp_path / "run")
    assert results[0]["input"]["metadata"] == {
        "when": "2024-01-02T03:04:05",
        "blob": "aGk=",
        "score": None,
    }


def test_csv_cells_are_text(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("prompt,completion,ref\nq,a,NaN\n", encoding="utf-8")
    _, results = graded_twice(path, tmp_path / "run")
    assert results[0]["input"]["metadata"] == {"ref": "NaN"}


def sample(sample_id, metadata, completion="a"):
    thread = gw.StringThread([("user", "q")], metadata)
    if completion is not None:
        thread = thread.assistant(completion)
    return EvalSample(sample_id, thread, f"hash-{sample_id}", f"samples[{sample_id}]")


def test_python_samples_are_stored_as_data_files_are(tmp_path):
    samples = [
        sample("a", {"nan": float("nan"), "when": dt.date(2024, 5, 1), "n": np.int64(3)}),
        sample("b", {"blob": b"hi", "xs": (1, 2), "f": np.float32(0.5), "v": np.array([1, 2])}),
    ]
    seen, results = graded_twice(samples, tmp_path / "run")
    assert [r["input"]["metadata"] for r in results] == [
        {"nan": None, "when": "2024-05-01", "n": 3},
        {"blob": "aGk=", "xs": [1, 2], "f": 0.5, "v": [1, 2]},
    ]

    def text(metadata: dict) -> str:
        return json.dumps(metadata, sort_keys=True)

    # The grader saw what is stored (in the order the samples were graded).
    assert sorted(map(text, seen)) == sorted(text(r["input"]["metadata"]) for r in results)


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"x": float("inf")}, r"samples\[s\]: field 'metadata'\['x'\] is Infinity"),
        ({"x": {1, 2}}, r"field 'metadata'\['x'\] is a set"),
        ({"x": object()}, r"field 'metadata'\['x'\] is a object"),
        ({1: "a"}, r"field 'metadata' has the key 1"),
        ({"x": 10**5000}, r"field 'metadata'\['x'\] is an integer of 5001 digits"),
    ],
)
def test_python_samples_that_cannot_be_stored_are_refused_before_grading(
    tmp_path, metadata, message
):
    seen = []
    with pytest.raises(DataError, match=message):
        asyncio.run(run_eval([sample("s", metadata)], [calls_grader(seen)], tmp_path / "run"))
    assert seen == []
    assert not (tmp_path / "run" / "results.jsonl").exists()


@pytest.mark.parametrize(
    ("samples", "message"),
    [
        ([sample("a\ud800", {})], "lone surrogate"),
        ([sample("", {})], "empty"),
        (
            [sample("a", {}), sample("a", {})],
            r"samples\[a\]: id .a. is used again \(first at samples\[a\]\)",
        ),
        ([sample("a", {}, completion=None)], "no completion"),
    ],
)
def test_python_sample_ids_and_completions_are_checked(tmp_path, samples, message):
    seen = []
    with pytest.raises(DataError, match=message):
        asyncio.run(run_eval(samples, [calls_grader(seen)], tmp_path / "run"))
    assert seen == []


def test_python_prompt_only_samples_when_asked(tmp_path):
    seen = []
    result = asyncio.run(
        run_eval(
            [sample("a", {}, completion=None)],
            [calls_grader(seen)],
            tmp_path / "run",
            allow_prompt_only=True,
        )
    )
    assert result.outcome.graded == 1


def test_a_grader_key_that_is_not_whole_text_is_refused_before_grading(tmp_path):
    grader = gw.BaseGrader.from_function("x\ud800", lambda s: 1.0)
    with pytest.raises(gw.InvalidInputError, match=r"grader key .* holds a lone surrogate"):
        asyncio.run(run_eval([sample("a", {})], [grader], tmp_path / "run"))
