"""Replaying a spill directory by hand: what ``gradewire sync`` does, as ``wandb sync`` does.

`scan_spill` reads a spill directory: its owners (see `_owner`), which process still holds
each, and what each has pending (steps, configs, a close). `sync_spill` delivers what no
live process holds, run by run: it makes the tracker's sink for the run (the integration
of the target's ``kind`` offers a ``spill_target`` factory, `gradewire.core._integrations`),
wraps it in a `BackgroundSink` that adopts exactly those owners, oldest first, and waits
until they are delivered (or a timeout). The watermarks make it safe to run again: what
was delivered is not sent again, and a file a live process holds is left alone.

A spill directory is data anyone who could write to it may have planted, and a tracker's
client sends this environment's credentials (``MLFLOW_TRACKING_TOKEN``, ...) to whatever
server it is pointed at. So a factory may say where a target would deliver
(``factory.destination(target, **overrides)``: the place, and why the user has not named
it, or None when they have or when no credential leaves the machine): a run whose files
alone name its destination is not sent unless ``trust_targets`` confirms it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from gradewire.core._errors import GradewireError, InvalidInputError, MissingDependencyError
from gradewire.core._integrations import integrations
from gradewire.sinks._sink import Sink
from gradewire.sinks.background._background_sink import BackgroundSink
from gradewire.sinks.background._owner import (
    OwnerFiles,
    describe_target,
    find_owners,
    probe_owner,
    same_run,
    sweep,
    take_owner,
)
from gradewire.sinks.background._report import DeliveryReport
from gradewire.sinks.background._spill_format import Entry, decode_entry

__all__ = [
    "SinkFactory",
    "SpillRun",
    "SyncResult",
    "scan_spill",
    "spill_target_factories",
    "sync_spill",
]

logger = logging.getLogger("gradewire")

SinkFactory = Callable[..., Sink]
"""``factory(target, *, closed, **overrides)``: the sink that delivers to ``target``'s run.

It may also have ``destination(target, **overrides) -> (where, unnamed)``: where the run
would be delivered, and None if the user named that place (or nothing secret goes there),
else a sentence that says why not and how to name it.
"""

Destination: TypeAlias = tuple[str | None, str | None]
"""Where a run would go (None: its factory does not say), and why the user has not named it."""


def spill_target_factories() -> dict[str, SinkFactory]:
    """The sink factories installed integrations offer, by target kind (``mlflow``, ...)."""
    return {name: entry.load() for name, entry in integrations("spill_target").items()}


@dataclass
class SpillRun:
    """The owners of one run in a spill directory, and what they hold.

    Attributes:
        target: Their delivery target (that of the oldest owner).
        owners: Their owners, oldest first.
        live: Owners another live process holds (never synced).
        steps: Steps pending (above the watermarks), in the owners no live process holds.
        configs: Configs pending there.
        closed: Whether one of those owners was closed: its run is ended after them.
        first_step: The lowest step pending, if any.
        last_step: The highest step pending, if any.
        bytes: Bytes of their files.
    """

    target: dict[str, Any] | None
    owners: list[OwnerFiles] = field(default_factory=list)
    live: list[OwnerFiles] = field(default_factory=list)
    steps: int = 0
    configs: int = 0
    closed: bool = False
    first_step: int | None = None
    last_step: int | None = None
    bytes: int = 0

    @property
    def kind(self) -> str:
        return str((self.target or {}).get("kind", "unknown"))

    @property
    def name(self) -> str:
        return describe_target(self.target)

    def add(self, entry: Entry) -> None:
        if entry.close is not None:
            self.closed = True
        elif entry.config is not None:
            self.configs += 1
        elif entry.step is not None:
            self.steps += 1
            low = entry.step if self.first_step is None else min(self.first_step, entry.step)
            self.first_step = low
            self.last_step = max(self.last_step or 0, entry.step)


@dataclass(frozen=True)
class SyncResult:
    """What `sync_spill` did for one run.

    Attributes:
        run: The run, as `scan_spill` found it.
        report: The delivery report (None: not tried, see ``skipped``).
        skipped: Why nothing was sent, if it was not.
        destination: Where it goes (or would go), when its factory says.
    """

    run: SpillRun
    report: DeliveryReport | None = None
    skipped: str | None = None
    destination: str | None = None

    @property
    def ok(self) -> bool:
        return self.report is not None and self.report.ok


def _pending(owner: OwnerFiles, run: SpillRun) -> None:
    """Count what ``owner`` holds above its watermark into ``run``."""
    settled = owner.state.settled
    for path in owner.segments:
        with contextlib.suppress(OSError):
            run.bytes += path.stat().st_size
            with open(path, "rb") as file:
                for line in file:
                    if not line.endswith(b"\n"):
                        break  # cut off by a crash: never counted as spilled
                    try:
                        entry = decode_entry(line)
                    except (ValueError, KeyError, TypeError):
                        continue
                    if entry.seq > settled:
                        run.add(entry)
    if owner.state.closed:
        run.closed = True


def scan_spill(directory: str | Path) -> list[SpillRun]:
    """The runs a spill directory holds entries of, oldest owner first.

    No runs when the directory is empty or holds only set-aside entries (what a delivery
    leaves): there is nothing left to deliver.

    Raises:
        InvalidInputError: ``directory`` is not a directory, or holds no gradewire spill
            files (no ``<stem>.owner.json``).
    """
    path = Path(directory)
    if not path.is_dir():
        raise InvalidInputError(
            f"{path} is not a directory; pass the spill directory of a BackgroundSink "
            "(its spill_dir, e.g. the folder of DeliveryReport.spill_path)"
        )
    sweep(path)
    owners = find_owners(path)
    if not owners and all(_left_after_delivery(p) for p in path.iterdir()):
        return []  # empty, or only the set-aside entries a delivery keeps: nothing to send
    if not owners:
        loose = sorted(p.name for p in path.glob("*.jsonl"))
        hint = (
            f" ({len(loose)} .jsonl files without an owner file: read them with "
            "gradewire.sinks.read_spill)"
            if loose
            else ""
        )
        raise InvalidInputError(
            f"{path} holds no gradewire spill files (<name>.owner.json beside "
            f"<name>.part-*.jsonl){hint}; pass the spill_dir of a BackgroundSink"
        )
    runs: list[SpillRun] = []
    for owner in owners:
        probe_owner(owner)
        run = next((r for r in runs if same_run(r.target, owner.state.target)), None)
        if run is None:
            run = SpillRun(owner.state.target)
            runs.append(run)
        if owner.live:
            run.live.append(owner)
            continue
        run.owners.append(owner)
        _pending(owner, run)
    return runs


def _left_after_delivery(path: Path) -> bool:
    """Whether ``path`` is what a spill directory keeps once all is delivered."""
    return path.is_file() and path.name.endswith(".rejected.jsonl")


def sync_spill(
    directory: str | Path,
    *,
    factories: Mapping[str, SinkFactory] | None = None,
    overrides: Mapping[str, str] | None = None,
    timeout: float | None = None,
    dry_run: bool = False,
    trust_targets: bool = False,
) -> list[SyncResult]:
    """Deliver what a spill directory holds to its trackers, run by run.

    Args:
        directory: The spill directory.
        factories: Sink factories by target kind (default: `spill_target_factories`).
        overrides: Passed to every factory as keywords, e.g. ``{"run_id": ...}`` to
            deliver into another run.
        timeout: Seconds to wait for each run's delivery (None: as long as it takes).
        dry_run: Only scan: nothing is sent, nothing is changed.
        trust_targets: Deliver also to destinations only the spill files name (with this
            environment's credentials). False: such a run is skipped, and says how to
            name its destination.

    Returns:
        One result per run found; ``report`` is None for a run that was skipped (held by
        a live process, no factory for its kind, a destination the user did not name, or
        a dry run).

    Raises:
        InvalidInputError: As `scan_spill`, or ``overrides`` name a run while the
            directory holds several.
    """
    runs = scan_spill(directory)
    pending = [run for run in runs if run.owners]
    if overrides and len(pending) > 1:
        names = "; ".join(run.name for run in pending)
        raise InvalidInputError(
            f"{directory} holds the spill files of {len(pending)} runs ({names}); a target "
            "given by hand applies to one: move the files of one run to a folder of their own"
        )
    found = spill_target_factories() if factories is None else dict(factories)
    results: list[SyncResult] = []
    for run in runs:
        factory = found.get(run.kind)
        where, unnamed = _destination(factory, run, overrides or {})
        if dry_run:
            skipped = "dry run" if unnamed is None or trust_targets else f"dry run; {unnamed}"
            results.append(SyncResult(run, skipped=skipped, destination=where))
        elif not run.owners:
            results.append(SyncResult(run, skipped="held by a live process", destination=where))
        elif factory is None:
            results.append(SyncResult(run, skipped=_no_factory(run.kind, found)))
        elif unnamed is not None and not trust_targets:
            results.append(SyncResult(run, skipped=unnamed, destination=where))
        else:
            result = _sync_run(Path(directory), run, factory, overrides or {}, timeout)
            results.append(SyncResult(result.run, result.report, result.skipped, where))
    return results


def _destination(
    factory: SinkFactory | None, run: SpillRun, overrides: Mapping[str, str]
) -> Destination:
    """Where ``run`` would go, and why the user has not named it (None: they have)."""
    describe = getattr(factory, "destination", None)
    if describe is None:
        return (None, None)
    try:
        where, unnamed = describe(run.target or {}, **overrides)
    except GradewireError as exc:
        return (None, str(exc))
    return str(where), None if unnamed is None else str(unnamed)


def _no_factory(kind: str, found: Mapping[str, SinkFactory]) -> str:
    if kind in ("mlflow", "wandb"):
        package = f"gradewire_{kind}"
        return str(MissingDependencyError(package, extra=kind, purpose=f"deliver to {kind}"))
    known = ", ".join(sorted(found)) or "none installed"
    return f"no installed integration delivers to {kind!r} targets ({known})"


def _sync_run(
    directory: Path,
    run: SpillRun,
    factory: SinkFactory,
    overrides: Mapping[str, str],
    timeout: float | None,
) -> SyncResult:
    taken = [owner for owner in run.owners if take_owner(owner)]
    if not taken:
        return SyncResult(run, skipped="taken meanwhile by a live process")
    try:
        sink = factory(run.target or {}, closed=run.closed, **overrides)
    except GradewireError as exc:
        for owner in taken:
            if owner.lock is not None:
                owner.lock.release(remove=False)
        return SyncResult(run, skipped=str(exc))
    background = BackgroundSink(
        sink,
        spill_dir=directory,
        exit_timeout=None,
        close_timeout=10.0,
        deliver_after_close=False,  # what is not delivered in time stays for the next sync
        _adopt=taken,
    )
    background.flush(timeout)
    try:
        background.close(timeout=0)
    except GradewireError as exc:
        logger.error("closing the sink for %s failed: %s", run.name, exc)
    report = background.report
    assert report is not None
    return SyncResult(run, report=report)
