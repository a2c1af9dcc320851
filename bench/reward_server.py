"""Reward server: aiohttp (what `gradewire serve` runs) against starlette + uvicorn.

Both servers host the same trivial grader and run the same request handling
(`gradewire.server._protocol`), each in its own process; the client is `EndpointGrader`
with `grade_many` (64 in flight). Printed: requests per second and the server process's CPU
per request (from /proc), and the ratios. Linux only (reads /proc).

    python bench/reward_server.py [--requests 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import Alternative, Figure, record

ROOT = Path(__file__).resolve().parent.parent
SPEC = {"graders": [{"type": "custom", "key": "len", "function": "reward_server:length"}]}


def length(sample) -> float:  # the served grader: as cheap as a grader gets
    return min(len(sample.completion() or "") / 100, 1.0)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def starlette_child() -> None:
    """Serve the same protocol with starlette + uvicorn; print the port."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from gradewire.server._protocol import RequestError, grade_request, outcome_answer
    from gradewire.server._slots import GradingSlots
    from gradewire.specs._factory import build_grader

    grader = build_grader(SPEC["graders"][0], trust_code=True)  # this script's own spec
    graders = {grader.grader_key: grader}
    slots = GradingSlots(64)  # the server-wide cap gradewire serve has by default

    async def grade(request: Request) -> JSONResponse:
        try:
            found, thread = grade_request(json.loads(await request.body()), graders)
        except RequestError as exc:
            return JSONResponse({"error": exc.message}, status_code=exc.status)
        [outcome] = await slots.attempt_all(found, [thread])
        return JSONResponse(outcome_answer(outcome))

    app = Starlette(routes=[Route("/v1/grade", grade, methods=["POST"])])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


def start(kind: str, spec_path: Path) -> tuple[subprocess.Popen[str], int]:
    # This folder for the spec's functions, then the caller's path: the servers run the
    # gradewire under test, not only the one installed in the venv.
    path = [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    if kind == "aiohttp":
        command = [sys.executable, "-m", "gradewire", "serve", str(spec_path), "--port", "0"]
    else:
        command = [sys.executable, __file__, "--starlette-child"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"127\.0\.0\.1:(\d+)", line) if kind == "aiohttp" else None
    try:
        return process, int(found.group(1) if found else line)
    except ValueError:
        process.terminate()
        process.wait(timeout=30)
        raise SystemExit(f"{kind} server did not start: {line!r}") from None


async def drive(port: int, requests: int) -> float:
    from gradewire import StringThread
    from gradewire.tools._endpoint_grader import EndpointGrader

    grader = EndpointGrader("rm", f"http://127.0.0.1:{port}/v1/grade")
    samples = [
        StringThread([("user", f"question {i}"), ("assistant", "an answer " * (i % 20))])
        for i in range(requests)
    ]
    await grader.grade_many(samples[:200], max_concurrency=64)  # warm up
    start = time.perf_counter()
    grades = await grader.grade_many(samples, max_concurrency=64)
    elapsed = time.perf_counter() - start
    assert all(g is not None for g in grades)
    await grader.aclose()
    return elapsed


def measure(kind: str, spec_path: Path, requests: int) -> tuple[float, float]:
    process, port = start(kind, spec_path)
    try:
        before = cpu_seconds(process.pid)
        elapsed = asyncio.run(drive(port, requests))
        cpu = cpu_seconds(process.pid) - before
    finally:
        process.terminate()
        process.wait(timeout=30)
    return requests / elapsed, cpu / requests * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--starlette-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.starlette_child:
        starlette_child()
        return
    kinds = ["aiohttp"]
    if importlib.util.find_spec("starlette") and importlib.util.find_spec("uvicorn"):
        kinds.append("starlette")
    else:
        print("starlette or uvicorn is not installed: pip install starlette uvicorn to compare")
    with tempfile.TemporaryDirectory() as folder:
        spec_path = Path(folder) / "graders.json"
        spec_path.write_text(json.dumps(SPEC))
        results = {kind: measure(kind, spec_path, args.requests) for kind in kinds}
    for kind, (rate, cpu_ms) in results.items():
        print(f"{kind:>10}: {rate:7.0f} requests/s, server CPU {cpu_ms:.3f} ms per request")
    rate, cpu_ms = results["aiohttp"]
    other = results.get("starlette")
    beside = "starlette + uvicorn"
    record(
        "reward_server",
        [
            Figure(
                f"reward server CPU per request ({args.requests:,} requests)",
                cpu_ms,
                "ms",
                alternatives=[Alternative(beside, other[1])] if other else [],
            ),
            Figure(
                "requests answered a second",
                rate,
                "requests/s",
                better="higher",
                alternatives=[Alternative(beside, other[0])] if other else [],
            ),
        ],
        title="The reward server (aiohttp, what `gradewire serve` runs) beside starlette + uvicorn",
        notes=[] if other else ["starlette or uvicorn is not installed here: no alternative"],
    )
    if len(results) < 2:
        return
    (a_rate, a_cpu), (s_rate, s_cpu) = results["aiohttp"], results["starlette"]
    print(f"aiohttp / starlette+uvicorn: {a_rate / s_rate:.2f}x the rate, ", end="")
    print(f"{s_cpu / a_cpu:.2f}x less server CPU per request")


if __name__ == "__main__":
    main()
