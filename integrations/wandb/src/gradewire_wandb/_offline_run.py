"""`read_offline_run`: what an offline W&B run logged, read back as Python values.

Notebook users and tests check what they logged the same way: history rows, summary,
config, and the tables, histograms and HTML pages the rows point to.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradewire import Histogram, MissingDependencyError, Table
from gradewire.core import LogValue
from gradewire_wandb._run_records import (
    IncompleteRunError,
    OfflineRunError,
    RunRecords,
    read_records,
    run_file,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["OfflineRun", "read_offline_run"]

# wandb's JSON view of a record writes the non-finite floats as these strings.
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_TABLE_TYPES = frozenset({"table-file", "incremental-table-file"})
_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class OfflineRun:
    """What one W&B run logged, as its run file and media files hold it.

    Values are JSON values as W&B stored them (numbers, strings, lists, dicts); a media
    value (a table, histogram, HTML page...) is W&B's reference dict, such as
    ``{"_type": "table-file", "path": "media/table/...", ...}``: `tables`, `histograms`
    and `html` load them, `table` and `media_file` load one. Numbers come back as wandb's
    JSON view writes them: NaN and ±inf as floats, a float with no fraction as an int
    (equal as a number); `steps` gives every number as a float.

    Attributes:
        path: The run folder (``.../wandb/offline-run-<time>-<id>``).
        file: The run's ``run-<id>.wandb`` file.
        run_id: W&B's id of the run.
        project: The project given to ``wandb.init`` (empty if none).
        history: One dict per ``run.log`` row, in order, with W&B's ``_step``,
            ``_runtime`` and ``_timestamp``.
        summary: The summary as the run left it (the last value of each key, and
            whatever was set on ``run.summary``).
        config: The config given to ``wandb.init`` and every later update (without W&B's
            own ``_wandb`` entry).
        step_metrics: The x axis set by ``run.define_metric(name_or_glob,
            step_metric=...)``, by name or glob.
        exit_code: The run's exit code; None if it has not finished.
        problems: What wandb's reader said of a cut or damaged file (read with
            ``partial=True``); empty for a sound file.
        tags: The run's tags (labels), as last set.
        alerts: The alerts raised on the run (``run.alert``), in order, each a dict
            with ``title``, ``text`` and ``level``.
    """

    path: Path
    file: Path
    run_id: str
    project: str
    history: tuple[Mapping[str, Any], ...] = field(repr=False)
    summary: Mapping[str, Any] = field(repr=False)
    config: Mapping[str, Any] = field(repr=False)
    step_metrics: Mapping[str, str] = field(repr=False)
    exit_code: int | None
    problems: tuple[str, ...]
    tags: tuple[str, ...] = ()
    alerts: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)

    @property
    def finished(self) -> bool:
        """Whether the run file holds the run's exit record."""
        return self.exit_code is not None

    @property
    def complete(self) -> bool:
        """Whether the run finished and wandb read every record of its file."""
        return self.finished and not self.problems

    def x_axis(self, key: str) -> str:
        """The metric W&B draws ``key`` against: its ``define_metric`` step, or ``_step``."""
        if key in self.step_metrics:
            return self.step_metrics[key]
        for glob, axis in self.step_metrics.items():
            if "*" in glob and fnmatchcase(key, glob):
                return axis
        return "_step"

    def media_file(self, value: Mapping[str, Any]) -> Path:
        """The file a media value of a row or of the summary (``{"path": ...}``) points to.

        Raises:
            OfflineRunError: The value names no file, or one outside the run folder.
        """
        name = value.get("path") if isinstance(value, Mapping) else None
        if not isinstance(name, str):
            raise OfflineRunError(f"{value!r} is not a W&B media value (it names no file)")
        files = (self.path / "files").resolve()
        target = (files / name).resolve()
        if not target.is_relative_to(files):
            raise OfflineRunError(f"the media path {name!r} of {self.path} leaves the run folder")
        if not target.is_file():
            raise OfflineRunError(
                f"{target} is missing: the run folder lost its media files (copy the whole "
                "offline-run folder, files/ included)"
            )
        return target

    def table(self, value: Mapping[str, Any]) -> Table:
        """The `Table` a table value of a row or of the summary points to.

        Raises:
            OfflineRunError: The value is not a table, or its file is missing or damaged.
        """
        if value.get("_type") not in _TABLE_TYPES:
            raise OfflineRunError(f"{value!r} is not a W&B table value")
        file = self.media_file(value)
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
            return Table.from_dict({"columns": data["columns"], "data": data["data"]})
        except (ValueError, KeyError, TypeError) as exc:
            raise OfflineRunError(f"{file} is not a W&B table file ({exc})") from exc

    @cached_property
    def tables(self) -> Mapping[str, Mapping[int, Table]]:
        """Every table logged, by key, then by ``_step``.

        An incremental table (``log_mode="INCREMENTAL"``) holds at each step the rows
        that step added.
        """
        return self._media(_TABLE_TYPES, self.table)

    @cached_property
    def histograms(self) -> Mapping[str, Mapping[int, Histogram]]:
        """Every histogram logged, by key, then by the step of the key's x axis.

        The step is the row's value of `x_axis` (the ``define_metric`` step, such as the
        HF trainer's ``train/global_step`` that `GradewireCallback` and a `WandbSink` with
        ``step_metric=`` log by), as the key's other figures are drawn; W&B's own
        ``_step`` only for a key with no such axis, or a row that lacks it.
        """
        return self._media(
            {"histogram"},
            lambda value: Histogram(tuple(value["bins"]), tuple(value["values"])),
            on_axis=True,
        )

    @cached_property
    def html(self) -> Mapping[str, Mapping[int, str]]:
        """Every HTML page logged (``wandb.Html``), as text, by key, then by ``_step``."""
        return self._media(
            {"html-file"}, lambda value: self.media_file(value).read_text(encoding="utf-8")
        )

    def steps(self, step_metric: str = "_step") -> list[tuple[int, dict[str, LogValue]]]:
        """The rows as gradewire logs them: ``(step, {key: float | Table | Histogram})``.

        What a grader's ``get_logs()`` gave a sink comes back in this shape, so a test or
        a notebook compares the two directly. HTML pages are in `html`; other values
        (text, lists, other media) only in `history`.

        Args:
            step_metric: The metric that numbers the steps: ``"_step"`` (W&B's), or the
                ``step_metric=`` a `WandbSink` logged with. Rows without it (another
                writer's, in a shared run) are left out.
        """
        out: list[tuple[int, dict[str, LogValue]]] = []
        for row in self.history:
            if step_metric not in row:
                continue
            logs: dict[str, LogValue] = {}
            for key, value in row.items():
                if key.startswith("_") or key == step_metric:
                    continue
                if isinstance(value, bool) or not isinstance(value, int | float | Mapping):
                    continue
                if not isinstance(value, Mapping):
                    logs[key] = float(value)
                elif value.get("_type") in _TABLE_TYPES:
                    logs[key] = self.tables[key][int(row["_step"])]
                elif value.get("_type") == "histogram":
                    logs[key] = self.histograms[key][self._axis_step(row, key)]
            out.append((int(row[step_metric]), logs))
        return out

    def to_pandas(self) -> pd.DataFrame:
        """The history as a DataFrame, one row per history row (needs pandas).

        Media values are left out: `tables`, `histograms` and `html` hold them.
        """
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingDependencyError(
                "pandas", extra="pandas", purpose="read W&B history as a DataFrame"
            ) from exc
        rows = [{k: v for k, v in row.items() if not _is_media(v)} for row in self.history]
        frame: pd.DataFrame = pd.DataFrame(rows)
        return frame

    def _axis_step(self, row: Mapping[str, Any], key: str) -> int:
        """The row's step on ``key``'s x axis (``_step`` when the row does not hold it)."""
        step = row.get(self.x_axis(key))
        if isinstance(step, bool) or not isinstance(step, int | float) or not math.isfinite(step):
            step = row["_step"]
        return int(step)

    def _media(
        self, types: Iterable[str], load: Any, *, on_axis: bool = False
    ) -> Mapping[str, Mapping[int, Any]]:
        kinds = frozenset(types)
        out: dict[str, dict[int, Any]] = {}
        for row in self.history:
            for key, value in row.items():
                if isinstance(value, Mapping) and value.get("_type") in kinds:
                    step = self._axis_step(row, key) if on_axis else int(row["_step"])
                    out.setdefault(key, {})[step] = load(value)
        return out


def read_offline_run(path: str | Path, *, partial: bool = False, wait: float = 30.0) -> OfflineRun:
    """Read what an offline W&B run logged: history, summary, config, tables.

    Reads with wandb's own record reader (the ``wandb-core`` program in the wandb
    wheel), so no network and no login are needed; the media files are read from the
    run folder.

    Args:
        path: The ``offline-run-<time>-<id>`` folder, or its ``run-<id>.wandb`` file.
        partial: Read a run that has not finished, or whose file ends in a cut record
            (a run still being written, or killed) or holds damaged records: what wandb
            could read is returned, and `OfflineRun.problems` says what it could not.
        wait: Seconds to wait for a run that has not finished yet (``run.finish()`` may
            return before W&B's service has written the exit record); 0 to not wait.
            With ``partial=True`` the run is read at once.

    Returns:
        The run, read.

    Raises:
        OfflineRunError: ``path`` is not a W&B run folder or run file.
        IncompleteRunError: Without ``partial=True``: the run did not finish within
            ``wait`` seconds, or its file holds damaged records.

    Examples:
        >>> run = read_offline_run("wandb/offline-run-20260101_120000-ab12cd34")  # doctest: +SKIP
        >>> run.history[-1]["rewards/score/mean"], run.config["lr"]  # doctest: +SKIP
        (0.75, 0.1)
    """
    deadline = time.monotonic() + max(wait, 0.0)
    file = _wait_for_file(Path(path), deadline)
    while True:
        found = read_records(file)
        run = _run(file, found)
        if partial or run.complete:
            return run
        if not found.torn_only or time.monotonic() >= deadline:
            raise IncompleteRunError(_incomplete(run, damaged=not found.torn_only))
        time.sleep(_POLL_SECONDS)


def _wait_for_file(path: Path, deadline: float) -> Path:
    """The run file; W&B's service may create it after ``run.finish()`` has returned."""
    while True:
        try:
            return run_file(path)
        except OfflineRunError:
            starting = path.is_dir() and path.name.startswith(("offline-run-", "run-"))
            if not starting or time.monotonic() >= deadline:
                raise
        time.sleep(_POLL_SECONDS)


def _incomplete(run: OfflineRun, *, damaged: bool) -> str:
    if damaged:
        return (
            f"{run.file} holds damaged records: wandb says {'; '.join(run.problems)!r}, so "
            "some rows are missing. Pass partial=True to read what wandb could recover "
            "(OfflineRun.problems says what was skipped)"
        )
    return (
        f"the run in {run.path} has not finished (its file has no exit record"
        f"{', and ends in a cut record' if run.problems else ''}): it is still running, or "
        "its process was killed. Wait for run.finish(), or pass partial=True to read what "
        "it has written so far"
    )


def _run(file: Path, found: RunRecords) -> OfflineRun:
    history: list[Mapping[str, Any]] = []
    summary: dict[str, Any] = {}
    config: dict[str, Any] = {}
    step_metrics: dict[str, str] = {}
    run_id = project = ""
    exit_code: int | None = None
    tags: tuple[str, ...] = ()
    alerts: list[Mapping[str, Any]] = []
    for record in found.records:
        kind = record.get("type")
        body = record.get(kind, {}) if isinstance(kind, str) else {}
        if kind == "run":
            run_id, project = str(body.get("run_id", "")), str(body.get("project", ""))
            config.update(body.get("config", {}).get("update", {}))
            if "tags" in body:
                tags = tuple(str(tag) for tag in body["tags"])
        elif kind == "alert":
            alerts.append(dict(body))
        elif kind == "config":
            config.update(body.get("update", {}))
            _remove(config, body.get("remove", ()))
        elif kind == "history":
            history.append(_values(body.get("item", {})))
        elif kind == "summary":
            summary.update(_values(body.get("update", {})))
            _remove(summary, body.get("remove", ()))
        elif kind == "metric" and body.get("step_metric"):
            step_metrics[body.get("name") or body.get("glob_name", "")] = body["step_metric"]
        elif kind == "exit":
            exit_code = int(body.get("exit_code", 0))
    config.pop("_wandb", None)
    for key in [key for key in summary if key == "_wandb" or key.startswith("_wandb.")]:
        del summary[key]  # W&B's own bookkeeping, which its app does not show either
    return OfflineRun(
        path=file.parent,
        file=file,
        run_id=run_id,
        project=project,
        history=tuple(history),
        summary=summary,
        config=config,
        step_metrics=step_metrics,
        exit_code=exit_code,
        problems=found.problems,
        tags=tags,
        alerts=tuple(alerts),
    )


def _values(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Logged values from wandb's JSON view, which flattens a media value's fields.

    A media value ``h`` comes as ``h._type``, ``h.path``, ...: those become one dict again.
    """
    out = {key: _number(value) for key, value in flat.items()}
    media = sorted((key[: -len("._type")] for key in flat if key.endswith("._type")), key=len)
    for prefix in reversed(media):  # the longest first, so a media value inside one stays whole
        start = prefix + "."
        inside = [key for key in out if key.startswith(start)]
        out[prefix] = {key[len(start) :]: out.pop(key) for key in inside}
    return out


def _number(value: Any) -> Any:
    if isinstance(value, str):
        return _NON_FINITE.get(value, value)
    if isinstance(value, list):
        return [_number(item) for item in value]
    return value


def _remove(values: dict[str, Any], removed: Iterable[Mapping[str, Any]]) -> None:
    for item in removed:
        key = item.get("key") or ".".join(item.get("nested_key", ()))
        values.pop(key, None)


def _is_media(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("_type"), str)
