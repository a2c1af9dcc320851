"""``gradewire serve GRADERS``: the reward server from the command line.

Each field of `ServerSettings` is one flag, made from the field: ``--<name>`` (dashes for
underscores), its type, its default and, as help, its doc. A new setting needs no code here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import inspect
import os
import re
import signal
import sys
import typing
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradewire.core._errors import GradewireError

if TYPE_CHECKING:
    from gradewire.server._settings import ServerSettings

__all__ = ["TOKEN_ENV", "SettingFlag", "add_serve_parser", "run_serve", "setting_flags"]

TOKEN_ENV = "GRADEWIRE_SERVE_TOKEN"

# The settings whose flag is not --<name>: one repeated flag per host name reads better.
_SPELLED = {"allowed_hosts": "--allow-host"}
_OLD_FLAGS = {"failure_value": ("--failure-reward",)}  # the old spellings, still read
# What a flag adds to its setting's doc: where else its value can come from.
_NOTES = {
    "token": f"default: ${TOKEN_ENV}; prefer the variable, as command lines are visible to "
    "other users"
}


@dataclass(frozen=True)
class SettingFlag:
    """The command-line flag of one `ServerSettings` field.

    Attributes:
        field: The field's name.
        flag: The flag, e.g. ``--max-batch``.
        type: What the flag's text is parsed as (int, float or str).
        repeated: The field is a collection: the flag is given once per item.
        zero_is_none: The field may be None, which the flag spells 0.
        help: The field's doc, as plain text, with the default.
    """

    field: str
    flag: str
    type: type[int] | type[float] | type[str]
    repeated: bool
    zero_is_none: bool
    help: str


def setting_flags() -> list[SettingFlag]:
    """One flag per `ServerSettings` field, in the fields' order."""
    from gradewire.server._settings import ServerSettings

    hints = typing.get_type_hints(ServerSettings)
    docs = _field_docs(ServerSettings)
    flags = []
    for each in dataclasses.fields(ServerSettings):
        hint = hints[each.name]
        args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        optional = type(None) in typing.get_args(hint)
        repeated = typing.get_origin(hint) is Collection
        parsed = args[0] if (optional or repeated) else hint
        if parsed not in (int, float, str):
            raise TypeError(f"ServerSettings.{each.name}: no flag for a {hint}")
        notes = [_NOTES[each.name]] if each.name in _NOTES else []
        if each.default not in (None, frozenset()):
            shown = f"{each.default:g}" if isinstance(each.default, float) else each.default
            notes.append(f"default: {shown}")
        if repeated:
            notes.append("repeatable")
        text = _plain(docs.get(each.name, ""))
        flags.append(
            SettingFlag(
                field=each.name,
                flag=_SPELLED.get(each.name, "--" + each.name.replace("_", "-")),
                type=parsed,
                repeated=repeated,
                zero_is_none=optional and parsed is int,
                help=f"{text.rstrip('.')} ({'; '.join(notes)})." if notes else text,
            )
        )
    return flags


def _field_docs(cls: type) -> dict[str, str]:
    """Each field's doc, from the ``Attributes:`` section of ``cls``'s docstring."""
    doc = inspect.getdoc(cls) or ""  # None under python -OO: flags without help
    docs: dict[str, str] = {}
    name = None
    for line in doc.partition("Attributes:\n")[2].splitlines():
        if line.startswith("    ") and not line.startswith("     "):
            name, _, text = line.strip().partition(": ")
            docs[name] = text
        elif line.startswith("        ") and name is not None:
            docs[name] += " " + line.strip()
        else:
            break
    return docs


def _plain(text: str) -> str:
    """A docstring's text as help: no reST quotes, and %-signs argparse leaves alone."""
    return re.sub(r"``?([^`]+)``?", r"\1", text).replace("%", "%%")


def add_serve_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` subcommand."""
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
    where = serve.add_argument_group("where to listen")
    where.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    where.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0: any free)")
    where.add_argument(
        "--insecure",
        action="store_true",
        help="allow binding a non-loopback --host without a token; requests must still be "
        "addressed to localhost, 127.0.0.1 or [::1] (a container's published port, an SSH "
        "tunnel) or an --allow-host name: to serve other machines, set a token",
    )
    settings = serve.add_argument_group(
        "server settings", "The fields of gradewire.ServerSettings, one flag each."
    )
    for flag in setting_flags():
        options: dict[str, Any] = {
            "dest": flag.field,
            "type": flag.type,
            "default": argparse.SUPPRESS,  # the settings object holds the defaults
            "help": flag.help,
        }
        if flag.repeated:
            options.update(action="append", metavar="NAME")
        settings.add_argument(flag.flag, *_OLD_FLAGS.get(flag.field, ()), **options)


def settings_from(args: argparse.Namespace) -> ServerSettings:
    """The settings given on the command line (`TOKEN_ENV` for a token not given).

    Raises:
        GradewireError: A value is refused; the message names the flag.
    """
    from gradewire.server._settings import ServerSettings, check_setting

    given: dict[str, Any] = {}
    for flag in setting_flags():
        value, source = getattr(args, flag.field, None), flag.flag
        if flag.field == "token" and value is None:
            value, source = os.environ.get(TOKEN_ENV), f"${TOKEN_ENV}"
        if value is None:
            continue
        if flag.zero_is_none and value == 0:
            value = None
        try:
            given[flag.field] = check_setting(flag.field, value)
        except GradewireError as exc:
            raise type(exc)(f"{source}: {exc}") from None
    return ServerSettings(**given)


def run_serve(args: argparse.Namespace) -> int:
    """Load the graders and serve them until SIGTERM or SIGINT; returns the exit code."""
    from gradewire.server._hosts import is_loopback
    from gradewire.server._server import create_app, serve
    from gradewire.specs._factory import load_graders

    try:
        settings = settings_from(args)
    except GradewireError as exc:
        print(f"gradewire serve: {exc}", file=sys.stderr)
        return 2
    if not is_loopback(args.host) and settings.token is None and not args.insecure:
        print(
            f"gradewire serve: refusing to bind {args.host} without a token: anyone who can "
            f"reach it could run the graders. Set {TOKEN_ENV} (or --token), bind 127.0.0.1, "
            "or pass --insecure",
            file=sys.stderr,
        )
        return 2
    try:
        graders = load_graders(args.graders)
        create_app(graders, settings=settings)  # checks the graders and aiohttp before binding
    except GradewireError as exc:
        print(f"gradewire serve: {exc}", file=sys.stderr)
        return 2

    def ready(host: str, port: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        keys = ", ".join(g.grader_key for g in graders)
        if settings.token:
            auth = "bearer token required"
        else:
            named = "".join(f", {name}" for name in sorted(settings.allowed_hosts))
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
            settings=settings,
            host=args.host,
            port=args.port,
            insecure=args.insecure,
            stop=stop,
            on_ready=ready,
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
