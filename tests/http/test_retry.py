"""Retries over real HTTP: what is retried, how long it waits, and how it gives up."""

from __future__ import annotations

import asyncio
import socket

import pytest

from gradewire import InvalidInputError, ModelCallError
from gradewire.http._retry import (
    ModelHTTPError,
    RetryableError,
    RetryPolicy,
    is_retryable_status,
    retry_after_seconds,
)
from gradewire.models._openai_chat import OpenAIChatModel
from support.judge_server import DROP, Reply, chat, error, malformed

USER = [{"role": "user", "content": "grade this"}]


async def test_429_waits_as_long_as_retry_after_says(judge_server, make_judge, sleeps):
    judge_server.script(error(429, "slow down", retry_after=2), chat("PASS"))
    answer = await make_judge().complete(USER)
    assert answer.text == "PASS"
    assert sleeps.delays == [2.0]
    assert len(judge_server.chat_requests) == 2


async def test_retry_after_in_milliseconds_and_as_a_date(judge_server, make_judge, sleeps):
    judge_server.script(
        Reply(status=429, json={"error": {"message": "x"}}, headers={"retry-after-ms": "1500"}),
        error(503, retry_after="Thu, 01 Jan 1970 00:00:00 GMT"),  # in the past: no wait
        chat("PASS"),
    )
    await make_judge().complete(USER)
    assert sleeps.delays == [1.5, 0.0]


async def test_retry_after_is_capped(judge_server, make_judge, sleeps):
    judge_server.script(error(429, retry_after=3600), chat("PASS"))
    policy = RetryPolicy(max_retry_after=30.0, sleep=sleeps, random=lambda: 0.0)
    await make_judge(retry=policy).complete(USER)
    assert sleeps.delays == [30.0]


async def test_retry_after_jitter_stretches_by_at_most_a_tenth(judge_server, make_judge, sleeps):
    judge_server.script(error(429, retry_after=10), chat("PASS"))
    policy = RetryPolicy(sleep=sleeps, random=lambda: 0.999)
    await make_judge(retry=policy).complete(USER)
    assert 10.0 <= sleeps.delays[0] < 11.0


async def test_server_errors_back_off_exponentially(judge_server, make_judge, sleeps):
    judge_server.script(error(500), error(502), error(503), chat("PASS"))
    policy = RetryPolicy(initial_delay=0.5, max_delay=1.5, sleep=sleeps, random=lambda: 1.0)
    answer = await make_judge(retry=policy).complete(USER)
    assert answer.text == "PASS"
    assert sleeps.delays == [0.5, 1.0, 1.5]  # doubling, capped at max_delay
    assert len(judge_server.chat_requests) == 4


async def test_a_server_that_keeps_failing_raises_after_max_attempts(judge_server, make_judge):
    judge_server.handler = lambda request: error(500, "database on fire")
    with pytest.raises(ModelCallError) as caught:
        await make_judge(max_attempts=3).complete(USER)
    assert len(judge_server.chat_requests) == 3
    message = str(caught.value)
    assert judge_server.base_url + "/chat/completions" in message
    assert "3 attempts" in message
    assert "HTTP 500: database on fire" in message
    assert "max_attempts" in message
    assert "check its health" in message
    assert isinstance(caught.value, ModelHTTPError)
    assert (caught.value.status, caught.value.attempts) == (500, 3)


async def test_rate_limits_that_persist_advise_lowering_concurrency(judge_server, make_judge):
    judge_server.handler = lambda request: error(429, "quota", retry_after=0)
    with pytest.raises(ModelCallError, match="lower max_concurrency"):
        await make_judge(max_attempts=2).complete(USER)


@pytest.mark.parametrize(
    ("status", "advice"),
    [(400, "Check the request"), (401, "API key"), (404, "base_url"), (422, "parameters")],
)
async def test_client_errors_are_not_retried(judge_server, make_judge, sleeps, status, advice):
    judge_server.script(error(status, "the server's own words"))
    with pytest.raises(ModelHTTPError) as caught:
        await make_judge().complete(USER)
    assert len(judge_server.chat_requests) == 1
    assert sleeps.delays == []
    assert caught.value.status == status
    assert caught.value.server_message == "the server's own words"
    assert "the server's own words" in str(caught.value)
    assert advice in str(caught.value)


@pytest.mark.parametrize("status", [408, 409, 500, 502, 503, 504, 529])
def test_retryable_statuses(status):
    assert is_retryable_status(status)


@pytest.mark.parametrize("status", [200, 400, 401, 403, 404, 413, 422, 501, 505])
def test_statuses_not_worth_retrying(status):
    assert not is_retryable_status(status)


async def test_slow_answers_time_out_and_are_retried(judge_server, make_judge):
    judge_server.script(chat("late", delay=2.0), chat("PASS"))
    answer = await make_judge(attempt_timeout=0.1).complete(USER)
    assert answer.text == "PASS"
    assert len(judge_server.chat_requests) == 2


async def test_a_server_that_never_answers_in_time_is_a_model_call_error(judge_server, make_judge):
    judge_server.handler = lambda request: chat("late", delay=2.0)
    with pytest.raises(ModelCallError, match=r"timeout of 0\.1s") as caught:
        await make_judge(attempt_timeout=0.1, max_attempts=2).complete(USER)
    assert "raise attempt_timeout=" in str(caught.value)
    assert caught.value.status is None  # type: ignore[attr-defined]
    assert len(judge_server.chat_requests) == 2


async def test_dropped_connections_are_retried(judge_server, make_judge):
    judge_server.script(DROP, DROP, chat("PASS"))
    answer = await make_judge().complete(USER)
    assert answer.text == "PASS"
    assert len(judge_server.chat_requests) == 3


async def test_a_server_that_always_drops_is_a_model_call_error(judge_server, make_judge):
    judge_server.handler = lambda request: DROP
    with pytest.raises(ModelCallError, match="connection failed") as caught:
        await make_judge(max_attempts=3).complete(USER)
    assert "check that the server is running" in str(caught.value).lower()
    assert len(judge_server.chat_requests) == 3


async def test_a_server_that_never_answers_sensibly_is_an_error_not_a_number(
    judge_server, make_judge
):
    judge_server.handler = lambda request: malformed()
    with pytest.raises(ModelCallError, match="not a chat completion") as caught:
        await make_judge(max_attempts=2).complete(USER)
    assert "OpenAI-compatible" in str(caught.value)
    assert len(judge_server.chat_requests) == 2


async def test_a_json_answer_without_choices_is_retried(judge_server, make_judge):
    judge_server.script({"object": "error", "message": "overloaded"}, chat("PASS"))
    assert (await make_judge().complete(USER)).text == "PASS"


async def test_a_refused_connection_is_retried_then_reported(sleeps):
    with socket.socket() as probe:  # a port with nothing listening on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIChatModel(
        "judge",
        base_url=f"http://127.0.0.1:{port}/v1",
        retry=RetryPolicy(max_attempts=2, sleep=sleeps, random=lambda: 0.0),
    )
    with pytest.raises(ModelCallError, match=f"reachable at http://127.0.0.1:{port}"):
        await model.complete(USER)
    assert len(sleeps.delays) == 1


async def test_a_request_the_server_read_then_dropped_is_sent_again_only_by_the_policy(
    judge_server, make_judge, sleeps
):
    # The second call goes out on the first call's kept-alive connection; the server reads it
    # and closes without answering. It may have acted on it, so the client does not send it
    # again on its own (RFC 9112 section 9.3.1): the retry policy does, as a counted attempt.
    judge_server.script(chat("first"), DROP, chat("second"))
    model = make_judge()
    assert (await model.complete(USER)).text == "first"
    assert (await model.complete([{"role": "user", "content": "again"}])).text == "second"
    assert len(sleeps.delays) == 1
    assert len(judge_server.chat_requests) == 3

    judge_server.script(chat("first"), DROP)
    single = make_judge(max_attempts=1)
    assert (await single.complete([{"role": "user", "content": "3"}])).text == "first"
    with pytest.raises(ModelCallError, match="closed the connection without answering"):
        await single.complete([{"role": "user", "content": "4"}])
    assert len(judge_server.chat_requests) == 5  # the dropped request went out once


async def test_the_slot_is_released_while_waiting_to_retry(judge_server, make_judge):
    release = asyncio.Event()
    waits: list[float] = []

    async def sleep(delay: float) -> None:
        waits.append(delay)
        await release.wait()

    judge_server.script(error(503))  # the first request fails, then all succeed
    model = make_judge(max_concurrency=1, retry=RetryPolicy(sleep=sleep, random=lambda: 0.0))
    failing = asyncio.ensure_future(model.complete(USER))
    while not waits:
        await asyncio.sleep(0.01)
    # While the failed call waits to retry, another call gets the only slot.
    other = await model.complete([{"role": "user", "content": "other"}])
    assert other.text == "PASS"
    release.set()
    assert (await failing).text == "PASS"


def test_retry_after_header_forms():
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    assert retry_after_seconds({"retry-after": "0.25"}) == 0.25
    assert retry_after_seconds({"retry-after": "-3"}) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    assert retry_after_seconds({"retry-after": date}, now=1445412470.0) == 10.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"retry-after-ms": "nan", "retry-after": "9"}) == 9.0


def test_backoff_is_full_jitter_under_a_doubling_cap():
    top = RetryPolicy(initial_delay=1.0, max_delay=5.0, random=lambda: 0.999999)
    assert [round(top.delay(n), 3) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    bottom = RetryPolicy(random=lambda: 0.0)
    assert bottom.delay(3) == 0.0
    assert top.delay(10_000) == pytest.approx(5.0)  # no overflow on huge attempt numbers


@pytest.mark.parametrize(
    "options",
    [{"max_attempts": 0}, {"max_attempts": 2.5}, {"initial_delay": -1}, {"max_delay": "1"}],
)
def test_invalid_policies_are_refused(options):
    with pytest.raises(InvalidInputError, match="RetryPolicy"):
        RetryPolicy(**options)


async def test_the_policy_can_drive_any_call():
    calls: list[int] = []

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise RetryableError("HTTP 503: busy", status=503, advice="wait for the deploy")
        return "done"

    async def no_wait(delay: float) -> None:
        return None

    policy = RetryPolicy(max_attempts=3, sleep=no_wait)
    assert await policy.call(flaky, endpoint="http://reward/score") == "done"
    calls.clear()
    with pytest.raises(ModelHTTPError, match="Wait for the deploy") as caught:
        await RetryPolicy(max_attempts=2, sleep=no_wait).call(
            flaky, endpoint="http://reward/score", what="reward endpoint"
        )
    assert str(caught.value).startswith("reward endpoint to http://reward/score failed after 2")


async def test_other_exceptions_are_not_retried():
    calls: list[int] = []

    async def broken() -> None:
        calls.append(1)
        raise KeyError("bug")

    with pytest.raises(KeyError):
        await RetryPolicy().call(broken, endpoint="http://x")
    assert calls == [1]
