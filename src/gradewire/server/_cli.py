"""``gradewire serve GRADERS``: the reward server from the command line."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

from gradewire.core._errors import GradewireError

__all__ = ["add_serve_parser", "run_serve"]

TOKEN_ENV = "GRADEWIRE_SERVE_TOKEN"


def add_serve_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` subcommand."""
    from gradewire.server._server import (
        DEFAULT_BODY_TIMEOUT,
        DEFAULT_HEADER_TIMEOUT,
        DEFAULT_KEEPALIVE_TIMEOUT,
        DEFAULT_MAX_BATCH,
        DEFAULT_MAX_BODY_BYTES,
        DEFAULT_MAX_LOG_BYTES,
        DEFAULT_MAX_LOG_RECORDS,
    )

    serve = commands.add_parser(
        "serve",
        help="serve the graders of a TOML/JSON grader file over HTTP (needs gradewire[serve])",
        description=(
            "Serve graders over HTTP: POST /v1/grade, /v1/grade_batch, OpenRLHF's /get_reward, "
            "/v1/logs/clear (read and clear the logs); GET /health, /v1/graders, /v1/logs. "
            "POST bodies must be sent with 'Content-Type: application/json'. Without a token, "
            "only requests addressed to localhost, 127.0.0.1 or [::1] (or an --allow-host name) "
            "and not sent by a web page of another site are answered: set a token to serve "
            "other hosts. "
            "Stop with SIGTERM or Ctrl-C."
        ),
    )
    serve.add_argument("graders", type=Path, help="grader file (.toml or .json)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0: any free)")
    serve.add_argument(
        "--token",
        default=None,
        help=f"bearer token clients must send (default: ${TOKEN_ENV}; prefer the variable, "
        "as command lines are visible to other users)",
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="allow binding a non-loopback --host without a token; requests must still be "
        "addressed to localhost, 127.0.0.1 or [::1] (a container's published port, an SSH "
        "tunnel) or an --allow-host name: to serve other machines, set a token",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="without a token, also answer requests addressed to NAME (the host name or IP "
        "clients put in the URL), for clients on other machines that cannot send a token, "
        "such as OpenRLHF's --remote_rm_url; list only names you control; repeatable",
    )
    serve.add_argument(
        "--max-batch",
        type=int,
        default=DEFAULT_MAX_BATCH,
        help=f"most samples per batch request (default: {DEFAULT_MAX_BATCH})",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        help=f"largest request body in bytes (default: {DEFAULT_MAX_BODY_BYTES})",
    )
    serve.add_argument(
        "--failure-reward",
        type=float,
        default=0.0,
        help="reward /get_reward gives a sample that abstained or failed (default: 0.0)",
    )
    serve.add_argument(
        "--label-key",
        default="label",
        help="metadata key /get_reward puts each sample's label under, as the graders read "
        "it: e.g. --label-key answer for metadata['answer'] (default: label)",
    )
    serve.add_argument(
        "--max-concurrency",
        type=int,
        default=64,
        help="samples graded at once across all requests; the others queue (default: 64)",
    )
    serve.add_argument(
        "--max-log-records",
        type=int,
        default=DEFAULT_MAX_LOG_RECORDS,
        help="log records each grader keeps before folding the oldest into exact running "
        "statistics, so memory stays bounded (/v1/logs figures stay exact, tables show recent "
        f"samples); graders that set their own keep it (default: {DEFAULT_MAX_LOG_RECORDS}; "
        "0: keep every record)",
    )
    serve.add_argument(
        "--max-log-bytes",
        type=int,
        default=DEFAULT_MAX_LOG_BYTES,
        help="bytes of text (prompts, completions, reasons) each grader keeps for its tables, "
        "texts over 10,000 characters cut as they are logged; GET /v1/logs answers at most "
        f"this much table text (default: {DEFAULT_MAX_LOG_BYTES}; 0: no bound)",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="connections open at once; at the limit an idle one (one that has sent nothing "
        "first) is closed for a new one (default: half the open-file limit, ulimit -n, "
        "from 16 to 10,000)",
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=DEFAULT_HEADER_TIMEOUT,
        help="seconds a connection has to send a complete request head "
        f"(default: {DEFAULT_HEADER_TIMEOUT:g})",
    )
    serve.add_argument(
        "--keepalive-timeout",
        type=float,
        default=DEFAULT_KEEPALIVE_TIMEOUT,
        help=f"seconds an idle connection stays open (default: {DEFAULT_KEEPALIVE_TIMEOUT:g})",
    )
    serve.add_argument(
        "--body-timeout",
        type=float,
        default=DEFAULT_BODY_TIMEOUT,
        help="seconds a request body may take to arrive, and an answer to be sent "
        f"(default: {DEFAULT_BODY_TIMEOUT:g})",
    )


def run_serve(args: argparse.Namespace) -> int:
    """Load the graders and serve them until SIGTERM or SIGINT; returns the exit code."""
    from gradewire.server._checks import connection_settings
    from gradewire.server._server import create_app, is_loopback, serve
    from gradewire.specs._factory import load_graders

    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV)
    token = token.strip() if token else None
    max_log_records = args.max_log_records or None  # 0: unbounded
    if not is_loopback(args.host) and not token and not args.insecure:
        print(
            f"gradewire serve: refusing to bind {args.host} without a token: anyone who can "
            f"reach it could run the graders. Set {TOKEN_ENV} (or --token), bind 127.0.0.1, "
            "or pass --insecure",
            file=sys.stderr,
        )
        return 2
    try:
        graders = load_graders(args.graders)
        settings: dict[str, Any] = {
            "token": token,
            "max_batch": args.max_batch,
            "max_body_bytes": args.max_body_bytes,
            "failure_reward": args.failure_reward,
            "max_concurrency": args.max_concurrency,
            "max_log_records": max_log_records,
            "max_log_bytes": args.max_log_bytes or None,  # 0: unbounded
            "allowed_hosts": args.allow_host,
            "label_key": args.label_key,
            "body_timeout": args.body_timeout,
        }
        connections: dict[str, Any] = {
            "max_connections": args.max_connections,
            "header_timeout": args.header_timeout,
            "keepalive_timeout": args.keepalive_timeout,
        }
        # Checks the settings and aiohttp before binding anything.
        create_app(graders, **settings)
        connection_settings(**connections)
    except GradewireError as exc:
        print(f"gradewire serve: {exc}", file=sys.stderr)
        return 2

    def ready(host: str, port: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        keys = ", ".join(g.grader_key for g in graders)
        if token:
            auth = "bearer token required"
        else:
            named = "".join(f", {name}" for name in args.allow_host)
            auth = f"no token: only requests to localhost, 127.0.0.1, [::1]{named}"
        _say(f"gradewire serve: listening on http://{shown}:{port} ({auth}; graders: {keys})")

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            # Windows has no signal handlers on the loop; Ctrl-C still ends asyncio.run.
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(signum, stop.set)
        await serve(
            graders,
            host=args.host,
            port=args.port,
            insecure=args.insecure,
            stop=stop,
            on_ready=ready,
            **settings,
            **connections,
        )

    try:
        asyncio.run(main())
    except OSError as exc:  # the port is taken, the address is not this machine's...
        print(f"gradewire serve: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    _say("gradewire serve: stopped")
    return 0


def _say(line: str) -> None:
    # Whoever started the server may have closed our stdout: serving goes on regardless.
    with contextlib.suppress(OSError, ValueError):
        print(line, flush=True)
