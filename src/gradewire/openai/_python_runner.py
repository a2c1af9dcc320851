"""Run one OpenAI python grader on one sample: the child process of `_python_grader`.

Reads ``{"source", "sample", "item"}`` as JSON on stdin, runs the source, calls
``grade(sample, item)`` and writes ``{"score": ...}`` or ``{"error": ..., "traceback": ...}``
as one JSON line on the original stdout. What the grader prints goes to stderr, so it can
never be taken for the result. Runs with ``python -I``: no user site, no PYTHONPATH.

On Linux it first isolates itself (`isolate`), where the kernel lets an unprivileged
process do so: new user, PID and mount namespaces, in which a fresh ``/proc`` shows only
this process and what it starts. The grader cannot read any other process there: not the
environment or command line of the grading process, of the supervisor, or of the other
samples' graders. It runs as a user without capabilities (``no_new_privs`` set), so it
cannot take the fresh ``/proc`` away again. The answer says whether this held
(``"isolated"``).
"""

import ctypes
import json
import math
import os
import signal
import sys
import traceback

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 2, 4, 8
_MS_REC, _MS_PRIVATE = 0x4000, 1 << 18
_PR_SET_NO_NEW_PRIVS = 38
_CAPABILITY_VERSION_3 = 0x20080522
# The user the grader runs as inside its namespace when the grading process is root.
_NOBODY = 65534


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def isolate() -> bool:
    """Enter namespaces where no other process can be seen; whether that held.

    The process that called this stays in the old namespaces only to wait: it forks the
    grader as the first process of the new PID namespace and exits with its status.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWPID | _CLONE_NEWNS) != 0:
        return False  # not allowed here (a container's seccomp, a sysctl): run as is
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid or _NOBODY} {uid} 1\n")
        _write("/proc/self/gid_map", f"{gid or _NOBODY} {gid} 1\n")
    except OSError:
        return False
    child = os.fork()
    if child:
        _, status = os.waitpid(child, 0)
        code = os.waitstatus_to_exitcode(status)
        os._exit(128 - code if code < 0 else code)
    # The first process of the PID namespace: signals from outside reach it only through
    # a handler (SIGKILL aside), and the grading side ends it with SIGTERM first.
    signal.signal(signal.SIGTERM, lambda number, frame: os._exit(128 + number))
    private = libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) == 0
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    hidden = private and (
        libc.mount(b"proc", b"/proc", b"proc", flags, None) == 0
        # A fresh /proc can be refused (parts of the old one are masked): hide it all.
        or libc.mount(b"tmpfs", b"/proc", b"tmpfs", flags, b"size=4k,mode=555") == 0
    )
    # No capability is left, and none can come back through an exec: the grader cannot
    # unmount the fresh /proc to uncover the old one.
    empty = (_CapData * 2)()
    dropped = libc.capset(ctypes.byref(_CapHeader(_CAPABILITY_VERSION_3, 0)), empty) == 0
    locked = libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
    return bool(hidden and dropped and locked)


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as file:
        file.write(text)


def main() -> None:
    isolated = isolate()
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
    answer["isolated"] = isolated
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
