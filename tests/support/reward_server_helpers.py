"""Run the reward server on 127.0.0.1 (a free port) inside a test's event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from gradewire.server._server import serve


@contextlib.asynccontextmanager
async def running(graders: Any, **options: Any) -> AsyncIterator[str]:
    """Serve ``graders`` until the block ends; yields the base URL."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[int] = loop.create_future()
    stop = asyncio.Event()
    task = asyncio.create_task(
        serve(
            graders,
            host="127.0.0.1",
            port=0,
            stop=stop,
            on_ready=lambda host, port: ready.set_result(port),
            **options,
        )
    )
    done, _ = await asyncio.wait({ready, task}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        task.result()  # raises why it could not start
    try:
        yield f"http://127.0.0.1:{ready.result()}"
    finally:
        stop.set()
        await task
