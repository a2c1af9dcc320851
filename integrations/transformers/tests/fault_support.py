"""A loopback judge that injects faults on a known set of samples, for the reward-loop tests.

Each sample's completion carries its id (``sample-00042``); the judge's prompt repeats it, so
the server knows which sample a request grades. Seeded draws pick, per sample, exactly
``rate_429`` of them to get a 429 with ``Retry-After`` on their first request (the retry
is answered), ``rate_slow`` to be answered after ``slow_delay`` seconds on every request
(slower than the grade's timeout) and ``rate_silent`` never to be answered (held open for
an hour). The sets are disjoint, so each sample's fate is known before the run.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from support.judge_server import JudgeServer, Reply, Request, chat, error

_ID = re.compile(r"sample-(\d{5})")
SILENCE = 3600.0


def sample_text(i: int) -> str:
    """The completion of sample ``i`` (the judge reads its id back)."""
    return f"The answer is 4 (sample-{i:05d})."


@dataclass
class Faults:
    """Which samples get which fault; filled by `faults`."""

    rate_limited: frozenset[int]
    slow: frozenset[int]
    silent: frozenset[int]
    slow_delay: float
    retry_after: float
    requests: dict[int, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def failing(self) -> frozenset[int]:
        """The samples no grade can come back for within the timeout."""
        return self.slow | self.silent

    def handle(self, request: Request) -> Reply:
        match = _ID.search(json.dumps(request.json))
        verdict = chat(json.dumps({"reasoning": "states the answer", "verdict": "PASS"}))
        if match is None:
            return verdict
        i = int(match.group(1))
        with self.lock:
            seen = self.requests.get(i, 0)
            self.requests[i] = seen + 1
        if i in self.silent:
            return Reply(status=200, json={}, delay=SILENCE)
        if i in self.slow:
            return chat(json.dumps({"reasoning": "late", "verdict": "PASS"}), delay=self.slow_delay)
        if i in self.rate_limited and seen == 0:
            return error(429, retry_after=self.retry_after)
        return verdict


def draw_faults(
    n: int,
    *,
    seed: int,
    rate_429: float = 0.10,
    rate_slow: float = 0.02,
    rate_silent: float = 0.01,
    slow_delay: float,
    retry_after: float = 0.05,
) -> Faults:
    """Exactly ``round(rate * n)`` samples per fault, disjoint, drawn with ``seed``."""
    ids = list(range(n))
    random.Random(seed).shuffle(ids)
    a = round(rate_429 * n)
    b = a + round(rate_slow * n)
    c = b + round(rate_silent * n)
    return Faults(
        rate_limited=frozenset(ids[:a]),
        slow=frozenset(ids[a:b]),
        silent=frozenset(ids[b:c]),
        slow_delay=slow_delay,
        retry_after=retry_after,
    )


@contextmanager
def faulty_judge(faults: Faults | None) -> Iterator[JudgeServer]:
    """A judge server on 127.0.0.1 that injects ``faults`` (None: none)."""
    handler = (
        faults.handle
        if faults is not None
        else (lambda request: json.dumps({"reasoning": "ok", "verdict": "PASS"}))
    )
    with JudgeServer(handler, record=False) as server:
        yield server


@dataclass
class HashedFaults:
    """Faults for completions nobody numbered (a real trainer's): each judge request's fate
    is a seeded hash of its messages, so it is the same on every retry and every run, and
    a 429 comes only on the first request of a content.

    Attributes:
        injected: How many distinct contents got each fate (``"429"``, ``"slow"``,
            ``"silent"``, ``"ok"``).
    """

    seed: int
    slow_delay: float
    rate_429: float = 0.10
    rate_slow: float = 0.02
    rate_silent: float = 0.01
    retry_after: float = 0.05
    injected: dict[str, int] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fate(self, key: str) -> str:
        draw = random.Random(f"{self.seed}:{key}").random()
        if draw < self.rate_silent:
            return "silent"
        if draw < self.rate_silent + self.rate_slow:
            return "slow"
        if draw < self.rate_silent + self.rate_slow + self.rate_429:
            return "429"
        return "ok"

    def handle(self, request: Request) -> Reply:
        key = json.dumps(request.json.get("messages"), sort_keys=True)
        fate = self.fate(key)
        with self.lock:
            first = key not in self.seen
            self.seen[key] = self.seen.get(key, 0) + 1
            if first:
                self.injected[fate] = self.injected.get(fate, 0) + 1
        if fate == "silent":
            return Reply(status=200, json={}, delay=SILENCE)
        if fate == "slow":
            return chat(json.dumps({"reasoning": "late", "verdict": "PASS"}), delay=self.slow_delay)
        if fate == "429" and first:
            return error(429, retry_after=self.retry_after)
        return chat(json.dumps({"reasoning": "fine", "verdict": "PASS"}))


@contextmanager
def hashed_judge(faults: HashedFaults) -> Iterator[JudgeServer]:
    """A judge server on 127.0.0.1 that injects ``faults`` by content."""
    with JudgeServer(faults.handle, record=False) as server:
        yield server
