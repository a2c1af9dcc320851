import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradewire import InvalidInputError, InvalidTypeError, StringThread
from gradewire.core import Turn


def test_build_from_pairs_and_read_back():
    thread = StringThread(
        [("system", "Be brief."), ("user", "2+2?"), ("assistant", "4")],
        metadata={"answer": 4},
    )
    assert thread.get_turns() == [
        Turn("system", "Be brief."),
        Turn("user", "2+2?"),
        Turn("assistant", "4"),
    ]
    assert thread.get_turns()[1].content == "2+2?"
    assert thread.get_turns()[1].role == "user"
    assert thread.last_content() == "4"
    assert thread.completion() == "4"
    assert thread.last_user_content() == "2+2?"
    assert thread.metadata == {"answer": 4}
    assert len(thread) == 3
    assert [role for role, _ in thread] == ["system", "user", "assistant"]


def test_builders_return_new_threads():
    base = StringThread().system("sys")
    asked = base.user("q")
    answered = asked.assistant("a")
    assert len(base) == 1
    assert len(asked) == 2
    assert answered.get_turns()[-1] == Turn("assistant", "a")
    with_docs = StringThread().document("d1").document("d2").user("q").tool("out")
    assert with_docs.documents() == ["d1", "d2"]
    assert with_docs.get_turns()[-1].role == "tool"


def test_builder_copies_metadata():
    base = StringThread([("user", "q")], metadata={"k": 1})
    child = base.assistant("a")
    child.metadata["k"] = 2
    assert base.metadata == {"k": 1}
    assert base.with_metadata(label="x").metadata == {"k": 1, "label": "x"}


def test_metadata_is_copied_from_caller():
    meta = {"k": 1}
    thread = StringThread([("user", "q")], metadata=meta)
    meta["k"] = 2
    assert thread.metadata == {"k": 1}


def test_completion_is_last_assistant_or_none():
    assert StringThread([("user", "q")]).completion() is None
    thread = StringThread([("user", "q"), ("assistant", "a1"), ("user", "q2")])
    assert thread.completion() == "a1"
    assert thread.last_content() == "q2"


def test_last_content_of_empty_thread_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="no turns"):
        StringThread().last_content()


def test_documents_fall_back_to_metadata():
    thread = StringThread([("user", "q")], metadata={"documents": ["a", "b"]})
    assert thread.documents() == ["a", "b"]
    assert StringThread([("user", "q")]).documents() == []
    with pytest.raises(InvalidTypeError, match="list of str"):
        StringThread([("user", "q")], metadata={"documents": "one string"}).documents()


def test_from_openai_messages():
    thread = StringThread.from_messages(
        [
            {"role": "developer", "content": "sys"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
            {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
            {"role": "tool", "content": "42", "tool_call_id": "1"},
            {"role": "assistant", "content": "done"},
        ],
        metadata={"id": 7},
    )
    assert thread.get_turns() == [
        Turn("system", "sys"),
        Turn("user", "ab"),
        Turn("assistant", ""),
        Turn("tool", "42"),
        Turn("assistant", "done"),
    ]
    assert thread.metadata == {"id": 7}
    assert thread.to_messages()[0] == {"role": "system", "content": "sys"}


def test_non_text_content_parts_are_refused():
    with pytest.raises(InvalidInputError, match="image_url"):
        StringThread.from_messages(
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]
        )


@pytest.mark.parametrize(
    ("turns", "error", "match"),
    [
        ([("bot", "hi")], InvalidInputError, "use one of system, user, assistant"),
        ([("user", 3)], InvalidTypeError, "content must be a str"),
        ([("user", None)], InvalidTypeError, "content must be a str"),
        (["user: hi"], InvalidTypeError, r"\(role, content\) pairs"),
        ([("user", "a", "b")], InvalidTypeError, r"\(role, content\) pairs"),
        ([{"role": "user", "content": "hi"}], InvalidTypeError, "from_messages"),
        ("user", InvalidTypeError, "list of"),
    ],
)
def test_bad_turns_fail_at_construction(turns, error, match):
    with pytest.raises(error, match=match):
        StringThread(turns)


def test_bad_message_dicts():
    with pytest.raises(InvalidInputError, match="no 'role'"):
        StringThread.from_messages([{"content": "x"}])
    with pytest.raises(InvalidInputError, match="use one of"):
        StringThread.from_messages([{"role": "narrator", "content": "x"}])
    with pytest.raises(InvalidTypeError, match="content must be a str"):
        StringThread.from_messages([{"role": "user", "content": 5}])
    with pytest.raises(InvalidTypeError, match="dicts"):
        StringThread.from_messages(["hi"])  # type: ignore[list-item]
    for turns in (5, "user: hi", {"role": "user", "content": "hi"}):
        with pytest.raises(InvalidTypeError, match="list of message dicts"):
            StringThread.from_dict({"turns": turns})


def test_bad_metadata():
    with pytest.raises(InvalidTypeError, match="metadata must be a dict"):
        StringThread([("user", "q")], metadata=[("a", 1)])  # type: ignore[arg-type]


def test_json_round_trip_keeps_metadata():
    thread = StringThread(
        [("document", "doc"), ("user", "q ü <b>"), ("assistant", "a")],
        metadata={"label": "A", "nested": {"x": [1, 2.5, None, True]}},
    )
    again = StringThread.from_json(thread.to_json())
    assert again == thread
    assert again.metadata["nested"] == {"x": [1, 2.5, None, True]}
    assert StringThread.from_dict(thread.to_dict()) == thread


def test_json_errors_are_clear():
    with pytest.raises(InvalidInputError, match="not valid JSON"):
        StringThread.from_json("{nope")
    with pytest.raises(InvalidInputError, match="'turns'"):
        StringThread.from_json("[]")
    with pytest.raises(InvalidInputError, match="JSON"):
        StringThread([("user", "q")], metadata={"obj": object()}).to_json()


def test_equality_hash_and_pickle():
    a = StringThread([("user", "q")], metadata={"m": 1})
    b = StringThread([("user", "q")], metadata={"m": 1})
    c = StringThread([("user", "q")], metadata={"m": 2})
    assert a == b
    assert a != c
    assert hash(a) == hash(b)
    assert a != "q"
    assert pickle.loads(pickle.dumps(a)) == a
    assert "StringThread([('user', 'q')]" in repr(a)


def test_turns_are_immutable():
    thread = StringThread([("user", "q")])
    with pytest.raises(TypeError):
        thread.turns[0] = Turn("user", "x")  # type: ignore[index]
    with pytest.raises(AttributeError):
        thread.turns = ()  # type: ignore[misc]


roles = st.sampled_from(["system", "user", "assistant", "document", "tool"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(
    turns=st.lists(st.tuples(roles, st.text()), max_size=8),
    metadata=st.dictionaries(st.text(), json_values, max_size=4),
)
def test_json_round_trip_property(turns, metadata):
    thread = StringThread(turns, metadata=metadata)
    assert StringThread.from_json(thread.to_json()) == thread
    assert StringThread.from_messages(thread.to_messages(), metadata) == thread


def test_to_json_is_writable_with_half_an_emoji(tmp_path):
    thread = StringThread([("user", "héllo"), ("assistant", "cut \ud83d")], {"note": "\ude00"})
    path = tmp_path / "thread.json"
    path.write_text(thread.to_json(), encoding="utf-8")
    assert StringThread.from_json(path.read_text(encoding="utf-8")) == thread
    assert "héllo" in StringThread([("user", "héllo")]).to_json()  # no escapes when not needed
