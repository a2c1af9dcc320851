"""``gradewire health RUN``: replay a finished run's logged steps through `RewardMonitor`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gradewire.core import GradewireError

__all__ = ["add_health_parser", "run_health_command"]


def add_health_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``health`` subcommand."""
    parser = commands.add_parser(
        "health",
        help="replay a logged RL run through the reward-health monitor and print its alerts",
        description="Replay a finished run's history (a JSONL file written by JsonlSink) "
        "through RewardMonitor, and print the alerts it would have raised, step by step.",
    )
    parser.add_argument("run", type=Path, help="the run's JSONL log (JsonlSink's file)")
    parser.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="the gold and length tests' alarm level (default: RewardMonitor's, 5.0)",
    )
    parser.add_argument(
        "--warmup", type=int, default=None, help="steps that set the references (default 10)"
    )
    parser.add_argument("--json", action="store_true", help="print the alerts as JSON")


def run_health_command(args: argparse.Namespace) -> int:
    """Run ``gradewire health``; returns 0 (no alert), 1 (alerts) or 2 (could not read)."""
    from gradewire.eval.reporting._terminal import terminal_safe
    from gradewire.sinks import read_jsonl
    from gradewire.train import RewardMonitor

    settings: dict[str, float | int] = {}
    if args.threshold is not None:
        settings["threshold"] = args.threshold
    if args.warmup is not None:
        settings["warmup"] = args.warmup
    try:
        monitor = RewardMonitor(**settings)  # type: ignore[arg-type]
        run = read_jsonl(args.run)
        steps = sorted(run.steps, key=lambda pair: pair[0])
        alerts = monitor.replay(steps)
    except GradewireError as exc:
        print(f"gradewire health: {terminal_safe(exc, multiline=True)}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([a.to_dict() for a in alerts], indent=2, ensure_ascii=True))
        return 1 if alerts else 0
    where = terminal_safe(str(args.run))
    if not alerts:
        print(f"{where}: {len(steps)} steps replayed, no alert.")
        return 0
    print(f"{where}: {len(steps)} steps replayed, {len(alerts)} alert(s):")
    for alert in alerts:
        print(terminal_safe(f"- {alert}"))
    return 1
