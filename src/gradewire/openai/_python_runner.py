"""Run one OpenAI python grader on one sample: the child process of `_python_grader`.

Reads ``{"source", "sample", "item"}`` as JSON on stdin, runs the source, calls
``grade(sample, item)`` and writes ``{"score": ...}`` or ``{"error": ..., "traceback": ...}``
as one JSON line on the original stdout. What the grader prints goes to stderr, so it can
never be taken for the result. Runs with ``python -I``: no user site, no PYTHONPATH.
"""

import json
import math
import os
import sys
import traceback


def main() -> None:
    result_fd = os.dup(1)
    os.dup2(2, 1)  # the grader's prints (Python's and C's) go to stderr
    sys.stdout = sys.stderr
    payload = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    namespace = {"__name__": "__grader__", "__builtins__": __builtins__}
    try:
        code = compile(payload["source"], "<grader source>", "exec")
        exec(code, namespace)
        grade = namespace.get("grade")
        if not callable(grade):
            answer: dict[str, object] = {
                "error": "the source defines no function grade(sample, item)"
            }
        else:
            value = grade(payload["sample"], payload["item"])
            answer = _score(value)
    except BaseException as exc:
        answer = {
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": "".join(traceback.format_exception(exc))[-4000:],
        }
    with os.fdopen(result_fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(answer) + "\n")


def _score(value: object) -> dict[str, object]:
    refused: dict[str, object] = {"error": f"grade() returned {type(value).__name__}, not a number"}
    if isinstance(value, (str, bytes)):
        return refused
    try:
        number = float(value)  # type: ignore[arg-type]  # ints, bools, numpy numbers
    except (TypeError, ValueError, OverflowError):
        return refused
    if not math.isfinite(number):
        return {"error": f"grade() returned {number}, not a finite number"}
    return {"score": number}


if __name__ == "__main__":
    main()
