"""The logging core inside every grader: records in, statistics and tables out."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from gradewire.core._compact_records import CompactRecords, LogT, ScoreRun
from gradewire.core._errors import GradewireError, InvalidInputError, InvalidTypeError
from gradewire.core._histogram import Histogram
from gradewire.core._log_buffer import LogBuffer
from gradewire.core._log_state import LogState
from gradewire.core._log_text import TEXT_VALUE_CHARS, kept_text, text_bytes
from gradewire.core._sample_tables import sample_tables, split_records
from gradewire.core._table import Table

__all__ = ["UNDRAINED_RECORDS", "LogT", "LogValue", "LoggingCore"]

logger = logging.getLogger("gradewire")

UNDRAINED_RECORDS = 10_000
"""The records a grader keeps when a driver bounds it because nothing may drain it."""

LogValue = float | Table | Histogram
"""A logged value: a number (counts are ints), a `Table`, or a `Histogram`.

Graders' `get_logs()` give numbers and tables; training drivers add histograms. Every sink
takes all three.
"""


class LoggingCore(CompactRecords[LogT]):
    """The log buffer of a grader: `add_log` per sample, `get_logs` for the aggregates.

    Numbers are mirrored into packed columns as they are logged, so `get_logs` is one
    numpy pass. ``self._logs`` is the list of logged records, for `get_logs` overrides
    that build their own tables (score-only records packed until then: `CompactRecords`).
    """

    # Set by `bound_undrained`: how to drain the grader, said once when the bound is reached.
    _undrained_hint: str | None = None

    def __init__(self, *, sample_tables: bool, max_log_records: int | None) -> None:
        self.sample_tables = sample_tables
        self._folded: LogState | None = None
        self._max_log_records: int | None = None
        self._max_log_bytes: int | None = None
        self._text_bytes = 0
        self._reset_records()
        self.max_log_records = max_log_records

    @property
    def max_log_records(self) -> int | None:
        """How many log records the grader keeps; None (the default) keeps them all.

        Past this many, the older half is folded into exact running statistics and
        dropped from ``self._logs``: `get_logs()` numbers still cover every sample since
        the last clear, while tables (and code reading ``self._logs``) see recent records
        only. Set it for long runs that never call ``get_logs(clear=True)``, such as a
        reward server, so memory stays bounded.
        """
        return getattr(self, "_max_log_records", None)

    @max_log_records.setter
    def max_log_records(self, value: int | None) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidTypeError(f"max_log_records must be an int or None, not {value!r}")
        if value is not None and value < 2:
            raise InvalidInputError(
                f"max_log_records must be at least 2, not {value}; None keeps every record"
            )
        self._max_log_records = value
        self._undrained_hint = None  # a bound set on purpose
        if value is not None and not self._listed:
            # Folding counts records, so a bounded grader keeps them as a plain list.
            self._list_records()
        for grader in self._sub_graders():
            if grader.max_log_records is None:
                grader.max_log_records = value

    @property
    def max_log_bytes(self) -> int | None:
        """Bytes of text the grader keeps in its log records; None (the default): no bound.

        When set, every text value longer than 10,000 characters is cut as it is logged
        (its first and last 5,000 kept, the cut marked), and once the texts kept take more
        than this many bytes of memory, the older records are folded into exact running
        statistics as with `max_log_records`: figures cover every sample, tables the
        newest ones. A reward server sets it, so a client sending 4 MB completions cannot
        grow its memory by 4 MB a sample.
        """
        return getattr(self, "_max_log_bytes", None)

    @max_log_bytes.setter
    def max_log_bytes(self, value: int | None) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidTypeError(f"max_log_bytes must be an int or None, not {value!r}")
        if value is not None and value < 4 * TEXT_VALUE_CHARS:
            raise InvalidInputError(
                f"max_log_bytes must be at least {4 * TEXT_VALUE_CHARS} (a few records of "
                f"long text), not {value}; None keeps every record whole"
            )
        self._max_log_bytes = value
        # Folding by size counts records, so a bounded grader keeps them as a plain list.
        self._text_bytes = text_bytes(self._logs) if value is not None else 0
        for grader in self._sub_graders():
            if grader.max_log_bytes is None:
                grader.max_log_bytes = value

    def bound_undrained(self, hint: str) -> None:
        """Bound a grader that nothing may drain, unless it has a bound of its own.

        A driver that grades for a trainer which may never read the logs (``trl_reward``
        without its callback, an OpenRLHF reward file) calls this: the grader then keeps
        at most `UNDRAINED_RECORDS` records (see `max_log_records`: figures stay exact,
        tables show the newest), and the first time the bound is reached it warns once,
        with ``hint`` saying how to drain it.
        """
        if self.max_log_records is None:
            self.max_log_records = UNDRAINED_RECORDS
            self._undrained_hint = hint

    def _sub_graders(self) -> Sequence[LoggingCore[Any]]:
        """The graders this one runs, which share its bounds (none for a leaf grader)."""
        return ()

    def add_log(self, log: LogT) -> None:
        """Record one sample's data; numbers are aggregated, the rest kept for tables.

        Every number is counted (bools, ints, floats, numpy scalars of every kind;
        one with no finite float value as ``<key>/nonfinite_count``), under its key;
        strings and other values are kept for tables. Nothing a record holds makes this
        raise. A record that is not a dict is kept in ``self._logs`` for the grader's
        own `get_logs`, with nothing counted from it.
        """
        try:
            records, buffer = self._records, self._log_buffer
        except AttributeError:
            raise GradewireError(
                f"{type(self).__name__}.__init__ must call super().__init__(grader_key) "
                "before the grader can log"
            ) from None
        text_limit = self._max_log_bytes
        if type(log) is not dict and not isinstance(log, Mapping):
            self._warn_not_a_dict(log)
        elif text_limit is not None:
            log, size = kept_text(log)  # type: ignore[arg-type,assignment]
            self._text_bytes += size
        if not self._listed:
            scored = len(self._scores)
            if scored != self._marked:
                records.append(ScoreRun(scored))
                self._marked = scored
        records.append(log)
        buffer.add(log)
        limit = self._max_log_records
        if limit is not None and len(records) > limit:
            self._fold(limit // 2)
        elif text_limit is not None and self._text_bytes > text_limit:
            self._fold(self._newest_within(text_limit // 2))

    def _newest_within(self, budget: int) -> int:
        """How many of the newest records have texts that fit in ``budget`` bytes (>= 1)."""
        kept, total = 0, 0
        for record in reversed(self._logs):
            total += text_bytes((record,))
            if total > budget:
                break
            kept += 1
        return max(kept, 1)

    def _warn_not_a_dict(self, log: object) -> None:
        kind = type(log)
        seen: set[type] = self.__dict__.setdefault("_warned_records", set())
        if kind not in seen:
            seen.add(kind)
            logger.warning(
                "grader %r logged a %s, not a dict: it is kept in self._logs, but only "
                "dict records are aggregated; log e.g. {'score': 1.0}",
                getattr(self, "grader_key", type(self).__name__),
                kind.__name__,
            )

    def _fold(self, keep: int) -> None:
        """Fold all but the ``keep`` newest records into running statistics."""
        logs = self._logs
        cut = len(logs) - keep
        if cut <= 0:
            return
        if self._undrained_hint is not None:
            hint, self._undrained_hint = self._undrained_hint, None
            logger.warning(
                "grader %r holds %d log records that nothing has drained, so it now folds the "
                "older ones into its statistics to bound its memory (the figures stay exact; "
                "tables keep the newest records). %s Set its max_log_records to choose the "
                "bound. (Said once.)",
                getattr(self, "grader_key", type(self).__name__),
                len(logs),
                hint,
            )
        older = LogBuffer(logs[:cut]).state()
        self._folded = older if self._folded is None else self._folded.merge(older)
        # Each fold handles about max_log_records records once every max_log_records / 2
        # calls, so logging stays O(1) per record.
        self._logs = logs[cut:]
        self._log_buffer = LogBuffer(self._records)
        if self._max_log_bytes is not None:
            self._text_bytes = text_bytes(self._records)

    def log_state(self, *, clear: bool = False) -> LogState:
        """The mergeable statistics of the logged records (for several ranks or workers).

        Example:
            >>> state = grader.log_state(clear=True).to_dict()  # doctest: +SKIP
            >>> # gather the dicts of every rank, then on rank 0:
            >>> LogState.merge_all(map(LogState.from_dict, gathered)).to_logs()  # doctest: +SKIP
        """
        state = self._own_log_state()
        if clear:
            self.clear_logs()
        return state

    def _own_log_state(self) -> LogState:
        if self._listed and not self._log_buffer.in_sync_with(self._records):
            # User code replaced or edited self._logs: trust the list, not the mirror.
            self._log_buffer = LogBuffer(self._records)
        state = self._log_buffer.state(self._scores)
        folded = getattr(self, "_folded", None)
        return state if folded is None else folded.merge(state)

    def get_logs(self, clear: bool = False, log_all_samples: bool = False) -> dict[str, LogValue]:
        """Aggregate the logged records.

        Returns:
            ``<key>/mean``, ``/std`` (sample, n-1), ``/min``, ``/max``, ``/count`` for every
            numeric key logged (non-finite values are counted in ``<key>/nonfinite_count``
            and left out), ``score/abstained_count`` and ``score/error_count``; the sample
            tables when the grader was built with ``sample_tables=True``; ``{}`` when
            nothing was logged.

        Args:
            clear: Empty the log buffer afterwards, so the next call covers only new samples.
            log_all_samples: Accepted for Adaptive Harmony's signature. The sample tables
                always hold every sample since the last clear (a sink's `TablePolicy`
                chooses the rows it shows), so there is no subset to widen.
        """
        del log_all_samples
        logs: dict[str, LogValue] = dict(self._own_log_state().to_logs())
        if self.sample_tables:
            records = [r for r in self._logs if isinstance(r, Mapping)]
            if records:
                logs.update(self.get_sample_tables(*split_records(records)))
        if clear:
            self.clear_logs()
        return logs

    def clear_logs(self) -> None:
        """Forget every logged record (and the statistics folded from older ones)."""
        self._reset_records()
        self._folded = None
        self._text_bytes = 0

    def get_sample_tables(
        self,
        successful_samples: Sequence[Mapping[str, Any]],
        failed_samples: Sequence[Mapping[str, Any]] | None = None,
    ) -> dict[str, LogValue]:
        """Tables of scored and unscored samples.

        When any log of a table carries a ``completion``, that table gets a Completion
        column after Prompt; the other columns are always there, in this order.

        Args:
            successful_samples: Logs like ``{"score": float, "prompt": str,
                "reasoning": str}`` (reasoning optional).
            failed_samples: Logs like ``{"error": str, "prompt": str}`` (prompt
                optional); an abstention (``{"abstained": reason}``) is shown as
                ``abstained: reason``. None or empty: no unscored table.

        Returns:
            ``score/scored_samples`` (Prompt, Reasoning, Score),
            ``score/unscored_samples`` (Prompt, Error; only when there are failures),
            ``score/scored_samples_count`` and ``score/unscored_samples_count``.
        """
        return dict(sample_tables(successful_samples, failed_samples or ()))
