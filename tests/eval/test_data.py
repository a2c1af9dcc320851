import json

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gradewire import InvalidInputError
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


# Answers in the wrong column: a row without a completion is refused before grading.


@pytest.mark.parametrize("column", ["response", "output", "completon"])
def test_a_completion_in_another_column_is_refused_with_the_likely_column(tmp_path, column):
    rows = [{"id": f"q{i}", "prompt": f"q{i}", column: "4", "answer": 4} for i in range(30)]
    with pytest.raises(DataError) as info:
        load_samples(write_jsonl(tmp_path / "d.jsonl", rows))
    text = str(info.value)
    assert "30 row(s) have no completion" in text
    assert f"{tmp_path / 'd.jsonl'}:1" in text  # where the first one is
    assert f"answer, id, prompt, {column}" in text or column in text  # the columns found
    assert f"completion_key={column!r}" in text
    assert f"--completion-key {column}" in text
    assert "allow_prompt_only" in text
    assert text.count("no completion") == 1  # one problem for the data set, not 30


def test_completion_key_maps_a_column_and_the_default_column_becomes_metadata(tmp_path):
    rows = [{"prompt": "q", "response": "4", "completion": "old"}]
    (sample,) = load_samples(write_jsonl(tmp_path / "d.jsonl", rows), completion_key="response")
    assert sample.thread.completion() == "4"
    assert sample.thread.metadata == {"completion": "old"}


def test_prompt_key_maps_a_column(tmp_path):
    rows = [{"question": "2+2?", "response": "4"}]
    (sample,) = load_samples(
        write_jsonl(tmp_path / "d.jsonl", rows), prompt_key="question", completion_key="response"
    )
    assert sample.thread.to_messages() == [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4"},
    ]
    path = tmp_path / "d.csv"
    path.write_text("question,response\n2+2?,4\n", encoding="utf-8")
    (sample,) = load_samples(path, prompt_key="question", completion_key="response")
    assert sample.thread.completion() == "4"
    with pytest.raises(DataError, match=r"no 'messages' or 'question ' column"):
        load_samples(tmp_path / "d.csv", prompt_key="question ")


def test_the_options_are_checked():
    with pytest.raises(InvalidInputError, match="must differ"):
        load_samples("x.jsonl", prompt_key="text", completion_key="text")
    with pytest.raises(InvalidInputError, match="completion_key='id' names a field"):
        load_samples("x.jsonl", completion_key="id")
    with pytest.raises(InvalidInputError, match="completion_key must be a non-empty str"):
        load_samples("x.jsonl", completion_key="")
    with pytest.raises(InvalidInputError, match=r"unknown data option.*completion_kye"):
        load_samples("x.jsonl", completion_kye="response")  # type: ignore[call-arg]


def test_messages_whose_last_turn_is_not_the_assistants_are_refused(tmp_path):
    rows = [
        {"messages": [{"role": "user", "content": "Hi"}]},
        {
            "messages": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello"},
                {"role": "user", "content": "and?"},
            ]
        },
    ]
    with pytest.raises(DataError, match=r"2 row\(s\) have no completion"):
        load_samples(write_jsonl(tmp_path / "d.jsonl", rows))


def test_messages_as_a_prompt_with_a_completion_column(tmp_path):
    rows = [{"messages": [{"role": "user", "content": "Hi"}], "response": "Hello"}]
    (sample,) = load_samples(write_jsonl(tmp_path / "d.jsonl", rows), completion_key="response")
    assert sample.thread.completion() == "Hello"
    both = [
        {
            "messages": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello"},
            ],
            "completion": "Bye",
        }
    ]
    with pytest.raises(DataError, match="two completions"):
        load_samples(write_jsonl(tmp_path / "e.jsonl", both))


def test_a_prompt_only_data_set_needs_to_be_asked_for(tmp_path):
    rows = [{"prompt": "q1"}, {"messages": [{"role": "user", "content": "q2"}]}]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(DataError, match="no completion"):
        load_samples(path)
    samples = load_samples(path, allow_prompt_only=True)
    assert [s.thread.completion() for s in samples] == [None, None]


def test_a_mix_lists_the_rows_without_a_completion(tmp_path):
    rows = [{"prompt": "a", "completion": "x"}, {"prompt": "b", "answer": "y"}]
    with pytest.raises(DataError) as info:
        load_samples(write_jsonl(tmp_path / "d.jsonl", rows))
    text = str(info.value)
    assert f"{tmp_path / 'd.jsonl'}:2" in text
    assert f"{tmp_path / 'd.jsonl'}:1" not in text


def test_the_same_rule_for_csv_parquet_and_datasets(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("prompt,output\nq,a\n", encoding="utf-8")
    with pytest.raises(DataError, match="completion_key='output'"):
        load_samples(path)
    parquet = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist([{"prompt": "q", "generation": "a"}]), parquet)
    with pytest.raises(DataError, match="completion_key='generation'"):
        load_samples(parquet)
    assert load_samples(parquet, completion_key="generation")[0].thread.completion() == "a"
    folder = tmp_path / "ds"
    datasets.Dataset.from_list([{"prompt": "q", "model_output": "a"}]).save_to_disk(str(folder))
    with pytest.raises(DataError, match="completion_key='model_output'"):
        load_samples(folder)


# Ids: one id, one sample, whatever made it.


def test_an_explicit_id_equal_to_another_rows_hashed_id_is_an_error(tmp_path):
    first = load_samples(write_jsonl(tmp_path / "a.jsonl", [{"prompt": "Q", "completion": "x"}]))
    hashed = first[0].id
    rows = [
        {"id": hashed, "prompt": "other question", "completion": "y"},
        {"prompt": "Q", "completion": "z"},
    ]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(DataError) as info:
        load_samples(path)
    text = str(info.value)
    assert hashed in text
    assert f"{path}:1" in text
    assert f"{path}:2" in text


def test_an_explicit_id_equal_to_a_numbered_hashed_id_is_an_error(tmp_path):
    rows = [{"prompt": "Q", "completion": "x"}, {"prompt": "Q", "completion": "y"}]
    ids = [s.id for s in load_samples(write_jsonl(tmp_path / "a.jsonl", rows))]
    rows.append({"id": ids[1], "prompt": "R", "completion": "z"})
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(DataError, match=rf"{path}:2.*{path}:3|{path}:3.*{path}:2"):
        load_samples(path)


def test_every_repeated_id_is_reported(tmp_path):
    rows = [{"id": i % 2, "prompt": str(i), "completion": "x"} for i in range(4)]
    with pytest.raises(DataError) as info:
        load_samples(write_jsonl(tmp_path / "d.jsonl", rows))
    assert "2 bad row(s)" in str(info.value)


# Smaller things.


def test_jsonl_with_a_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(ROWS[0]).encode() + b"\n")
    assert load_samples(path)[0].id == "q1"


def test_a_bad_utf8_byte_is_reported_on_its_line(tmp_path):
    path = tmp_path / "d.jsonl"
    good = json.dumps({"prompt": "p" * 100, "completion": "c"}).encode() + b"\n"
    bad = b'{"prompt": "\xff", "completion": "c"}\n'
    path.write_bytes(good * 3000 + bad + good * 10 + bad)
    with pytest.raises(DataError) as info:
        load_samples(path)
    text = str(info.value)
    assert f"{path}:3001: not UTF-8" in text
    assert f"{path}:3012: not UTF-8" in text
    assert "2 bad row(s)" in text


def test_a_bad_utf8_byte_in_csv_is_reported_on_its_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"prompt,completion\n" + b"q,a\n" * 5000 + b"q,\xff\n")
    with pytest.raises(DataError, match=rf"{path}:5002: not UTF-8"):
        load_samples(path)


def test_a_large_csv_cell_is_read(tmp_path):
    path = tmp_path / "d.csv"
    long = "x" * 300_000
    path.write_text(f"prompt,completion\nq,{long}\n", encoding="utf-8")
    assert load_samples(path)[0].thread.completion() == long
    import csv

    assert csv.field_size_limit() == 131072  # the process-wide limit is left as it was


def test_duplicate_csv_columns_are_refused(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("prompt,completion,answer,answer\nq,a,1,2\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"d.csv:1: the column 'answer' appears twice"):
        load_samples(path)


def test_duplicate_json_keys_are_refused(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "q", "completion": "a", "completion": "b"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"d.jsonl:1: the key 'completion' appears twice"):
        load_samples(path)


def test_empty_messages_are_refused(tmp_path):
    with pytest.raises(DataError, match=r"d.jsonl:1: field 'messages' is empty"):
        load_samples(write_jsonl(tmp_path / "d.jsonl", [{"messages": []}]), allow_prompt_only=True)


def test_tool_calls_are_kept(tmp_path):
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
    }
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "name": "weather", "content": "sunny"},
        {"role": "assistant", "content": "Sunny.", "tool_calls": [call]},
    ]
    (sample,) = load_samples(write_jsonl(tmp_path / "d.jsonl", [{"messages": messages}]))
    assert sample.thread.completion() == "Sunny."
    assert sample.thread.metadata["message_fields"] == {
        "1": {"tool_calls": [call]},
        "2": {"tool_call_id": "call_1", "name": "weather"},
        "3": {"tool_calls": [call]},
    }
    other = dict(messages[3], tool_calls=[dict(call, id="call_2")])
    (changed,) = load_samples(
        write_jsonl(tmp_path / "e.jsonl", [{"messages": [*messages[:3], other]}])
    )
    assert changed.input_hash != sample.input_hash  # a changed call re-grades on resume


def test_a_message_fields_column_is_not_overwritten(tmp_path):
    rows = [
        {
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "a", "name": "bot"},
            ],
            "message_fields": 1,
        }
    ]
    with pytest.raises(DataError, match="message_fields"):
        load_samples(write_jsonl(tmp_path / "d.jsonl", rows))


def test_conversational_prompt_and_completion_as_trl_writes_them(tmp_path):
    rows = [
        {
            "prompt": [{"role": "user", "content": "Hi"}],
            "completion": [{"role": "assistant", "content": "Hello"}],
        }
    ]
    (sample,) = load_samples(write_jsonl(tmp_path / "d.jsonl", rows))
    assert sample.thread.to_messages() == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
    ]
    rows[0]["completion"] = [{"role": "user", "content": "Hello"}]
    with pytest.raises(DataError, match="field 'completion' does not end with an assistant"):
        load_samples(write_jsonl(tmp_path / "e.jsonl", rows))


def test_a_prompt_list_ending_with_the_assistant_has_its_completion(tmp_path):
    rows = [{"prompt": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]}]
    (sample,) = load_samples(write_jsonl(tmp_path / "d.jsonl", rows))
    assert sample.thread.completion() == "Yo"


def test_utf16_jsonl_is_named_as_such(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n", encoding="utf-16")
    with pytest.raises(DataError, match=r"d.jsonl:1: the file is UTF-16 text; save it as UTF-8"):
        load_samples(path)
