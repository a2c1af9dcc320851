"""``gradewire sync SPILL_DIR``: deliver spill files to their tracker by hand, as ``wandb sync``.

A BackgroundSink keeps on disk what its tracker did not take (an outage), and the next
BackgroundSink of the same run delivers it first. This command does it without one: after
a crash, when the run will not be resumed, or into another run when the first is gone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gradewire.core import GradewireError

__all__ = ["add_sync_parser", "run_sync_command"]


def add_sync_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``sync`` subcommand."""
    parser = commands.add_parser(
        "sync",
        help="deliver the spill files a BackgroundSink left to their tracker (like wandb sync)",
        description=(
            "Deliver what BackgroundSinks kept on disk while their tracker was down, run by "
            "run, oldest first, each entry once: a spill file of a run is delivered to that "
            "run, files a live process still holds are left alone, an MLflow run whose "
            "sink was closed during the outage is ended with the status it would have had, "
            "and a W&B run is resumed (same project and id) and finished. "
            "Running it again is safe: what was delivered is not sent again. "
            "A tracker's client sends this environment's credentials to the server it is "
            "given, so a run goes only to a server you named (--tracking-uri or "
            "MLFLOW_TRACKING_URI), never to one only the spill files name, unless "
            "--trust-target confirms it; --dry-run shows where each run would go."
        ),
    )
    parser.add_argument("spill_dir", type=Path, help="the spill directory (a sink's spill_dir)")
    parser.add_argument(
        "--dry-run", action="store_true", help="list what would be sent, and send nothing"
    )
    parser.add_argument(
        "--tracking-uri",
        default=None,
        help="the MLflow tracking URI to deliver to, if not the one the files name",
    )
    parser.add_argument(
        "--trust-target",
        action="store_true",
        help=(
            "deliver also to servers only the spill files name, with this environment's "
            "credentials (only for spill folders you wrote yourself)"
        ),
    )
    parser.add_argument(
        "--mlflow-run-id",
        default=None,
        help="deliver into this MLflow run instead of the one the files name (it is gone)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds to wait for each run's delivery (default 600); what is left stays",
    )


def run_sync_command(args: argparse.Namespace) -> int:
    """Run ``gradewire sync``; returns the exit code (0: all delivered, 1: not all)."""
    from gradewire.sinks._console_sink import printable
    from gradewire.sinks.background._spill_replay import scan_spill, sync_spill

    overrides = {
        name: value
        for name, value in (("tracking_uri", args.tracking_uri), ("run_id", args.mlflow_run_id))
        if value is not None
    }
    try:
        if not args.timeout >= 0:
            raise GradewireError(f"--timeout must be 0 or more, not {args.timeout}")
        if overrides:
            other = sorted({r.kind for r in scan_spill(args.spill_dir) if r.owners} - {"mlflow"})
            if other:
                raise GradewireError(
                    f"--tracking-uri and --mlflow-run-id apply to MLflow runs, and "
                    f"{args.spill_dir} holds spill files of {', '.join(other)} runs"
                )
        results = sync_spill(
            args.spill_dir,
            overrides=overrides,
            timeout=args.timeout,
            dry_run=args.dry_run,
            trust_targets=args.trust_target,
        )
    except GradewireError as exc:
        print(f"gradewire sync: {printable(str(exc))}", file=sys.stderr)
        return 2
    if not results:
        kept = sorted(Path(args.spill_dir).glob("*.rejected.jsonl"))
        note = (
            f" ({len(kept)} file(s) of set-aside entries stay: read them with "
            "gradewire.sinks.read_spill)"
            if kept
            else ""
        )
        print(f"{printable(str(args.spill_dir))}: nothing left to deliver{note}")
        return 0
    lines: list[str] = []
    failed = 0
    for result in results:
        run = result.run
        lines.append(printable(run.name))
        pending = f"{run.steps} steps"
        if run.steps:
            pending += f" ({run.first_step}..{run.last_step})"
        if run.configs:
            pending += f", {run.configs} configs"
        if run.closed:
            pending += ", then the close of its sink (ends the run)"
        owners = len(run.owners)
        lines.append(f"  pending: {pending} in {owners} owner(s), {run.bytes} bytes")
        if result.destination is not None:
            lines.append(f"  to: {printable(result.destination)}")
        for owner in run.live:
            state = owner.state
            lines.append(
                f"  held by live process {state.pid} on {printable(state.host)}: "
                f"{printable(owner.stem)} left alone"
            )
        if result.report is None:
            lines.append(f"  not sent: {printable(result.skipped or '')}")
            if not args.dry_run and run.owners:
                failed += 1
            continue
        report = result.report
        lines.append(
            f"  delivered {report.delivered} of {report.adopted} entries; "
            f"{report.pending} pending, {report.rejected} set aside, {report.lost} lost"
        )
        if report.rejected_path is not None:
            lines.append(f"  set aside in {printable(str(report.rejected_path))}")
        if report.lost_reason:
            lines.append(f"  lost: {printable(report.lost_reason)}")
        if not report.ok:
            failed += 1
            where = ", ".join(printable(str(p)) for p in report.spill_paths) or "memory"
            lines.append(
                f"  not all delivered (last error: {printable(str(report.last_error))}); "
                f"the rest stays in {where}: run this again later"
            )
    print("\n".join(lines))
    return 1 if failed else 0
