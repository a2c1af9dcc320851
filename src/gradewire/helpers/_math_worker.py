"""The math worker process: Math-Verify with its alarms off, answering over a socket.

Run by path (``python _math_worker.py FD PARENT_PID``), never imported: it imports
Math-Verify only, not gradewire, so a new worker is ready in about the time sympy takes to
import. It dies with the process that started it (`_worker_life`), even mid-check.
"""

from __future__ import annotations

import logging
import sys
from multiprocessing.connection import Connection


def check(answer: str, expected: str) -> tuple[str, bool]:
    """``("ok", matched)``, or ``("answer" | "expected", False)`` for the side unreadable."""
    from math_verify import parse, verify

    gold = parse(expected, parsing_timeout=None)
    if not gold and "$" not in expected:
        # A bare LaTeX reference (\frac{1}{2}) is read once delimited.
        gold = parse(f"${expected}$", parsing_timeout=None)
    if not gold:
        return "expected", False
    found = parse(answer, parsing_timeout=None)
    if not found:
        return "answer", False
    return "ok", bool(verify(gold, found, timeout_seconds=None))


def serve(conn: Connection) -> None:
    """Answer ``(answer, expected)`` calls until the socket closes."""
    # The worker process is the bound: Math-Verify's warning that it has none is noise.
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    try:
        # Calls are timed from when they are sent: warm up first, as the first LaTeX parse
        # builds Math-Verify's parser (a second or more), which no call should pay for.
        check("$\\frac{1}{2}$", "0.5")
    except BaseException as exc:
        conn.send((False, f"{type(exc).__name__}: {exc}"))
        return
    conn.send((True, None))
    answer_calls(conn, check)


if __name__ == "__main__":
    # This script's folder is first on sys.path: no gradewire import needed.
    from _worker_life import answer_calls, die_with_parent  # type: ignore[import-not-found]

    die_with_parent(int(sys.argv[2]), int(sys.argv[1]))
    serve(Connection(int(sys.argv[1])))
