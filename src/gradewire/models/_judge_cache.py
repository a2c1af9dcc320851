"""A persistent cache of judge answers in one sqlite file.

Keys are SHA-256 hashes of the exact request body (model name, messages, temperature,
max_tokens, response_format, logprobs and extra_body), so a cached answer is reused only for
the very same question asked the very same way. The server's URL and the headers are not part
of the key: the same model behind another gateway shares the answers. The file is
opened in WAL mode, so several processes (Ray workers, parallel eval jobs) can share it.
Every database access runs on the cache's own thread: the event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.models._chat_model import ChatCompletion, TokenLogprob, Usage

__all__ = ["JudgeCache"]

_T = TypeVar("_T")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS chat_completions ("
    "key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"
)
# What was learnt about each endpoint (the structured-output dialect it takes...), so a
# later process asks right the first time.
_ENDPOINTS_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS endpoints ("
    "endpoint TEXT PRIMARY KEY, facts TEXT NOT NULL, updated REAL NOT NULL)"
)


class JudgeCache:
    """Judge answers stored in a sqlite file, shared by any number of models and processes.

    A hit comes back with ``cached=True`` and the usage the original call reported, so
    graders can tell what was paid for. Errors are never cached.

    Args:
        path: The sqlite file (created with its folder if missing).

    Example:
        >>> cache = JudgeCache("judge-cache.sqlite")  # doctest: +SKIP
        >>> model = OpenAIChatModel("gpt-4o-mini", cache=cache)  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidTypeError(
                f"JudgeCache needs a file path (str or os.PathLike), got {type(path).__name__}"
            )
        self.path = os.fspath(path)
        self.hits = 0
        self.misses = 0
        self._local = threading.local()
        self._closed = False
        # One thread owns the connection: sqlite connections must not be shared across
        # threads, and one writer at a time is what sqlite wants anyway.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gradewire-cache")
        try:
            self._executor.submit(self._open).result()
        except (sqlite3.Error, OSError) as exc:
            self._executor.shutdown(wait=True)
            raise InvalidInputError(
                f"cannot open the judge cache at {self.path!r}: {exc}; pass a writable file path"
            ) from exc

    def __repr__(self) -> str:
        return f"JudgeCache({self.path!r})"

    def _open(self) -> None:
        folder = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(folder, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=30.0)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a crash may lose the last answers, never corrupt the file.
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute(_SCHEMA)
            connection.execute(_ENDPOINTS_SCHEMA)
            connection.commit()
        except BaseException:
            connection.close()
            raise
        self._local.connection = connection

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection = self._local.connection
        return connection

    async def _run(self, fn: Callable[[], _T]) -> _T:
        if self._closed:
            raise InvalidInputError(f"{self!r} is closed; make a new JudgeCache to use it again")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def get(self, key: str) -> ChatCompletion | None:
        """The cached answer for ``key`` (marked ``cached=True``), or None."""

        def read() -> str | None:
            row = (
                self._connection()
                .execute("SELECT value FROM chat_completions WHERE key = ?", (key,))
                .fetchone()
            )
            return None if row is None else str(row[0])

        value = await self._run(read)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        return _decode(value)

    async def put(self, key: str, completion: ChatCompletion) -> None:
        """Store ``completion`` under ``key`` (replacing what was there)."""
        value = _encode(completion)

        def write() -> None:
            connection = self._connection()
            connection.execute(
                "INSERT OR REPLACE INTO chat_completions (key, value, created) VALUES (?, ?, ?)",
                (key, value, time.time()),
            )
            connection.commit()

        await self._run(write)

    async def endpoint_facts(self, endpoint: str) -> dict[str, Any] | None:
        """What was stored about ``endpoint`` (``base_url|model``), or None."""

        def read() -> str | None:
            row = (
                self._connection()
                .execute("SELECT facts FROM endpoints WHERE endpoint = ?", (endpoint,))
                .fetchone()
            )
            return None if row is None else str(row[0])

        value = await self._run(read)
        if value is None:
            return None
        try:
            facts = json.loads(value)
        except ValueError:
            return None
        return facts if isinstance(facts, dict) else None

    async def store_endpoint_facts(self, endpoint: str, facts: dict[str, Any]) -> None:
        """Store what was learnt about ``endpoint`` (replacing what was there)."""
        value = json.dumps(facts, sort_keys=True)

        def write() -> None:
            connection = self._connection()
            connection.execute(
                "INSERT OR REPLACE INTO endpoints (endpoint, facts, updated) VALUES (?, ?, ?)",
                (endpoint, value, time.time()),
            )
            connection.commit()

        await self._run(write)

    def __len__(self) -> int:
        def count() -> int:
            row = self._connection().execute("SELECT COUNT(*) FROM chat_completions").fetchone()
            return int(row[0])

        if self._closed:
            raise InvalidInputError(f"{self!r} is closed; make a new JudgeCache to use it again")
        return self._executor.submit(count).result()

    def close(self) -> None:
        """Close the file and stop the cache's thread (idempotent)."""
        if self._closed:
            return
        self._closed = True

        def close_connection() -> None:
            connection = getattr(self._local, "connection", None)
            if connection is not None:
                connection.close()

        self._executor.submit(close_connection).result()
        self._executor.shutdown(wait=True)

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _encode(completion: ChatCompletion) -> str:
    logprobs = None
    if completion.logprobs is not None:
        logprobs = [
            [t.token, t.logprob, [list(pair) for pair in t.top]] for t in completion.logprobs
        ]
    usage = completion.usage
    data: dict[str, Any] = {
        "text": completion.text,
        "usage": [usage.prompt_tokens, usage.completion_tokens],
        "logprobs": logprobs,
        "model": completion.model,
        "finish_reason": completion.finish_reason,
    }
    if completion.fingerprint is not None:
        data["fingerprint"] = completion.fingerprint
    value = json.dumps(data, ensure_ascii=False)
    try:
        value.encode()
    except UnicodeEncodeError:
        # Lone surrogates (a token or answer cut inside an emoji) cannot be stored as UTF-8
        # text; JSON's \u escapes keep them, and read back the same.
        return json.dumps(data)
    return value


def _decode(value: str) -> ChatCompletion:
    data: dict[str, Any] = json.loads(value)
    logprobs = None
    if data["logprobs"] is not None:
        logprobs = tuple(
            TokenLogprob(token, logprob, tuple((alt, alt_lp) for alt, alt_lp in top))
            for token, logprob, top in data["logprobs"]
        )
    prompt_tokens, completion_tokens = data["usage"]
    return ChatCompletion(
        text=data["text"],
        usage=Usage(prompt_tokens, completion_tokens),
        logprobs=logprobs,
        model=data["model"],
        finish_reason=data.get("finish_reason"),
        fingerprint=data.get("fingerprint"),
        cached=True,
    )
