"""WandbSink: grader logs as W&B metrics, typed tables and escaped HTML pages."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gradewire import Histogram, InvalidInputError, InvalidTypeError, MissingDependencyError, Table
from gradewire.core import LogValue
from gradewire.sinks import BaseSink, TablePolicy
from gradewire_wandb._incremental import IncrementalTables
from gradewire_wandb._names import checked_name, clean_text, config_key_problem, key_problem
from gradewire_wandb._run_source import PURPOSE, RunSource, call_wandb, update_config
from gradewire_wandb._tables import sample_rows, text_for_mixed_columns, to_wandb_table

if TYPE_CHECKING:
    import wandb

__all__ = ["DEFAULT_TABLE_POLICY", "HTML_SUFFIX", "WandbSink"]

DEFAULT_TABLE_POLICY = TablePolicy()
"""The policy a `WandbSink` applies unless told otherwise: 100 rows, 2000-char cells."""

HTML_SUFFIX = "_html"
"""Appended to a table's key for its HTML page (``html=True``)."""

ALERT_LABEL = "gradewire-alert"
"""The run tag (label) a `WandbSink` adds to a run it raised an alert on."""

# W&B writes these itself in every history row; a logged key of that name would clash.
_RESERVED = frozenset({"_step", "_runtime", "_timestamp", "_wandb"})


class WandbSink(BaseSink):
    """Sends grader logs to a Weights & Biases run.

    The run:
        The sink logs to ``run`` when one is given, else to the active ``wandb.run``,
        else it starts one with ``wandb.init(project=..., name=..., dir=..., mode=...,
        config=..., **init_kwargs)`` on its first write (``mode="offline"`` needs no
        network). `close` calls ``run.finish()`` only on a run the sink started; a run it
        was given or found is left running for its owner to finish. ``wandb`` is imported
        on that first write, not when this package is imported (it takes ~0.5 s). When a
        run already exists, the init arguments are ignored (a warning says so), but
        ``config`` is still added to it.

    Numbers:
        One ``run.log`` per step, keys as given (``judge/score/mean``), so W&B groups
        them in sections by their first part; ``prefix="rewards"`` logs
        ``rewards/judge/score/mean``. NaN and ±inf are passed on as they are: W&B keeps
        them in the run's history (JSON ``NaN``/``Infinity``) and in the summary.

    The x axis:
        By default the sink passes ``step=step``, which is W&B's own step. W&B drops a
        step lower than its current one with only a warning, so the sink raises
        `InvalidInputError` instead when the run (shared with a trainer, say) has moved
        past the step; the same step again adds to that row while it is open. With
        ``step_metric="grader_step"`` the sink calls ``run.define_metric(step_metric)``
        and ``run.define_metric(f"{prefix}/*", step_metric=step_metric)`` (without a
        prefix, one ``define_metric(key, step_metric=...)`` per key as it first
        appears), logs ``{step_metric: step, ...}`` and passes no ``step=``: each call
        ends the open W&B row and adds one at W&B's next internal step, and charts of
        the sink's keys use ``step_metric`` as x axis. That suits a trainer that logs
        without ``step=`` under a step metric of its own (the HF Trainer's W&B callback,
        and so TRL; recent Lightning loggers). Beside a trainer that passes ``step=``
        itself, use the default and log with the trainer's step instead: a trainer
        step logged again after the sink's call would be dropped by W&B.

    Tables:
        Each `Table` becomes a ``wandb.Table`` with one dtype per column (bool, int,
        float or str, from its cells; with the default `TablePolicy` column types are
        fixed per key across steps). A column that still mixes types is logged as text,
        with a warning. A table key logged again at a later step is a new table file
        referenced from that step's history row (W&B's default IMMUTABLE tables), so
        every step's table stays readable; the W&B workspace shows the latest one.
        ``html=True`` also logs ``wandb.Html(table.to_html(), inject=False)`` under
        ``<key>_html``: the escaped HTML byte for byte, with no stylesheet added. With
        ``incremental_tables=True`` each key is instead one ``INCREMENTAL`` W&B table to
        which every step adds its rows, with the step in a first ``step`` column, so all
        steps stay in view in one panel (shown by W&B Server 0.70+ and W&B's cloud).

    Histograms:
        A `Histogram` becomes ``wandb.Histogram(np_histogram=(counts, edges))``: its
        counts over its fixed edges, as given (values outside the edges are not shown).

    Rows:
        The sink applies `DEFAULT_TABLE_POLICY` (100 rows, 2000-char cells) unless given
        another policy. W&B keeps only the first ``wandb.Table.MAX_ROWS`` (10,000) rows of
        a table without a warning; a table longer than that (policy disabled with
        ``table_policy=None``, or a larger ``max_rows``) is sampled down to
        ``MAX_ROWS`` rows the way a `TablePolicy` samples, with a `logging` warning.

    Processes:
        Only rank 0 logs unless ``all_ranks=True``; on other ranks every call is a
        no-op, wandb is not imported and no run is started.

    Outages (behind `gradewire.BackgroundSink`):
        `delivery_target` names the run, so that the next BackgroundSink of the same run
        (the same project and ``init_kwargs={"id": ...}``) delivers first what a killed
        process left in the spill directory (W&B's service died, say), and ``gradewire
        sync`` does it by hand. W&B keeps no time per step to recognise one sent twice:
        a step in a call in doubt at a kill may reach the run twice.

    Alerts:
        `alert` (which `RewardLogger` calls for reward-health alerts) sets each tag as a
        summary field (W&B's run tags are labels without values), adds the label
        ``gradewire-alert`` to the run's tags, and raises a W&B alert (``run.alert``,
        level WARN: an email or Slack message where the W&B account sends them; an
        offline run keeps it for ``wandb sync``).

    `log_many` makes one ``run.log`` per step in order (W&B has no batch call), after
    checking the names of all of them. A name W&B cannot take (a table key with a ``..``
    segment or an absolute start, a NUL in a table key, a lone surrogate in any key) raises
    `InvalidInputError`; the HTML page has lone surrogates as character references.
    Failures of W&B itself are raised as `SinkError`.

    Example:
        >>> sink = WandbSink(  # doctest: +SKIP
        ...     project="rl", prefix="rewards", step_metric="grader_step"
        ... )
        >>> sink.log(grader.get_logs(clear=True), step=trainer_step)  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        run: wandb.Run | None = None,
        project: str | None = None,
        name: str | None = None,
        dir: str | os.PathLike[str] | None = None,
        mode: str | None = None,
        config: Mapping[str, Any] | None = None,
        init_kwargs: Mapping[str, Any] | None = None,
        prefix: str | None = None,
        step_metric: str | None = None,
        html: bool = False,
        incremental_tables: bool = False,
        table_policy: TablePolicy | None = DEFAULT_TABLE_POLICY,
        all_ranks: bool = False,
    ) -> None:
        """Set up the sink; the run is found or started on the first write.

        Args:
            run: The W&B run to log to (default: ``wandb.run``, else a new one).
            project: ``wandb.init`` project, if the sink starts the run.
            name: ``wandb.init`` run name, if the sink starts the run.
            dir: ``wandb.init`` directory, if the sink starts the run.
            mode: ``"online"``, ``"offline"``, ``"disabled"`` or ``"shared"``, if the
                sink starts the run.
            config: Run configuration: passed to ``wandb.init``, or added to an
                existing run.
            init_kwargs: Any other ``wandb.init`` arguments (entity, tags, group, ...).
            prefix: Put every key under this section, e.g. ``"rewards"``.
            step_metric: Log the step as this metric and use it as the x axis of the
                sink's keys, instead of passing ``step=`` (see the class docs).
            html: Also log each table as an escaped HTML page under ``<key>_html``.
            incremental_tables: Add each step's table rows to one growing W&B table per
                key (with a ``step`` column) instead of a new table per step.
            table_policy: Applied before sending; None sends tables as they are (yet
                never longer than ``wandb.Table.MAX_ROWS``).
            all_ranks: Log from every process, not only rank 0.

        Raises:
            InvalidTypeError: An argument has the wrong type.
            InvalidInputError: An argument has an unusable value, or init arguments are
                given together with ``run``.
            MissingDependencyError: wandb is not installed.
        """
        super().__init__(table_policy=table_policy, all_ranks=all_ranks)
        if importlib.util.find_spec("wandb") is None:
            raise MissingDependencyError("wandb", extra="wandb", purpose=PURPOSE)
        if not isinstance(html, bool):
            raise InvalidTypeError(f"html must be True or False, not {html!r}")
        self._source = RunSource(
            run=run,
            explicit={"project": project, "name": name, "dir": dir, "mode": mode},
            config=config,
            init_kwargs=init_kwargs,
        )
        self.prefix = None if prefix is None else checked_name("prefix", prefix)
        self.step_metric = None if step_metric is None else checked_name("step_metric", step_metric)
        if self.step_metric in _RESERVED:
            raise InvalidInputError(f"step_metric={step_metric!r} is a name W&B keeps for itself")
        self.html = html
        if not isinstance(incremental_tables, bool):
            raise InvalidTypeError(
                f"incremental_tables must be True or False, not {incremental_tables!r}"
            )
        self._incremental = IncrementalTables() if incremental_tables else None
        # The oversize fallback ranks rows like the sink's own policy would.
        policy = table_policy if table_policy is not None else DEFAULT_TABLE_POLICY
        self._sort_by = policy.sort_by
        self._axis_defined = False
        self._defined: set[str] = set()
        self._told: set[tuple[str, str]] = set()

    @property
    def run(self) -> wandb.Run | None:
        """The W&B run logged to (None until the first write, or on a non-zero rank)."""
        return self._source.run

    @property
    def started_run(self) -> bool:
        """Whether the sink started its run, and so finishes it on `close`."""
        return self._source.started

    def delivery_target(self) -> dict[str, Any]:
        """Where this sink delivers, kept by `gradewire.BackgroundSink` with its spill files.

        ``{"kind": "wandb", "run": {"project": ..., "id": ...}, ...}``: the next
        BackgroundSink whose sink names the same run (``init_kwargs={"id": ...}`` and the
        same project, or that run given or active) delivers first what a killed process
        left in the spill directory, and ``gradewire sync`` does it by hand. ``run`` is
        None while the run id is unknown (a run the sink starts without an ``id``, before
        its first write). ``init`` (the JSON-able ``wandb.init`` arguments) and ``sink``
        (prefix, step metric, tables) say how to log the same way again; ``ends_run``:
        whether `close` finishes the run (the sink starts it).
        """
        run = self._source.run
        init = {
            key: value
            for key, value in self._source.init_kwargs.items()
            if isinstance(value, str | int | float | bool) or value is None
        }
        identity: dict[str, Any] | None = None
        if run is not None:
            identity = {"project": str(run.project), "id": str(run.id)}
        elif self._source.given is None and isinstance(init.get("id"), str):
            identity = {"project": init.get("project"), "id": init["id"]}
        return {
            "kind": "wandb",
            "run": identity,
            "init": init,
            "sink": {
                "prefix": self.prefix,
                "step_metric": self.step_metric,
                "html": self.html,
                "incremental_tables": self._incremental is not None,
            },
            "ends_run": self.started_run or (run is None and self._source.given is None),
        }

    def _ensure_run(self) -> wandb.Run:
        run = self._source.get()
        if self.step_metric is not None and not self._axis_defined:
            metric = self.step_metric
            call_wandb("define the step metric of", lambda: run.define_metric(metric))
            if self.prefix is not None:
                glob = f"{self.prefix}/*"
                call_wandb(
                    "define the step metric of",
                    lambda: run.define_metric(glob, step_metric=metric),
                )
            self._axis_defined = True
        return run

    def _name(self, key: str) -> str:
        return key if self.prefix is None else f"{self.prefix}/{key}"

    def _check_names(self, logs: dict[str, LogValue]) -> None:
        for key, value in logs.items():
            name = self._name(key)
            names = [name, name + HTML_SUFFIX] if isinstance(value, Table) and self.html else [name]
            for used in names:
                if used in _RESERVED or used == self.step_metric:
                    raise InvalidInputError(
                        f"logs[{key!r}] would be logged as {used!r}, a name that W&B or this "
                        "sink's step_metric uses; rename the key or set prefix=..."
                    )
                problem = key_problem(used, file=isinstance(value, Table))
                if problem is not None:
                    raise InvalidInputError(
                        f"logs[{key!r}] cannot be logged to W&B as {used!r}: it {problem}; "
                        "rename the key"
                    )

    def _payload(self, logs: dict[str, LogValue], step: int) -> dict[str, Any]:
        wandb_module = self._source.module
        limit = int(wandb_module.Table.MAX_ROWS)
        payload: dict[str, Any] = {}
        for key, value in logs.items():
            name = self._name(key)
            if isinstance(value, Histogram):
                histogram = (list(value.counts), list(value.edges))
                payload[name] = wandb_module.Histogram(np_histogram=histogram)
                continue
            if not isinstance(value, Table):
                payload[name] = value
                continue
            table = text_for_mixed_columns(name, value, self._told)
            table = sample_rows(name, table, limit, self._sort_by)
            if self._incremental is not None:
                payload[name] = self._incremental.add(wandb_module, name, table, step)
            else:
                payload[name] = to_wandb_table(wandb_module, table)
            if self.html:
                page = wandb_module.Html(clean_text(table.to_html()), inject=False)
                payload[name + HTML_SUFFIX] = page
        return payload

    def _check_run_step(self, run: wandb.Run, step: int) -> None:
        # ``run.step`` asks W&B's service (a round trip, and a 30 s hang on a finished
        # run), so this reads the client's own copy of the step, which ``run.log`` keeps
        # by the same rule W&B uses to drop a step (wandb 0.31). Without it, no check.
        current = getattr(run, "_local_step", None)
        if isinstance(current, int) and step < current:
            raise InvalidInputError(
                f"the W&B run is already at step {current}, so W&B would drop step {step} "
                "with only a warning; log with the step the run is at (e.g. the trainer's "
                "global step, before it moves on), or pass step_metric='grader_step' to "
                "WandbSink so that grader logs get an x axis of their own"
            )

    def _write(self, logs: dict[str, LogValue], step: int) -> None:
        self._check_names(logs)
        run = self._ensure_run()
        if self.step_metric is None:
            self._check_run_step(run, step)
        payload = call_wandb(f"prepare step {step} for", lambda: self._payload(logs, step))
        if self.step_metric is None:
            call_wandb(f"log step {step} to", lambda: run.log(payload, step=step))
            return
        if self.prefix is None:
            for name in payload:
                if name not in self._defined:
                    metric = self.step_metric
                    call_wandb(
                        "define a metric of",
                        lambda: run.define_metric(name, step_metric=metric),  # noqa: B023
                    )
                    self._defined.add(name)
        payload[self.step_metric] = step
        call_wandb(f"log step {step} to", lambda: run.log(payload))

    def _write_many(self, entries: list[tuple[int, dict[str, LogValue]]]) -> None:
        # Every name is checked before the first step goes out, so that a refused key
        # refuses the whole call: nothing of it reaches W&B, and it can be retried apart.
        for _, logs in entries:
            self._check_names(logs)
        super()._write_many(entries)

    def _write_config(self, config: dict[str, Any]) -> None:
        problem = config_key_problem(config)
        if problem is not None:
            raise InvalidInputError(f"{problem}; rename the key")
        run = self._ensure_run()
        call_wandb("add the config to", lambda: update_config(run, config))

    def _write_alert(self, title: str, text: str, tags: dict[str, str]) -> None:
        run = self._ensure_run()
        wandb_module = self._source.module

        def mark() -> None:
            for key, value in tags.items():
                run.summary[key] = value
            labels = tuple(run.tags or ())
            if ALERT_LABEL not in labels:
                run.tags = (*labels, ALERT_LABEL)
            # W&B takes an alert title under 64 characters; the text says the rest.
            run.alert(title=title[:63], text=text, level=wandb_module.AlertLevel.WARN)

        call_wandb(f"raise the alert {title!r} on", mark)

    def _close(self) -> None:
        self._source.finish()

    def __repr__(self) -> str:
        kwargs = self._source.init_kwargs
        parts = [f"{k}={v!r}" for k, v in kwargs.items() if k != "dir"]
        if self.prefix is not None:
            parts.append(f"prefix={self.prefix!r}")
        if self.step_metric is not None:
            parts.append(f"step_metric={self.step_metric!r}")
        return f"{type(self).__name__}({', '.join(parts)})"
