"""Judge call fan-out: gradewire's client beside plain httpx and the openai client.

A loopback server answers every chat completion after 50 ms; at every level each client makes
32 rounds of its calls in flight (32, 256, 2,048 and 8,192 requests at 1, 8, 64 and 256 in
flight), so that the start (the first calls all sent at once) and the end (the last ones
answered) weigh the same at every level: with 2,000 requests at 256 in flight, under 8 rounds,
they were an eighth of the time measured, and the rate read 86% of the ideal where the same
client holds 92% once started. Printed per client and level: the rate, its share of the ideal
(in flight / 50 ms) and the client's CPU per request.

The server is `tests/support/judge_server.py` in its bench mode, in its own process so that the
client under test has a core to itself: a minimal asyncio.Protocol HTTP/1.1 server that
answers one canned OpenAI-shaped JSON body after the latency, costing ~0.02-0.05 ms of CPU
per request (uvicorn costs ~0.4 ms, which would make the server, not the client, the limit).

Clients (all requests are handed over at once; gradewire's own concurrency limit,
``max_concurrency`` = the level, keeps the level, the others get an `asyncio.Semaphore`):

* gradewire: `OpenAIChatModel` with its default sender (stdlib asyncio HTTP/1.1, its own
  answer reader). "[h11]" rows: the same client with h11 reading the answers
  (`bench/h11_reader.py`), the pool, protocol and write path unchanged; ``--parsers`` picks
  which readers run (``hand,h11`` by default).
* gradewire + json schema: the same with a JSON-schema ``response_format``, sent in the
  dialect ``structured_output="auto"`` settled on during the warm-up: what the dialect
  negotiation costs once it is done; "gradewire + schema, named" sends the same body with
  ``structured_output="json_schema"`` (nothing to negotiate), the reference for that row.
  The schema is the response model's format, built once per model class; "gradewire +
  schema as a dict" passes the same format as a plain dict of the caller's (its strict form
  then looked up by its canonical JSON); "gradewire + schema, no memo" is the client as it
  was before the per-schema memos (`schema_memo.py`): every call transforms the schema
  afresh.
* gradewire, httpx pool: the pure-httpx path it takes when the environment names a proxy.
* gradewire + own httpx client: ``http_client=httpx.AsyncClient()`` (default limits).
* httpx: one `httpx.AsyncClient` with default limits.
* openai: `AsyncOpenAI` (no retries), if installed (``pip install openai``).
* aiohttp (raw) and httpx + httpx-aiohttp, as references, if installed.

Each row also checks every answer, so a client that got wrong answers fails the run.

At 64 and 256 in flight every client is measured in each of ``--passes`` passes, the clients
taking turns within a pass, so that a disturbance on a shared machine falls on all of them
alike; a cell whose first run took over 10 s (httpx's pool at 64 and 256) runs in the first
pass only. Each cell is the median run, with the spread of the shares; the h11 rows also give
the median of their per-pass ratio to the hand reader's row measured beside them.

Run: ``python bench/judge_throughput.py [--rounds 32] [--levels 1,8,64,256]
[--only NAME,NAME] [--passes 5] [--parsers hand,h11]``. Rates still move between runs on a
loaded machine; compare the rows of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import httpx

from _results import Alternative, Figure, record
from gradewire.http import _loop_senders
from gradewire.http._fast_http import FastHttpSender
from gradewire.http._senders import HttpxPoolSender
from gradewire.judges._binary_judge import BinaryVerdict
from gradewire.models import ChatMessage
from gradewire.models._openai_chat import OpenAIChatModel
from gradewire.models._response_format import json_schema_response_format
from h11_reader import H11Reader
from schema_memo import without_schema_memo

LATENCY = 0.05
SERVER = Path(__file__).resolve().parent.parent / "tests" / "support" / "judge_server.py"

Call = Callable[[int], Awaitable[None]]


def messages(i: int) -> list[ChatMessage]:
    # Distinct prompts: identical ones would be de-duplicated by gradewire into one call.
    return [
        {"role": "system", "content": "You are a strict grader. Answer PASS or FAIL."},
        {"role": "user", "content": f"Sample {i}: is 2 + 2 = 4? " + "Context. " * 30},
    ]


@contextlib.contextmanager
def server_process() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--latency", str(LATENCY)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


async def measure(
    call: Call, count: int, in_flight: int, *, limit_here: bool
) -> tuple[float, float]:
    """Requests per second and client CPU ms per request, after a warm-up round."""
    semaphore = asyncio.Semaphore(in_flight)

    async def one(i: int) -> None:
        if limit_here:
            async with semaphore:
                await call(i)
        else:
            await call(i)

    warm = 2 * in_flight
    await asyncio.gather(*(one(-1 - i) for i in range(warm)))
    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(i) for i in range(count)))
    elapsed = time.perf_counter() - start
    return count / elapsed, (time.process_time() - cpu) / count * 1000


RESPONSE_FORMAT = json_schema_response_format(BinaryVerdict)


async def run_gradewire(
    base_url: str,
    count: int,
    in_flight: int,
    http_client: httpx.AsyncClient | None = None,
    response_format: Any = None,
    structured_output: Any = "auto",
) -> tuple[float, float]:
    model = OpenAIChatModel(
        "bench",
        structured_output=structured_output,
        base_url=base_url,
        api_key="bench",
        max_concurrency=in_flight,
        max_attempts=1,
        http_client=http_client,
    )
    async with model:

        async def call(i: int) -> None:
            answer = await model.complete(
                messages(i), max_tokens=4, response_format=response_format
            )
            assert answer.text == "PASS"
            assert not answer.cached

        return await measure(call, count, in_flight, limit_here=False)


async def run_gradewire_structured(
    base_url: str, count: int, in_flight: int
) -> tuple[float, float]:
    # A JSON-schema response_format in the endpoint's dialect: "auto" settles it on the
    # warm-up calls, so the measured calls show what negotiation costs afterwards.
    return await run_gradewire(base_url, count, in_flight, response_format=RESPONSE_FORMAT)


async def run_gradewire_structured_named(
    base_url: str, count: int, in_flight: int
) -> tuple[float, float]:
    # The same body with the dialect named: nothing to negotiate, the reference for the row
    # above.
    return await run_gradewire(
        base_url,
        count,
        in_flight,
        response_format=RESPONSE_FORMAT,
        structured_output="json_schema",
    )


async def run_gradewire_structured_dict(
    base_url: str, count: int, in_flight: int
) -> tuple[float, float]:
    # The caller's own dict: nothing marks it unchanged, so its canonical JSON is the key.
    plain = copy.deepcopy(RESPONSE_FORMAT)
    assert type(plain) is dict
    return await run_gradewire(base_url, count, in_flight, response_format=plain)


async def run_gradewire_structured_no_memo(
    base_url: str, count: int, in_flight: int
) -> tuple[float, float]:
    with without_schema_memo():
        return await run_gradewire_structured(base_url, count, in_flight)


async def run_gradewire_httpx_pool(
    base_url: str, count: int, in_flight: int
) -> tuple[float, float]:
    # The sender picked when the environment names a proxy; swapped in directly here.
    original = _loop_senders.default_sender
    _loop_senders.default_sender = lambda url, timeout: HttpxPoolSender(timeout)
    try:
        return await run_gradewire(base_url, count, in_flight)
    finally:
        _loop_senders.default_sender = original


async def run_with_h11(
    run: Callable[[str, int, int], Coroutine[Any, Any, tuple[float, float]]],
    base_url: str,
    count: int,
    in_flight: int,
) -> tuple[float, float]:
    # The default sender with h11 reading the answers; swapped in directly here.
    original = _loop_senders.default_sender
    _loop_senders.default_sender = lambda url, timeout: FastHttpSender(reader=H11Reader)
    try:
        return await run(base_url, count, in_flight)
    finally:
        _loop_senders.default_sender = original


async def run_gradewire_own_client(
    base_url: str, count: int, in_flight: int
) -> tuple[float, float]:
    async with httpx.AsyncClient() as client:
        return await run_gradewire(base_url, count, in_flight, client)


async def run_aiohttp(base_url: str, count: int, in_flight: int) -> tuple[float, float]:
    import aiohttp

    url = f"{base_url}/chat/completions"
    connector = aiohttp.TCPConnector(limit=in_flight)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def call(i: int) -> None:
            body = {"model": "bench", "messages": messages(i), "max_tokens": 4}
            headers = {"Authorization": "Bearer bench"}
            async with session.post(url, json=body, headers=headers) as response:
                answer = await response.json()
            assert answer["choices"][0]["message"]["content"] == "PASS"

        return await measure(call, count, in_flight, limit_here=True)


async def run_httpx(
    base_url: str, count: int, in_flight: int, **client: Any
) -> tuple[float, float]:
    url = f"{base_url}/chat/completions"
    async with httpx.AsyncClient(timeout=60, **client) as http:

        async def call(i: int) -> None:
            body = {"model": "bench", "messages": messages(i), "max_tokens": 4}
            response = await http.post(url, json=body, headers={"Authorization": "Bearer bench"})
            response.raise_for_status()
            assert response.json()["choices"][0]["message"]["content"] == "PASS"

        return await measure(call, count, in_flight, limit_here=True)


async def run_httpx_aiohttp(base_url: str, count: int, in_flight: int) -> tuple[float, float]:
    import aiohttp
    from httpx_aiohttp import AiohttpTransport

    transport = AiohttpTransport(
        client=lambda: aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=in_flight))
    )
    return await run_httpx(base_url, count, in_flight, transport=transport)


async def run_openai(base_url: str, count: int, in_flight: int) -> tuple[float, float]:
    from openai import AsyncOpenAI

    async with AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0) as client:

        async def call(i: int) -> None:
            answer = await client.chat.completions.create(
                model="bench",
                messages=messages(i),  # type: ignore[arg-type]  # openai's own message types
                max_tokens=4,
            )
            assert answer.choices[0].message.content == "PASS"

        return await measure(call, count, in_flight, limit_here=True)


def measure_in_new_loop(
    run: Callable[[str, int, int], Coroutine[Any, Any, tuple[float, float]]],
    base_url: str,
    count: int,
    level: int,
) -> tuple[float, float]:
    return asyncio.run(run(base_url, count, level))


def importable(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


Run = Callable[[str, int, int], Coroutine[Any, Any, tuple[float, float]]]
SLOW_SECONDS = 10.0  # a cell whose first run took longer runs once (httpx at 64 and 256)


def clients_to_run(parsers: list[str]) -> tuple[list[tuple[str, Run]], list[str]]:
    clients: list[tuple[str, Run]] = []
    for base, run in [
        ("gradewire", run_gradewire),
        ("gradewire + json schema", run_gradewire_structured),
    ]:
        for parser in parsers:
            if parser == "hand":
                clients.append((base, run))
            else:
                clients.append((f"{base} [h11]", functools.partial(run_with_h11, run)))
    clients += [
        ("gradewire + schema, named", run_gradewire_structured_named),
        ("gradewire + schema as a dict", run_gradewire_structured_dict),
        ("gradewire + schema, no memo", run_gradewire_structured_no_memo),
        ("gradewire, httpx pool", run_gradewire_httpx_pool),
        ("gradewire + httpx client", run_gradewire_own_client),
        ("httpx", run_httpx),
    ]
    notes = []
    if importable("openai"):
        clients.append(("openai (AsyncOpenAI)", run_openai))
    else:
        notes.append("openai is not installed (pip install openai): its row is missing")
    if importable("aiohttp"):
        clients.append(("aiohttp (raw)", run_aiohttp))
        if importable("httpx_aiohttp"):
            clients.append(("httpx + httpx-aiohttp", run_httpx_aiohttp))
    else:
        notes.append("aiohttp is not installed: its reference rows are missing")
    return clients, notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=32, help="rounds of the calls in flight, at every level"
    )
    parser.add_argument("--levels", default="1,8,64,256", help="requests in flight")
    parser.add_argument(
        "--only", default="", help="run only clients whose name has one of these (comma-separated)"
    )
    parser.add_argument("--passes", type=int, default=5, help="interleaved passes, >= 64")
    parser.add_argument(
        "--parsers", default="hand,h11", help="answer readers of the gradewire rows: hand, h11"
    )
    args = parser.parse_args()
    levels = [int(level) for level in args.levels.split(",")]
    parsers = [name.strip() for name in args.parsers.split(",") if name.strip()]
    unknown = set(parsers) - {"hand", "h11"}
    if unknown or not parsers:
        parser.error(f"--parsers takes hand and/or h11, not {args.parsers!r}")
    if args.passes < 1:
        parser.error("--passes must be >= 1")

    clients, notes = clients_to_run(parsers)
    wanted = [part for part in args.only.split(",") if part] or [""]
    clients = [(name, run) for name, run in clients if any(part in name for part in wanted)]
    runs: dict[tuple[str, int], list[tuple[float, float]]] = {}
    slow: set[tuple[str, int]] = set()
    started = time.perf_counter()
    load_before = os.getloadavg()
    with server_process() as base_url:
        for number in range(args.passes):
            for name, run in clients:
                for level in levels:
                    cell = (name, level)
                    # Low levels wait on latency, not on the CPU: one run tells.
                    if number and (level < 64 or cell in slow):
                        continue
                    count = args.rounds * level
                    began = time.perf_counter()
                    runs.setdefault(cell, []).append(
                        measure_in_new_loop(run, base_url, count, level)
                    )
                    if time.perf_counter() - began > SLOW_SECONDS:
                        slow.add(cell)
            print(f"pass {number + 1} of {args.passes} done", file=sys.stderr, flush=True)

    def share(rate: float, level: int) -> float:
        return rate / (level / LATENCY) * 100

    print(f"{LATENCY * 1000:.0f} ms loopback server in its own process; rate in requests/s,")
    print("(% of the ideal in-flight / latency) [spread of the passes], client CPU ms/request")
    print(f"{'client':28}" + "".join(f"{level:>32}" for level in levels))
    for name, _ in clients:
        cells = []
        for level in levels:
            measured = runs[(name, level)]
            rate, cpu = sorted(measured)[(len(measured) - 1) // 2]  # the median run
            spread = ""
            if len(measured) > 1:
                low, high = (share(r, level) for r, _ in (min(measured), max(measured)))
                spread = f" [{low:.0f}-{high:.0f}]"
            cells.append(f"{rate:7.0f} ({share(rate, level):3.0f}%){spread} {cpu:5.2f}ms")
        print(f"{name:28}" + "".join(f"{cell:>32}" for cell in cells), flush=True)
    for name, _ in clients:
        if not name.endswith(" [h11]"):
            continue
        hand = name.removesuffix(" [h11]")
        ratios = []
        for level in levels:
            pairs = list(zip(runs[(name, level)], runs.get((hand, level), []), strict=False))
            if pairs:
                ratio = statistics.median(h11[0] / own[0] for h11, own in pairs)
                ratios.append(f"{level}: {ratio:.2f}x over {len(pairs)} pass(es)")
        if ratios:
            print(f"{name} / {hand}, median per-pass rate ratio: " + "; ".join(ratios))
    for note in notes:
        print("note:", note)
    # The machine's load while measuring: on a shared machine every rate moves with it.
    loads = [round(value, 1) for value in (*load_before, *os.getloadavg())]
    summary = {"levels": levels, "passes": args.passes, "parsers": parsers, "load": loads}
    print(f"total {time.perf_counter() - started:.0f}s; " + json.dumps(summary))

    def median_run(name: str, level: int) -> tuple[float, float]:
        measured = runs[(name, level)]
        return sorted(measured)[(len(measured) - 1) // 2]

    # The rows a user can choose today beside gradewire's default client; "no memo" rows
    # switch off code that exists (an earlier state), so they stay out of the result file.
    others = [
        name
        for name, _ in clients
        if "no memo" not in name and "[h11]" not in name and name != "gradewire"
    ]
    figures = []
    for level in (level for level in levels if level >= 64):
        if ("gradewire", level) not in runs:
            continue
        rate, cpu = median_run("gradewire", level)
        figures.append(
            Figure(
                f"judge calls a second, {level} in flight, {args.rounds} rounds, "
                f"median of {args.passes} passes",
                rate,
                "requests/s",
                better="higher",
                alternatives=[
                    Alternative(name, median_run(name, level)[0])
                    for name in others
                    if (name, level) in runs
                ],
                note=f"{share(rate, level):.0f}% of the ideal {level / LATENCY:.0f}/s; "
                f"client CPU {cpu:.2f} ms a request",
            )
        )
    record(
        "judge_throughput",
        figures,
        title=f"Judge call fan-out against a {LATENCY * 1000:.0f} ms loopback server",
        notes=list(notes),
    )


if __name__ == "__main__":
    main()
