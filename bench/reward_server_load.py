"""Reward server under load: 200 clients for 20 s, alone and beside 2,000 idle connections.

Two servers host the same trivial grader, each in its own process: ``gradewire serve`` (a
header deadline, a connection cap that closes the connection idle the longest, a
server-wide grading cap) and the same application served with aiohttp's defaults (no cap,
no deadline before the first request: how ``gradewire serve`` ran before). The client,
in this process, keeps 200 keep-alive connections busy with ``POST /v1/grade`` and, in the
second scenario, holds 2,000 more connections open that send nothing, each reopened a
second after the server closes it (``--reopen-after 0``: at once, a connection flood).
Each scenario runs with the machine's open-file limit and with the server limited to
1,024 files, the common default.

Printed per run: requests per second, latency p50 / p99, the server's CPU per request,
failed requests, idle connections the server closed, the bytes it logged, and its resident
memory at the start and end of the measured window. Linux only (/proc, setrlimit).

    python bench/reward_server_load.py [--seconds 20] [--clients 200] [--idle 2000]
        [--rounds 1] [--reopen-after 1] [--baseline CHECKOUT]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SPEC = {"graders": [{"type": "custom", "key": "len", "function": "reward_server_load:length"}]}
BODY = json.dumps(
    {"thread": {"turns": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}}
).encode()
REQUEST = (
    b"POST /v1/grade HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY
)
SERVERS = ("gradewire serve", "aiohttp defaults")


def length(sample) -> float:  # the served grader: as cheap as a grader gets
    return min(len(sample.completion() or "") / 100, 1.0)


def aiohttp_defaults_child(spec_path: str) -> None:
    """The same application on aiohttp's AppRunner + TCPSite defaults; print the port."""
    from aiohttp import web

    from gradewire import load_graders
    from gradewire.server import create_app

    async def main() -> None:
        runner = web.AppRunner(create_app(load_graders(spec_path)), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        print(f"listening on http://127.0.0.1:{runner.addresses[0][1]}", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


def start(
    kind: str, spec_path: Path, files: int | None, log: Path, baseline: Path | None
) -> tuple[subprocess.Popen[str], int]:
    path = [str(Path(__file__).parent)]
    if kind == "baseline serve" and baseline is not None:
        path.insert(0, str(baseline / "src"))  # that checkout's gradewire first
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    if kind in ("gradewire serve", "baseline serve"):
        command = [sys.executable, "-m", "gradewire", "serve", str(spec_path), "--port", "0"]
    else:
        command = [sys.executable, __file__, "--aiohttp-child", str(spec_path)]

    def limit_files() -> None:  # in the child, before the server sizes its cap from it
        if files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    with log.open("wb") as err:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=err, text=True, env=env, preexec_fn=limit_files
        )
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"127\.0\.0\.1:(\d+)", line)
    if not found:
        process.terminate()
        raise SystemExit(f"{kind} did not start: {line!r}")
    return process, int(found.group(1))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@dataclass
class Run:
    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    closed: int = 0
    rss: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # server CPU seconds: start, end


async def read_answer(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    found = re.search(rb"Content-Length: (\d+)", head, re.IGNORECASE)
    await reader.readexactly(int(found.group(1)) if found else 0)
    return head


async def client(port: int, run: Run, until: float, measure_from: float) -> None:
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    while (now := time.perf_counter()) < until:
        try:
            if connection is None:
                connection = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
            reader, writer = connection
            writer.write(REQUEST)
            head = await asyncio.wait_for(read_answer(reader), 10)
            ok = head.startswith(b"HTTP/1.1 200")
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            ok = False
            if connection is not None:
                connection[1].close()
            connection = None
        if now >= measure_from:
            if ok:
                run.latencies.append(time.perf_counter() - now)
            else:
                run.failures += 1
        if not ok:
            await asyncio.sleep(0.05)
    if connection is not None:
        connection[1].close()


async def idle_holder(port: int, run: Run, until: float, pause: float | None) -> None:
    """An idle connection for the whole run, reopened ``pause`` s after the server closes it.

    None: never reopened; 0: reopened at once, as a connection flood would.
    """
    while time.perf_counter() < until:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
        except (OSError, asyncio.TimeoutError):
            await asyncio.sleep(0.5)
            continue
        try:
            await asyncio.wait_for(reader.read(), until - time.perf_counter())
            run.closed += 1
        except (OSError, asyncio.TimeoutError):
            pass
        finally:
            writer.close()
        if pause is None:
            return
        await asyncio.sleep(pause)


async def drive(
    pid: int, port: int, clients: int, idle: int, seconds: float, pause: float | None
) -> Run:
    run = Run()
    warmup = 2.0
    start = time.perf_counter()
    until = start + warmup + seconds
    holders = [asyncio.ensure_future(idle_holder(port, run, until, pause)) for _ in range(idle)]
    await asyncio.sleep(0.5 if idle else 0)
    measure_from = time.perf_counter() + warmup
    workers = [
        asyncio.ensure_future(client(port, run, until, measure_from)) for _ in range(clients)
    ]
    await asyncio.sleep(measure_from - time.perf_counter())
    run.cpu.append(cpu_seconds(pid))
    while (left := until - time.perf_counter()) > 0:
        run.rss.append(rss_mb(pid))
        await asyncio.sleep(min(1.0, left))
    run.cpu.append(cpu_seconds(pid))
    run.rss.append(rss_mb(pid))
    await asyncio.gather(*workers)
    for holder in holders:
        holder.cancel()
    await asyncio.gather(*holders, return_exceptions=True)
    return run


def report(kind: str, idle: int, files: str, run: Run, seconds: float, log: Path) -> float:
    """Print one run's line; returns its requests per second."""
    rate = len(run.latencies) / seconds
    if len(run.latencies) >= 100:
        cuts = statistics.quantiles(run.latencies, n=100)
        p50, p99 = cuts[49] * 1000, cuts[98] * 1000
    else:
        p50 = p99 = float("nan")
    rss = f"{run.rss[0]:5.0f} → {run.rss[-1]:5.0f}" if run.rss else "  n/a"
    served = len(run.latencies)
    cpu_text = f"{(run.cpu[1] - run.cpu[0]) / served * 1000:.3f}" if served else "n/a"
    print(
        f"{kind:>17} {idle:>5} {files:>6} {rate:>9.0f} {p50:>7.1f} {p99:>7.1f} "
        f"{cpu_text:>7} {run.failures:>7} {run.closed:>7} {log.stat().st_size / 1000:>8.1f}"
        f"   {rss}",
        flush=True,
    )
    return rate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--idle", type=int, default=2000)
    parser.add_argument(
        "--reopen-after",
        type=float,
        default=1.0,
        help="seconds before an idle connection the server closed is reopened (default: 1; "
        "0: at once, a connection flood; -1: never)",
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="runs of each case, servers in turn; medians"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a checkout of another gradewire version whose gradewire serve runs too",
    )
    parser.add_argument("--aiohttp-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.aiohttp_child:
        aiohttp_defaults_child(args.aiohttp_child)
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = args.clients + args.idle + 200
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise SystemExit(f"the client needs {needed} open files; the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, needed), hard))
    print(f"{args.clients} clients for {args.seconds:g} s (after 2 s of warm-up), loopback")
    print(
        f"{'server':>17} {'idle':>5} {'files':>6} {'req/s':>9} {'p50 ms':>7} {'p99 ms':>7} "
        f"{'CPU ms':>7} {'failed':>7} {'closed':>7} {'log kB':>8}   RSS MB start → end"
    )
    pause = None if args.reopen_after < 0 else args.reopen_after
    rates: dict[tuple[str, int, str], list[float]] = {}
    servers = [*SERVERS, "baseline serve"] if args.baseline else list(SERVERS)
    with tempfile.TemporaryDirectory() as folder:
        spec_path = Path(folder) / "graders.json"
        spec_path.write_text(json.dumps(SPEC))
        for files in (None, 1024):
            shown = "1024" if files else str(soft)
            for idle in (0, args.idle):
                for round_ in range(args.rounds):
                    # A different server first each round: the machine's load drifts.
                    turn = servers[round_ % len(servers) :] + servers[: round_ % len(servers)]
                    for kind in turn:
                        log = Path(folder) / "server.log"
                        process, port = start(kind, spec_path, files, log, args.baseline)
                        try:
                            run = asyncio.run(
                                drive(process.pid, port, args.clients, idle, args.seconds, pause)
                            )
                        finally:
                            process.terminate()
                            with contextlib.suppress(subprocess.TimeoutExpired):
                                process.wait(timeout=30)
                            if process.stdout is not None:
                                process.stdout.close()
                        rate = report(kind, idle, shown, run, args.seconds, log)
                        rates.setdefault((kind, idle, shown), []).append(rate)
    print()
    for (kind, idle, files), runs in rates.items():
        if kind != SERVERS[0]:
            continue
        rate = statistics.median(runs)
        for other_kind in servers[1:]:
            other = statistics.median(rates[other_kind, idle, files])
            ratio = f"{rate / other:.2f}x" if other else "inf (the other served nothing)"
            print(
                f"gradewire serve / {other_kind}, {idle} idle, {files} files: {ratio} "
                f"(median req/s {rate:.0f} / {other:.0f})"
            )


if __name__ == "__main__":
    main()
