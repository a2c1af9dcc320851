"""MlflowSink: grader logs to an MLflow run, in batches, through `mlflow.MlflowClient`."""

from __future__ import annotations

import importlib.util
import logging
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from gradewire import Histogram, InvalidInputError, InvalidTypeError, MissingDependencyError, Table
from gradewire.core import LogValue
from gradewire.sinks import BaseSink, StepLogs, TablePolicy
from gradewire_mlflow._errors import mlflow_errors
from gradewire_mlflow._keys import KeyCleaner
from gradewire_mlflow._params import ConfigBook
from gradewire_mlflow._run import RunTarget
from gradewire_mlflow._tables import TableState, html_page
from gradewire_mlflow._writer import Writer

__all__ = ["DEFAULT_TABLE_POLICY", "MlflowSink"]

logger = logging.getLogger("gradewire")

DEFAULT_TABLE_POLICY = TablePolicy()
"""The policy an `MlflowSink` applies unless told otherwise: 100 rows, 2000-char cells."""

_PURPOSE = "log grader output to MLflow"

# log_many_at passes each step's time through BaseSink.log_many (its checks, its table
# policy) as one more number under this key, which no metric name can be (MLflow refuses
# NUL), so that it reaches _write_many with exactly the steps whose metrics survive.
_LOGGED_AT = "\x00gradewire.logged_at"


def _as_float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an int beyond float range
        return math.inf if value > 0 else -math.inf


class MlflowSink(BaseSink):
    r"""Log grader output to an MLflow run: numbers as metrics, tables as files, config as params.

    **Run.** The sink logs to, in order: ``run_id`` if given; else the active MLflow run of
    the thread that creates the sink (``mlflow.active_run()``, read in ``__init__``, since
    MLflow's active run is per thread); else a run it starts itself on the first write, in
    ``experiment_name`` (created if missing, with ``artifact_location``), else the
    experiment named by ``MLFLOW_EXPERIMENT_NAME`` / ``MLFLOW_EXPERIMENT_ID``, else the one
    set with ``mlflow.set_experiment``, else MLflow's Default. `close()` ends the run
    (FINISHED, or FAILED when leaving a ``with`` block on an exception) only if the sink
    started it. Every write goes through one `mlflow.MlflowClient` with an explicit run id;
    no global MLflow state is changed.

    **Tracking URI.** ``tracking_uri``; else, when reusing the active run, the URI it lives
    at (``mlflow.get_tracking_uri()``); else ``MLFLOW_TRACKING_URI`` or a URI set with
    ``mlflow.set_tracking_uri``; else MLflow's own default, made absolute when the sink is
    created: ``sqlite:///<current dir>/mlflow.db``. An experiment the sink creates on a sqlite
    store keeps its artifacts beside the database (``<db folder>/mlartifacts``) unless
    ``artifact_location`` says otherwise.

    **Numbers** go out with ``MlflowClient.log_batch`` in requests of at most 1,000 metrics
    (and ~900 kB), several steps per request through `log_many` (which is what makes
    `gradewire.BackgroundSink` cheap). Each step gets one timestamp (ms), the time the sink
    first saw it, kept when a write is retried: MLflow's SQL stores drop a point equal in
    key, step, value and timestamp, so a retried batch never doubles a point. (So logging
    the very same value under the same key and step twice stores one point.) NaN is
    stored as NaN; MLflow's SQL stores keep +inf and -inf as +/-1.7976931348623157e308.

    **Keys** that MLflow would refuse are cleaned: characters outside ``[/\w.\- :]``
    become ``_``; empty, ``.`` and ``..`` path segments and a leading ``..`` go; a key
    over 250 characters is cut and ends with ``-`` and 8 hex digits of its hash. A
    WARNING says so the first time a key changes, and two keys never end up as one: the
    later one gets a hash suffix, with a WARNING.

    **Tables**, for key ``k`` at step ``s``, after the table policy:

    - an HTML page, ``tables/<k>/step_<s:08d>.html`` (``-2``, ``-3``... for a second table
      at the same step), every cell HTML-escaped;
    - rows appended to one JSON table per key, ``tables/<k>/rows.json``, in the split
      format ``mlflow.log_table`` writes (``mlflow.load_table`` reads it), with the step in
      a first column ``step`` (a table's own ``step`` column becomes ``step_``). The rows
      are kept in memory and the file is written whole, never downloaded: on every table
      step up to 1 MiB, then whenever it has grown by 1/8, and at `close()`, so the bytes
      uploaded stay within ~9x the file. After ``table_rows_per_file`` rows a key continues
      in ``rows-0002.json``, ``rows-0003.json``..., which bounds memory and upload size.
      Each file is listed once in the run's ``mlflow.loggedArtifacts`` tag (as
      ``log_table`` does; that tag holds about a hundred files, so keep table keys few).

    **Histograms** become tables of their bins (``bin_start``, ``bin_end``, ``count``),
    appended to ``tables/<k>/rows.json`` with the step like any table, without HTML pages.

    **Alerts** (`alert`, which `RewardLogger` calls for reward-health alerts) become run
    tags, keys cleaned as metric keys are; MLflow has no alerts of its own.

    **Config** becomes params (nested mappings flattened with ``/``, values ``str()``-ed,
    100 per request). A value over 6,000 characters is cut, with a WARNING, and kept whole
    in ``params/<key>.txt``. MLflow params cannot change: a key logged again with another
    value keeps its first value as the param, and the new one goes to the tag
    ``gradewire.param/<key>`` (the latest wins), with a WARNING.

    **Errors.** A failed request raises `SinkError` (`InvalidInputError` when MLflow
    refuses the data as invalid) and changes nothing in the sink, so the same call can be
    repeated: wrap the sink in `gradewire.BackgroundSink` to retry in the background while
    training goes on. MLflow's HTTP client retries a dead server on its own first (7 times,
    about four minutes, by default), and MLflow 3.17 offers no per-client setting for it
    (``MLFLOW_HTTP_REQUEST_*`` are read from the process environment at every call); the
    BackgroundSink does not wait for it: a call that has not returned after its
    ``stall_timeout`` (5 s) counts as an outage, and the steps in memory go to disk
    meanwhile, whatever the environment says. ``MLFLOW_HTTP_REQUEST_MAX_RETRIES=1`` (its
    one retry is immediate and replaces a dropped keep-alive connection) and a shorter
    ``MLFLOW_HTTP_REQUEST_TIMEOUT`` still help: the sink then notices the server is back,
    and `close()` during an outage returns, within seconds instead of minutes.

    **Outages, kills and restarts** (behind `gradewire.BackgroundSink`). The BackgroundSink
    sends each step with the time it was logged (`log_many_at`): that time is the metrics'
    timestamp, so a step sent again, by this process or another, is a point MLflow's SQL
    stores already hold, and is not stored twice. `delivery_target` names the run, so the
    next BackgroundSink of the same run (``run_id=`` that run, same tracking URI) delivers
    first what a killed process left in the spill directory, and ``gradewire sync`` does it
    by hand. Logging tables to a run the sink did not start goes on from the JSON tables
    already in it (rows of a step sent again are not added twice). A close while MLflow is
    down ends the run once the steps before it are delivered, with the status it would have
    had and the time of the close (`replay_close`).

    Example:
        >>> from gradewire import BackgroundSink  # doctest: +SKIP
        >>> sink = BackgroundSink(MlflowSink(experiment_name="rl"))  # doctest: +SKIP
        >>> sink.log(grader.get_logs(clear=True), step=10)  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        tracking_uri: str | None = None,
        experiment_name: str | None = None,
        run_name: str | None = None,
        run_id: str | None = None,
        tags: Mapping[str, str] | None = None,
        artifact_location: str | None = None,
        table_rows_per_file: int = 10_000,
        table_policy: TablePolicy | None = DEFAULT_TABLE_POLICY,
        all_ranks: bool = False,
    ) -> None:
        """Set up the sink; nothing is sent before the first write.

        Args:
            tracking_uri: Where to log (see the class docs for the default).
            experiment_name: Experiment of a run the sink starts (created if missing).
            run_name: Name of a run the sink starts.
            run_id: Log to this existing run (it is never ended by the sink).
            tags: Tags set on the run logged to.
            artifact_location: Artifact root of an experiment the sink creates (on sqlite,
                default: `mlartifacts` beside the database).
            table_rows_per_file: Rows per JSON table file before a key continues in the next.
            table_policy: Applied to tables before sending; None sends them as they are.
            all_ranks: Log from every process, not only rank 0.

        Raises:
            InvalidTypeError: An argument has the wrong type.
            InvalidInputError: ``run_id`` is given with ``experiment_name`` or ``run_name``,
                or ``table_rows_per_file`` is below 1.
            MissingDependencyError: MLflow is not installed.
        """
        super().__init__(table_policy=table_policy, all_ranks=all_ranks)
        if importlib.util.find_spec("mlflow") is None:
            raise MissingDependencyError("mlflow", extra="mlflow", purpose=_PURPOSE)
        if isinstance(table_rows_per_file, bool) or not isinstance(table_rows_per_file, int):
            raise InvalidTypeError(
                f"table_rows_per_file must be an int, not {type(table_rows_per_file).__name__}"
            )
        if table_rows_per_file < 1:
            raise InvalidInputError(
                f"table_rows_per_file must be at least 1, not {table_rows_per_file}"
            )
        self._target = RunTarget(
            tracking_uri=tracking_uri,
            experiment_name=experiment_name,
            run_name=run_name,
            run_id=run_id,
            tags=tags,
            artifact_location=artifact_location,
            active=self.active,
        )
        self._rows_per_file = table_rows_per_file
        self._end_status = "FINISHED"
        self._ended = False  # replay_close ended the run: close() leaves it
        self._writer: Writer | None = None
        self._metric_keys = KeyCleaner("metric")
        self._table_keys = KeyCleaner("table", allow_colon=False)
        self._tag_keys = KeyCleaner("tag")
        self._config = ConfigBook()
        self._tables: dict[str, TableState] = {}
        self._warned: set[tuple[str, str]] = set()
        self._timestamps: dict[int, int] = {}

    @property
    def tracking_uri(self) -> str:
        """The tracking URI the sink logs to."""
        return self._target.tracking_uri

    @property
    def run_id(self) -> str | None:
        """The id of the run logged to (None until the first write, unless one was given)."""
        return self._target.run_id

    @property
    def experiment_id(self) -> str | None:
        """The experiment of the run, known after the first write."""
        return self._target.experiment_id

    @property
    def owns_run(self) -> bool:
        """Whether the sink started its run (and so ends it on `close`)."""
        return self._target.owns_run

    # -- outages: what a BackgroundSink needs to deliver again -----------------------------

    def delivery_target(self) -> dict[str, Any]:
        """Where this sink delivers, kept by `gradewire.BackgroundSink` with its spill files.

        ``{"kind": "mlflow", "run": {"tracking_uri": ..., "run_id": ...}, ...}``; ``run``
        is None until the run exists (a run the sink starts on its first write), and then
        ``new_run`` says how to start it. ``ends_run``: the status `close` ends the run
        with, when the sink starts the run.
        """
        return self._target.spill_target(self._end_status)

    late_steps = True  # MLflow keeps every step, whatever came before it

    def log_late_at(self, entries: Sequence[StepLogs], times: Sequence[float]) -> None:
        """`log_late`, with the time each step was logged, as `log_many_at`."""
        self.log_late(self._stamped(entries, times))

    def log_many_at(self, entries: Sequence[StepLogs], times: Sequence[float]) -> None:
        """`log_many`, with the time each step was logged (Unix seconds) as its timestamp.

        A step logged with the same time again (a retry, or a replay by another process)
        is a point MLflow's SQL stores already hold: it is not stored twice.

        Raises:
            InvalidInputError: ``times`` is not one finite time per entry, or as `log_many`.
            InvalidTypeError: As `log_many`.
            SinkError: As `log_many`.
        """
        self.log_many(self._stamped(entries, times))

    @staticmethod
    def _stamped(entries: Sequence[StepLogs], times: Sequence[float]) -> Sequence[StepLogs]:
        """Each entry's logs with its time (milliseconds) under `_LOGGED_AT`.

        Entries that are not ``(step, mapping)`` pairs come back as they are, for
        `log_many`'s checks to name.
        """
        if len(times) != len(entries):
            raise InvalidInputError(f"{len(times)} times for {len(entries)} entries")
        stamped: list[StepLogs] = []
        for i, (entry, at) in enumerate(zip(entries, times, strict=True)):
            if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at):
                raise InvalidInputError(f"times[{i}] must be a finite Unix time, not {at!r}")
            if not isinstance(entry, tuple | list) or len(entry) != 2:
                return entries
            step, logs = entry
            if not isinstance(logs, Mapping):
                return entries
            stamped.append((step, {**logs, _LOGGED_AT: int(at * 1000)}))
        return stamped

    def replay_close(self, target: Mapping[str, Any] | None, closed_at: float) -> None:
        """Do what the ``close()`` of the sink that delivered to ``target`` would have done.

        `gradewire.BackgroundSink` calls it once the steps logged before a close are
        delivered, before it calls `close`: for this sink's own close, or for that of a
        sink in a process that ended (``target`` is that sink's `delivery_target`). The
        JSON table rows not written yet are written; then, if that sink started its run
        (``ends_run``), the run the steps went to (this sink's) is ended with that status
        and the time of the close (``closed_at``, Unix seconds; a close deferred by an
        outage is long past), unless it is no longer RUNNING.

        Raises:
            SinkError: MLflow could not be reached; nothing is ended, so it can be repeated.
        """
        status = None if target is None else target.get("ends_run")
        if target is None and self._target.owns_run:
            status = self._end_status
        with self._lock:
            self._replay_close(status, closed_at)

    def _replay_close(self, status: object, closed_at: float) -> None:
        if self._writer is None and (status is None or self.run_id is None):
            return  # nothing written to a run yet: none to touch, none to start
        writer = self._connect()
        with mlflow_errors(self.tracking_uri, "write the JSON tables"):
            self._upload_tables(writer, self._unsent_tables())
        for state in self._tables.values():
            state.mark_uploaded()
        if status not in ("FINISHED", "FAILED", "KILLED"):
            return
        with mlflow_errors(self.tracking_uri, f"end the run as {status}"):
            if writer.status() == "RUNNING":
                writer.end(str(status), end_time=int(closed_at * 1000))
        self._ended = True

    # -- connecting ------------------------------------------------------------------------

    def _connect(self) -> Writer:
        """The writer for the run, starting or finding the run on the first call."""
        if self._writer is None:
            with mlflow_errors(self.tracking_uri, "start or find the run"):
                self._writer = self._target.connect()
            self._config.known.update(self._target.params)
        return self._writer

    # -- writing ---------------------------------------------------------------------------

    def _write(self, logs: dict[str, LogValue], step: int) -> None:
        self._write_many([(step, logs)])

    def _write_many(self, entries: list[tuple[int, dict[str, LogValue]]]) -> None:
        writer = self._connect()
        now = int(time.time() * 1000)
        metrics: list[tuple[str, float, int, int]] = []
        pages: list[tuple[str, str]] = []
        changed = self._tables_in_run(writer, entries)
        uploads: list[tuple[str, str]] = []
        for step, stamped in entries:
            logs = {key: value for key, value in stamped.items() if key != _LOGGED_AT}
            at = stamped.get(_LOGGED_AT)
            timestamp = at if isinstance(at, int) else self._timestamps.setdefault(step, now)
            for raw, value in logs.items():
                # A histogram is a small table of its bins: rows in the key's JSON table
                # only (an HTML page per step and histogram would crowd the artifacts).
                page = not isinstance(value, Histogram)
                if isinstance(value, Histogram):
                    value = value.to_table()
                if not isinstance(value, Table):
                    metrics.append((self._metric_keys(raw), _as_float(value), timestamp, step))
                    continue
                key = self._table_keys(raw)
                state = changed.get(key)
                if state is None:
                    state = changed[key] = self._tables.get(key, TableState(key)).clone()
                if page:
                    pages.append((state.next_page(step), html_page(value)))
                if state.add(value, step):
                    self._warn_once(
                        ("step column", key),
                        "table %r has a column named like the step column; in the JSON table "
                        "it is stored with one more '_' (e.g. 'step_')",
                        raw,
                    )
                while len(state.rows) > self._rows_per_file:
                    path = state.path
                    uploads.append((path, state.seal(self._rows_per_file)))
        for state in changed.values():
            if state.due():
                uploads.append((state.path, state.render()))
                state.mark_uploaded()
        with mlflow_errors(
            self.tracking_uri, f"log {len(entries)} step(s) ending at step {entries[-1][0]}"
        ):
            writer.send_metrics(metrics)
            for path, text in pages:
                writer.upload(path, text)
            self._upload_tables(writer, uploads)
        self._tables.update(changed)
        last = entries[-1][0]
        self._timestamps = {s: t for s, t in self._timestamps.items() if s >= last}

    def _tables_in_run(
        self, writer: Writer, entries: list[tuple[int, dict[str, LogValue]]]
    ) -> dict[str, TableState]:
        """The JSON tables an earlier process left in a run this sink did not start.

        For each table key of ``entries`` the sink has not written yet: its last part, to
        go on from (so that writing the file whole keeps the rows already in it).
        """
        if self._target.owns_run:
            return {}
        keys = {
            self._table_keys(raw)
            for _, logs in entries
            for raw, value in logs.items()
            if isinstance(value, Table | Histogram)
        }
        found: dict[str, TableState] = {}
        for key in sorted(keys - self._tables.keys()):
            with mlflow_errors(self.tracking_uri, f"read the JSON table of {key!r}"):
                part = writer.read_table(key)
            if part is None:
                continue
            try:
                found[key] = TableState.from_file(key, *part)
            except ValueError as exc:
                raise InvalidInputError(
                    f"run {writer.run_id} holds tables/{key}/ files that this sink cannot go "
                    f"on from ({exc}); log the table under another key"
                ) from None
        return found

    def _unsent_tables(self) -> list[tuple[str, str]]:
        return [
            (state.path, state.render()) for state in self._tables.values() if state.unsent_rows
        ]

    def _upload_tables(self, writer: Writer, uploads: list[tuple[str, str]]) -> None:
        for path, text in uploads:
            writer.upload(path, text)
        full = writer.list_tables([path for path, _ in uploads])
        if full:
            self._warn_once(
                ("tag", "full"),
                "the run's mlflow.loggedArtifacts tag is full, so mlflow.load_table will not "
                "find %s (the files are there); log fewer table keys",
                ", ".join(full),
            )

    def _write_config(self, config: dict[str, Any]) -> None:
        writer = self._connect()
        plan = self._config.plan(config)
        with mlflow_errors(
            self.tracking_uri, f"log {len(plan.params)} param(s) and {len(plan.tags)} tag(s)"
        ):
            writer.send_params(plan.params)
            writer.send_tags(plan.tags)
            for path, text in plan.files:
                writer.upload(path, text)
        self._config.commit(plan)

    def _write_alert(self, title: str, text: str, tags: dict[str, str]) -> None:
        # MLflow has run tags and no alerts: the tags carry the alert (RewardLogger puts
        # its sentence in the tag's value), and the run list filters on them.
        writer = self._connect()
        cleaned = {self._tag_keys(key): value for key, value in tags.items()}
        with mlflow_errors(self.tracking_uri, f"set {len(cleaned)} tag(s) for {title!r}"):
            writer.send_tags(cleaned)

    def _close(self) -> None:
        writer = self._writer
        if writer is None:
            return  # nothing was ever written: no run was started or touched
        try:
            with mlflow_errors(self.tracking_uri, "write the JSON tables"):
                self._upload_tables(writer, self._unsent_tables())
            for state in self._tables.values():
                state.mark_uploaded()
        finally:
            if self._target.owns_run and not self._ended:
                with mlflow_errors(self.tracking_uri, f"end the run as {self._end_status}"):
                    writer.end(self._end_status)

    def __exit__(self, *exc_info: object) -> None:
        if exc_info and exc_info[0] is not None:
            self._end_status = "FAILED"
        self.close()

    def _warn_once(self, once: tuple[str, str], message: str, *args: object) -> None:
        if once not in self._warned:
            self._warned.add(once)
            logger.warning(message, *args)

    def __repr__(self) -> str:
        return f"MlflowSink(tracking_uri={self.tracking_uri!r}, run_id={self.run_id!r})"
