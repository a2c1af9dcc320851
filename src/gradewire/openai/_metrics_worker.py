"""The text similarity worker process: lexical metrics computed away from the event loop.

Run by path (``python _metrics_worker.py FD PARENT_PID``) by the pool of
`gradewire.openai._text_similarity`, never imported. It answers ``(metric, text,
reference)`` calls on its socket with the metric's value, and dies with the process that
started it (`gradewire.helpers._worker_life`), even in the middle of a call.
"""

from __future__ import annotations

import sys
from multiprocessing.connection import Connection


def serve(conn: Connection) -> None:
    """Answer metric calls until the socket closes."""
    from gradewire.helpers._worker_life import answer_calls
    from gradewire.openai._metrics import compute_metric

    conn.send((True, None))
    answer_calls(conn, compute_metric)


if __name__ == "__main__":
    from gradewire.helpers._worker_life import die_with_parent

    die_with_parent(int(sys.argv[2]), int(sys.argv[1]))
    serve(Connection(int(sys.argv[1])))
