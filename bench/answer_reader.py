"""CPU per answer read: gradewire's HTTP/1.1 answer reader beside h11, no sockets involved.

Each reader is fed whole answers, one request after another on one connection state, as the
keep-alive client does: the answer `bench/judge_throughput.py`'s server sends (2 headers), an
answer shaped like OpenAI's (17 headers), and the same chunked. Printed: microseconds per
answer, best of 5 timings, and the ratio to gradewire's reader in the same run.

Run: ``python bench/answer_reader.py [--answers 20000]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _results import Alternative, Figure, record
from gradewire.http._framing import AnswerReader
from h11_reader import H11Reader

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.judge_server import chat_body

BODY = json.dumps(chat_body("PASS")).encode()

OPENAI_HEAD = (
    "HTTP/1.1 200 OK\r\n"
    "Date: Tue, 01 Jul 2025 12:00:00 GMT\r\n"
    "Content-Type: application/json\r\n"
    "{framing}"
    "Connection: keep-alive\r\n"
    "access-control-expose-headers: X-Request-ID\r\n"
    "openai-organization: user-abc123\r\n"
    "openai-processing-ms: 412\r\n"
    "openai-version: 2020-10-01\r\n"
    "strict-transport-security: max-age=31536000; includeSubDomains; preload\r\n"
    "x-ratelimit-limit-requests: 10000\r\n"
    "x-ratelimit-limit-tokens: 30000000\r\n"
    "x-ratelimit-remaining-requests: 9999\r\n"
    "x-ratelimit-remaining-tokens: 29999950\r\n"
    "x-ratelimit-reset-requests: 6ms\r\n"
    "x-ratelimit-reset-tokens: 0s\r\n"
    "x-request-id: req_0123456789abcdef0123456789abcdef\r\n"
    "cf-cache-status: DYNAMIC\r\n"
    "\r\n"
)

ANSWERS = {
    "bench server (2 headers)": (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        % len(BODY)
        + BODY
    ),
    "OpenAI-shaped (17 headers)": (
        OPENAI_HEAD.format(framing=f"Content-Length: {len(BODY)}\r\n").encode() + BODY
    ),
    "OpenAI-shaped, chunked": (
        OPENAI_HEAD.format(framing="Transfer-Encoding: chunked\r\n").encode()
        + b"%x\r\n" % len(BODY)
        + BODY
        + b"\r\n0\r\n\r\n"
    ),
}


def per_answer(make: Callable[[], object], answer: bytes, count: int) -> float:
    """Microseconds per answer, best of 5 timings of ``count`` answers."""
    reader = make()
    start, feed = reader.start, reader.feed  # type: ignore[attr-defined]
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(count):
            start(1 << 26)
            result = feed(answer)
        best = min(best, time.perf_counter() - began)
        assert result is not None
        assert result.body == BODY
        assert result.reusable
    return best / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=20000, help="answers per timing")
    args = parser.parse_args()
    print(f"{'answer':30}{'gradewire':>14}{'h11':>14}{'h11 / gradewire':>18}")
    figures = []
    for name, answer in ANSWERS.items():
        own = per_answer(AnswerReader, answer, args.answers)
        h11 = per_answer(H11Reader, answer, args.answers)
        print(f"{name:30}{own:11.1f} us{h11:11.1f} us{h11 / own:17.1f}x", flush=True)
        figures.append(
            Figure(
                f"CPU per answer read: {name}", own, "µs", alternatives=[Alternative("h11", h11)]
            )
        )
    record("answer_reader", figures, title="The judge client's HTTP/1.1 answer reader beside h11")


if __name__ == "__main__":
    main()
