"""``gradewire health RUN``: replay a finished run's logged steps through `RewardMonitor`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gradewire.core import GradewireError, InvalidInputError, LogValue, MissingDependencyError
from gradewire.core._integrations import integrations

__all__ = ["add_health_parser", "read_run_steps", "run_health_command"]

Steps = list[tuple[int, dict[str, LogValue]]]


def add_health_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``health`` subcommand."""
    parser = commands.add_parser(
        "health",
        help="replay a logged RL run through the reward-health monitor and print its alerts",
        description="Replay a finished run's history (a JSONL file written by JsonlSink, an "
        "MLflow run, or an offline W&B run) through RewardMonitor, and print the alerts it "
        "would have raised, step by step.",
    )
    parser.add_argument(
        "run",
        help="the run: a JSONL log (JsonlSink's file); with gradewire[mlflow], an MLflow run "
        "id (mlflow:<run id>, from the store MLFLOW_TRACKING_URI names); with "
        "gradewire[wandb], an offline W&B run folder (offline-run-<time>-<id>) or its "
        ".wandb file",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="the gold-lag test's alarm level (default: RewardMonitor's)",
    )
    parser.add_argument(
        "--warmup", type=int, default=None, help="steps that set the references (default 10)"
    )
    parser.add_argument("--json", action="store_true", help="print the alerts as JSON")


def run_health_command(args: argparse.Namespace) -> int:
    """Run ``gradewire health``; returns 0 (no alert), 1 (alerts) or 2 (could not read)."""
    from gradewire.eval.reporting._terminal import terminal_safe
    from gradewire.train import RewardMonitor

    settings: dict[str, float | int] = {}
    if args.threshold is not None:
        settings["threshold"] = args.threshold
    if args.warmup is not None:
        settings["warmup"] = args.warmup
    try:
        monitor = RewardMonitor(**settings)  # type: ignore[arg-type]
        steps = read_run_steps(str(args.run))
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


def read_run_steps(ref: str) -> Steps:
    """A logged run's ``(step, logs)`` pairs in step order, wherever it was logged.

    A ``.jsonl`` name, or a file other than a W&B ``.wandb`` file, is a JSONL log;
    anything else is asked of the installed ``run_history`` integrations (an MLflow run
    id, a W&B run folder), in turn, until one reads it.

    Raises:
        InvalidInputError: No reader takes ``ref`` (the message names the missing extras).
        GradewireError: A reader failed (a run that does not exist, an unfinished run).
    """
    from gradewire.sinks import read_jsonl

    path = Path(ref)
    if path.suffix == ".jsonl" or (path.is_file() and path.suffix != ".wandb"):
        return sorted(read_jsonl(path).steps, key=lambda pair: pair[0])
    missing: list[str] = []
    for name, entry in integrations("run_history").items():
        try:
            found = entry.load()(ref)
        except MissingDependencyError as exc:
            missing.append(str(exc))
            continue
        except ImportError as exc:
            missing.append(
                f"reading {name} runs needs {exc.name or name}: pip install 'gradewire[{name}]'"
            )
            continue
        if found is not None:
            return sorted(found, key=lambda pair: pair[0])
    where = "does not exist" if not path.exists() else "is not a run any reader takes"
    extra = f" ({'; '.join(missing)})" if missing else ""
    raise InvalidInputError(
        f"{ref} {where}: pass a JSONL log written by JsonlSink, mlflow:<run id> (with "
        f"gradewire[mlflow]) or an offline W&B run folder (with gradewire[wandb]){extra}"
    )
