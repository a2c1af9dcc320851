import json

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gradewire.eval import DataError, load_samples

ROWS = [
    {"id": "q1", "prompt": "What is 2+2?", "completion": "4", "answer": 4},
    {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]},
    {"prompt": "Capital of France?", "completion": "Paris", "topic": "geo"},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_rows_become_threads_with_metadata_and_ids(tmp_path):
    samples = load_samples(write_jsonl(tmp_path / "d.jsonl", ROWS))
    assert [s.thread.completion() for s in samples] == ["4", "Hello", "Paris"]
    assert samples[0].id == "q1"
    assert samples[0].thread.metadata == {"answer": 4}
    assert samples[2].thread.metadata == {"topic": "geo"}
    assert samples[1].id.startswith("h")
    assert samples[0].where.endswith("d.jsonl:1")


def test_hashed_ids_depend_on_the_prompt_only_so_two_models_pair_up(tmp_path):
    a = load_samples(write_jsonl(tmp_path / "a.jsonl", [{"prompt": "Q", "completion": "x"}]))
    b = load_samples(write_jsonl(tmp_path / "b.jsonl", [{"prompt": "Q", "completion": "y"}]))
    assert a[0].id == b[0].id
    assert a[0].input_hash != b[0].input_hash  # the completion changed: resume re-grades


def test_repeated_prompts_get_numbered_ids(tmp_path):
    rows = [{"prompt": "Q", "completion": str(i)} for i in range(3)]
    ids = [s.id for s in load_samples(write_jsonl(tmp_path / "d.jsonl", rows))]
    assert ids[1] == ids[0] + "#2"
    assert ids[2] == ids[0] + "#3"


def test_limit(tmp_path):
    assert len(load_samples(write_jsonl(tmp_path / "d.jsonl", ROWS), limit=2)) == 2


def test_bad_jsonl_names_every_bad_line_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"prompt": "ok", "completion": "fine"}\n'
        "{not json\n"
        '{"prompt": "q", "completion": 5}\n'
        '{"completion": "no prompt"}\n'
        '{"messages": [{"role": "wizard", "content": "x"}]}\n'
        '{"id": "dup", "prompt": "a", "completion": "b"}\n',
        encoding="utf-8",
    )
    with pytest.raises(DataError) as info:
        load_samples(path)
    text = str(info.value)
    assert "4 bad row(s), nothing was graded" in text
    assert f"{path}:2: not valid JSON" in text
    assert f"{path}:3: field 'completion' must be a string" in text
    assert f"{path}:4: no 'messages' field and no 'prompt' field" in text
    assert f"{path}:5: field 'messages'" in text
    assert "wizard" in text


def test_duplicate_ids_are_an_error(tmp_path):
    rows = [
        {"id": 1, "prompt": "a", "completion": "b"},
        {"id": "1", "prompt": "c", "completion": "d"},
    ]
    with pytest.raises(
        DataError, match=r"d.jsonl:2: id '1' is used again \(first at .*d.jsonl:1\)"
    ):
        load_samples(write_jsonl(tmp_path / "d.jsonl", rows))


def test_csv(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text(
        'id,prompt,completion,answer\na,"What, exactly?",yes,1\n'
        'b,"[{""role"": ""user"", ""content"": ""hi""}]",hello,2\n',
        encoding="utf-8",
    )
    samples = load_samples(path)
    assert [s.id for s in samples] == ["a", "b"]
    assert samples[0].thread.last_user_content() == "What, exactly?"
    assert samples[1].thread.to_messages()[0] == {"role": "user", "content": "hi"}
    assert samples[0].thread.metadata == {"answer": "1"}


def test_bad_csv_names_the_line_and_field(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("question,answer\nq,a\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"d.csv:1: no 'messages' or 'prompt' column"):
        load_samples(path)
    path.write_text('prompt,completion,messages\n,,"[oops"\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"d.csv:2: field 'messages' is not a JSON list"):
        load_samples(path)


def test_parquet(tmp_path):
    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS[:1] + ROWS[2:]), path)
    samples = load_samples(path)
    assert [s.thread.completion() for s in samples] == ["4", "Paris"]
    pq.write_table(pa.Table.from_pylist([{"prompt": "q", "completion": 3}]), path)
    with pytest.raises(DataError, match=r"d.parquet row 0: field 'completion' must be a string"):
        load_samples(path)


def test_hugging_face_dataset_on_disk(tmp_path):
    folder = tmp_path / "ds"
    datasets.Dataset.from_list(
        [
            {"prompt": "q1", "completion": "a1", "answer": "x"},
            {"prompt": "q2", "completion": "a2", "answer": "y"},
        ]
    ).save_to_disk(str(folder))
    samples = load_samples(folder)
    assert [s.thread.completion() for s in samples] == ["a1", "a2"]
    bad = tmp_path / "bad"
    datasets.Dataset.from_list([{"question": "q"}]).save_to_disk(str(bad))
    with pytest.raises(DataError, match=r"bad row 0: no 'messages' field and no 'prompt' field"):
        load_samples(bad)


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_samples(tmp_path / "nope.jsonl")
    (tmp_path / "d.txt").write_text("x")
    with pytest.raises(DataError, match=r"unknown data format '\.txt'"):
        load_samples(tmp_path / "d.txt")
