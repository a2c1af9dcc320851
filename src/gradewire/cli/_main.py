"""The `gradewire` command line."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from gradewire.core._logging_core import LogValue
from gradewire.core._table import Table

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `gradewire` command; returns the process exit code."""
    parser = argparse.ArgumentParser(
        prog="gradewire", description="Async graders for LLM evaluation and RL rewards."
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo", help="grade the bundled sample set and write the aggregated logs and tables"
    )
    demo.add_argument(
        "--out",
        type=Path,
        default=Path("gradewire-demo"),
        help=(
            "directory for logs.jsonl, summary.json and the HTML tables (default: ./gradewire-demo)"
        ),
    )
    from gradewire.cli._agreement_cli import add_agreement_parser, run_agreement_command
    from gradewire.cli._audit_cli import add_audit_parser, run_audit_command
    from gradewire.cli._compare_cli import add_compare_parser, run_compare_command
    from gradewire.cli._eval_cli import add_eval_parser, run_eval_command
    from gradewire.cli._health_cli import add_health_parser, run_health_command
    from gradewire.cli._judge_cli import add_judge_parser, run_judge_command
    from gradewire.cli._leaderboard_cli import add_leaderboard_parser, run_leaderboard_command
    from gradewire.cli._power_cli import add_power_parser, run_power_command
    from gradewire.cli._sync_cli import add_sync_parser, run_sync_command
    from gradewire.server._cli import add_serve_parser, run_serve  # keep start-up light

    add_serve_parser(commands)
    add_eval_parser(commands)
    add_compare_parser(commands)
    add_leaderboard_parser(commands)
    add_audit_parser(commands)
    add_agreement_parser(commands)
    add_power_parser(commands)
    add_sync_parser(commands)
    add_health_parser(commands)
    add_judge_parser(commands)
    args = parser.parse_args(argv)
    if args.version:
        from gradewire import __version__  # keep start-up light

        print(__version__)
        return 0
    if args.command == "demo":
        return _demo(args.out)
    if args.command == "serve":
        return run_serve(args)
    if args.command == "eval":
        return run_eval_command(args)
    if args.command == "compare":
        return run_compare_command(args)
    if args.command == "leaderboard":
        return run_leaderboard_command(args)
    if args.command == "audit":
        return run_audit_command(args)
    if args.command == "agreement":
        return run_agreement_command(args)
    if args.command == "power":
        return run_power_command(args)
    if args.command == "sync":
        return run_sync_command(args)
    if args.command == "health":
        return run_health_command(args)
    if args.command == "judge":
        return run_judge_command(args)
    parser.print_help(sys.stderr)
    return 2


def _demo(out: Path) -> int:
    from gradewire.cli._demo import run_demo  # keep start-up light

    result = asyncio.run(run_demo(out))
    print(f"graded the bundled samples in {result.steps} logged steps; totals over all steps:")
    print(_format_numbers(result.summary))
    print()
    for path in result.written:
        print(f"wrote {path}")
    for line in result.notes:
        print(line)
    return 0


def _format_numbers(logs: Mapping[str, LogValue]) -> str:
    rows = [(key, value) for key, value in logs.items() if not isinstance(value, Table)]
    width = max((len(key) for key, _ in rows), default=0)
    return "\n".join(
        f"{key:<{width}}  {value:>10}"
        if isinstance(value, int)
        else f"{key:<{width}}  {value:>10.4f}"
        for key, value in rows
    )
