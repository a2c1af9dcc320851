"""The text similarity worker process: lexical metrics computed away from the event loop.

Run by path (``python _metrics_worker.py FD PARENT_PID``) by the pool of
`gradewire.openai._text_similarity`, never imported. It answers ``(metric, text,
reference)`` calls on its socket with the metric's value, and dies with the process that
started it (`gradewire.helpers._worker_life`), even in the middle of a call.
"""

from __future__ import annotations

import sys
from multiprocessing.connection import Connection
from typing import Any


def serve(conn: Connection) -> None:
    """Answer metric calls until the socket closes."""
    from gradewire.openai._metrics import compute_metric

    conn.send((True, None))
    while True:
        try:
            metric, text, reference = conn.recv()
        except (EOFError, OSError):
            return
        try:
            result: tuple[bool, Any] = (True, compute_metric(metric, text, reference))
        except BaseException as exc:  # the caller decides what a failure means
            result = (False, (type(exc).__name__, str(exc)[:2000]))
        try:
            conn.send(result)
        except OSError:
            return


if __name__ == "__main__":
    from gradewire.helpers._worker_life import die_with_parent

    die_with_parent(int(sys.argv[2]), int(sys.argv[1]))
    serve(Connection(int(sys.argv[1])))
