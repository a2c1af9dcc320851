"""JudgeCache: judge answers persisted in sqlite, and how OpenAIChatModel uses it."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading

import pytest

from gradewire import InvalidInputError, InvalidTypeError, ModelCallError
from gradewire.models import ChatCompletion, TokenLogprob, Usage
from gradewire.models._judge_cache import JudgeCache
from support.judge_server import Reply, chat, chat_body, error

USER = [{"role": "user", "content": "Is 2 + 2 = 4?"}]


def cache_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("gradewire-cache")]


@pytest.fixture
def cache(tmp_path):
    with JudgeCache(tmp_path / "judge.sqlite") as opened:
        yield opened


async def test_a_repeated_call_is_answered_from_the_cache(judge_server, make_judge, cache):
    judge_server.script(chat("PASS", prompt_tokens=40, completion_tokens=2))
    model = make_judge(cache=cache)
    first = await model.complete(USER)
    second = await model.complete(USER)
    assert len(judge_server.chat_requests) == 1
    assert (first.cached, second.cached) == (False, True)
    # The original usage is kept, not zeroed: graders tell cached answers apart by `cached`.
    assert second.usage == first.usage == Usage(40, 2)
    assert (second.text, second.model) == (first.text, first.model)
    assert (cache.hits, cache.misses) == (1, 1)


async def test_the_cache_outlives_the_model_and_the_file_handle(judge_server, make_judge, tmp_path):
    path = tmp_path / "nested" / "cache.sqlite"
    judge_server.script(
        chat("PASS", logprobs=[("PASS", -0.1, [("PASS", -0.1), ("FAIL", -2.4)])]),
    )
    writer = make_judge(cache=path)
    written = await writer.complete(USER, logprobs=2)
    await writer.aclose()  # the model opened the cache from a path, so it closes it
    assert not cache_threads()

    reader = make_judge(cache=str(path))
    read = await reader.complete(USER, logprobs=2)
    await reader.aclose()
    assert len(judge_server.chat_requests) == 1
    assert read == ChatCompletion(
        text="PASS",
        usage=written.usage,
        logprobs=(TokenLogprob("PASS", -0.1, (("PASS", -0.1), ("FAIL", -2.4))),),
        model=written.model,
        cached=True,
        finish_reason="stop",  # kept with the answer
    )


async def test_any_change_in_the_request_misses(judge_server, make_judge, cache):
    model = make_judge(cache=cache)
    await model.complete(USER)
    await model.complete(USER, temperature=0.3)
    await model.complete(USER, logprobs=1)
    await model.complete([{"role": "user", "content": "Is 2 + 2 = 5?"}])
    await make_judge("other-model", cache=cache).complete(USER)
    assert len(judge_server.chat_requests) == 5
    assert len(cache) == 5


async def test_errors_are_not_cached(judge_server, make_judge, cache):
    judge_server.script(error(400, "context too long"))
    model = make_judge(cache=cache)
    with pytest.raises(ModelCallError):
        await model.complete(USER)
    assert (await model.complete(USER)).text == "PASS"
    assert len(judge_server.chat_requests) == 2


async def test_concurrent_identical_calls_make_one_request_and_one_entry(
    judge_server, make_judge, cache
):
    judge_server.handler = lambda request: chat("PASS", delay=0.05)
    model = make_judge(cache=cache)
    answers = await asyncio.gather(*(model.complete(USER) for _ in range(8)))
    assert len(judge_server.chat_requests) == 1
    assert len(cache) == 1
    assert sum(not a.cached for a in answers) == 1


async def test_a_shared_cache_object_is_left_open(judge_server, make_judge, cache):
    model = make_judge(cache=cache)
    await model.complete(USER)
    await model.aclose()
    assert (await make_judge(cache=cache).complete(USER)).cached


async def test_an_unreadable_cache_falls_back_to_the_model(
    judge_server, make_judge, cache, monkeypatch, caplog
):
    # A disk failure cannot be provoked for real here (root ignores permissions).
    async def broken(key: str) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(cache, "get", broken)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        answer = await make_judge(cache=cache).complete(USER)
    assert answer.text == "PASS"
    assert "disk I/O error" in caplog.text


async def test_answers_with_lone_surrogates_are_stored_and_read_back(
    judge_server, make_judge, cache
):
    # The server's JSON may carry half a surrogate pair (a cut emoji) as a \\u escape.
    cut = "PASS \ud83d"
    body = chat_body(cut, logprobs=[("x", -0.5, [("x", -0.5)])])
    body["choices"][0]["logprobs"]["content"][0]["token"] = "\udc00"  # half a pair too
    judge_server.script(Reply(json=body))
    model = make_judge(cache=cache)
    first = await model.complete(USER, logprobs=1)
    assert first.text == cut
    second = await make_judge(cache=cache).complete(USER, logprobs=1)
    assert second.cached
    assert (second.text, second.logprobs) == (cut, first.logprobs)
    assert len(judge_server.chat_requests) == 1  # the answer paid for was kept


async def test_the_cache_round_trips_any_str(cache):
    odd = "\ud83d \udfff \x00 \u2028 é 😀"
    stored = ChatCompletion(odd, Usage(1, 2), (TokenLogprob(odd, -1.0, ((odd, -1.0),)),), odd)
    await cache.put("k", stored)
    hit = await cache.get("k")
    assert hit is not None
    assert (hit.text, hit.model, hit.logprobs, hit.cached) == (odd, odd, stored.logprobs, True)


async def test_an_answer_the_cache_cannot_store_is_still_returned(
    judge_server, make_judge, cache, monkeypatch, caplog
):
    # A defensive net: should an answer still not encode, the caller gets it anyway and
    # the log says so once.
    async def unencodable(key: str, completion: ChatCompletion) -> None:
        raise UnicodeEncodeError("utf-8", "\ud83d", 0, 1, "surrogates not allowed")

    monkeypatch.setattr(cache, "put", unencodable)
    model = make_judge(cache=cache)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        answers = [await model.complete([{"role": "user", "content": str(i)}]) for i in range(3)]
    assert [a.text for a in answers] == ["PASS"] * 3
    assert caplog.text.count("could not store a judge answer") == 1


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not sqlite at all, " * 100)
    with pytest.raises(InvalidInputError, match="cannot open the judge cache"):
        JudgeCache(path)
    assert path.read_text().startswith("not sqlite")  # left untouched
    assert not cache_threads()


def test_a_closed_cache_says_so(tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite")
    cache.close()
    cache.close()  # idempotent
    with pytest.raises(InvalidInputError, match="closed"):
        len(cache)
    with pytest.raises(InvalidInputError, match="closed"):
        asyncio.run(cache.get("key"))


def test_cache_needs_a_path():
    with pytest.raises(InvalidTypeError, match="path"):
        JudgeCache(42)  # type: ignore[arg-type]


async def test_the_model_refuses_other_cache_values(make_judge):
    with pytest.raises(InvalidTypeError, match="JudgeCache or a file path"):
        make_judge(cache={"not": "a cache"})


def test_two_processes_worth_of_connections_share_the_file(tmp_path):
    path = tmp_path / "shared.sqlite"
    answer = ChatCompletion("PASS", Usage(3, 1), None, "m")

    async def roundtrip() -> ChatCompletion | None:
        with JudgeCache(path) as first, JudgeCache(path) as second:
            await first.put("k", answer)
            return await second.get("k")

    got = asyncio.run(roundtrip())
    assert got is not None
    assert got.cached
    assert (got.text, got.usage, got.model) == ("PASS", Usage(3, 1), "m")
