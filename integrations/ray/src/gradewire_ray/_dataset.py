"""grade_dataset: grade a Ray Dataset with any graders; exact figures back on the driver."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import Unpack

from gradewire import BaseGrader, Histogram, InvalidInputError, InvalidTypeError, LogState
from gradewire.core import LogValue
from gradewire.core._histogram import DEFAULT_EDGES, check_edges
from gradewire.core._sample_tables import sample_tables
from gradewire.eval import DataOptions
from gradewire.eval.runs._samples import RowShape
from gradewire.sinks import TablePolicy
from gradewire_ray._ray import import_ray, pickle
from gradewire_ray._rows import STATE_COLUMN, RowToThread, default_row_thread

__all__ = ["GradedDataset", "grade_dataset"]


@dataclass(frozen=True)
class GradedDataset:
    """A graded Ray Dataset and its graders' figures, merged exactly over every block.

    Attributes:
        dataset: The input rows with, per grader, ``<key>/value`` (None: no score),
            ``<key>/status`` (``ok``, ``error``, ``abstained``), ``<key>/reasoning`` and
            ``<key>/error`` (materialized: reading it again grades nothing again).
        states: Each grader's merged `LogState` (what `BaseGrader.log_state` would hold
            after grading every row in one process).
        histograms: Each grader's score histogram over fixed bin edges.
        tables: Each grader's sample tables (``score/scored_samples``, ...) over a
            bounded sample: the best and worst rows and an even spread between.
        rows: How many rows were graded.
    """

    dataset: Any
    states: Mapping[str, LogState]
    histograms: Mapping[str, Histogram]
    tables: Mapping[str, Mapping[str, LogValue]] = field(default_factory=dict)
    rows: int = 0

    def get_logs(self, grader_key: str | None = None) -> dict[str, LogValue]:
        """One grader's logs as its own `get_logs()` would give them, or every grader's.

        With a key: ``score/mean``, ``/std``, ``/min``, ``/max``, ``/count``, the
        abstention and error counts and every other logged number, then
        ``score/histogram`` and the tables. Without: the same for every grader, each
        under ``<grader_key>/``.
        """
        if grader_key is None:
            logs: dict[str, LogValue] = {}
            for key in self.states:
                logs.update({f"{key}/{name}": v for name, v in self.get_logs(key).items()})
            return logs
        if grader_key not in self.states:
            raise InvalidInputError(
                f"no grader {grader_key!r} was run; the graders are: {', '.join(self.states)}"
            )
        out: dict[str, LogValue] = dict(self.states[grader_key].to_logs())
        out["score/histogram"] = self.histograms[grader_key]
        out.update(self.tables.get(grader_key, {}))
        return out


def grade_dataset(
    dataset: Any,
    graders: BaseGrader | Sequence[BaseGrader],
    *,
    actors: int = 2,
    concurrency: int = 64,
    batch_size: int | None = None,
    num_cpus: float = 0.5,
    to_thread: RowToThread | None = None,
    histogram_edges: Sequence[float] | Mapping[str, Sequence[float]] = DEFAULT_EDGES,
    table_policy: TablePolicy | None = None,
    **options: Unpack[DataOptions],
) -> GradedDataset:
    """Grade every row of a ``ray.data.Dataset`` on a pool of Ray actors.

    Each actor holds copies of the graders and grades up to ``concurrency`` samples at
    once (async graders and judges wait on I/O together; sync ones run inline). Rows
    become threads as ``gradewire eval`` reads its data: ``messages``, or ``prompt`` and
    ``completion``, the other fields as metadata (``completion_key=``, ``prompt_key=``
    name other fields; pass ``to_thread`` for another shape). A grader that fails or
    abstains on a row is counted like a local failure; a row that is no sample (a row
    with no completion, unless ``allow_prompt_only=True``) counts as an error of every
    grader. When a worker dies Ray runs its
    batches again, and since each batch's figures travel in its own output rows, the
    retried samples are counted once.

    Args:
        dataset: The rows to grade.
        graders: The graders (picklable, as Ray ships them; graders built by gradewire's
            factory and `BaseGrader.from_function` graders are).
        actors: How many actors grade (a fixed pool).
        concurrency: Samples in flight per actor.
        batch_size: Rows per batch (default: twice ``concurrency``).
        num_cpus: CPUs each actor reserves. Graders mostly wait on I/O; half a CPU
            leaves room for Ray's read tasks (a pool that takes every CPU stalls them).
        to_thread: Turns a row (a dict) into the `StringThread` the graders score.
        histogram_edges: Bin edges of every grader's score histogram, or a mapping from
            grader key to edges with ``"*"`` for the rest (default: 20 bins over [0, 1]).
        table_policy: ``max_rows`` bounds the rows of each sample table (default 100)
            and ``max_cell_chars`` their text.
        **options: Which fields hold the prompt and the completion, and whether rows
            with no completion are graded (`gradewire.eval.DataOptions`); not with
            ``to_thread``.

    Returns:
        The graded dataset (materialized) and the merged figures.

    Example:
        >>> graded = grade_dataset(ray.data.read_json("eval.jsonl"), [grader])  # doctest: +SKIP
        >>> graded.get_logs("exact")["score/mean"]  # doctest: +SKIP
    """
    ray = import_ray("grade a Ray Dataset")
    chosen = _graders(graders)
    _positive("actors", actors)
    _positive("concurrency", concurrency)
    rows_per_batch = 2 * concurrency if batch_size is None else batch_size
    _positive("batch_size", rows_per_batch)
    if isinstance(num_cpus, bool) or not isinstance(num_cpus, int | float) or num_cpus < 0:
        raise InvalidInputError(f"num_cpus must be a number >= 0, not {num_cpus!r}")
    edges = _edges(histogram_edges, [g.grader_key for g in chosen])
    policy = table_policy or TablePolicy()
    if not isinstance(policy, TablePolicy):
        raise InvalidTypeError(f"table_policy must be a TablePolicy, not {type(policy).__name__}")
    shape = RowShape.of(options)
    if to_thread is not None and options:
        raise InvalidInputError(
            f"{', '.join(options)} tell the default row reader what to read; to_thread "
            "replaces it, so pass one or the other"
        )
    reader = to_thread or functools.partial(default_row_thread, shape=shape)
    if not callable(reader):
        raise InvalidTypeError(f"to_thread must be a function of a row, not {reader!r}")
    if not isinstance(dataset, ray.data.Dataset):
        raise InvalidTypeError(
            f"grade_dataset takes a ray.data.Dataset, not {type(dataset).__name__}; build one "
            "with ray.data.read_json(...), ray.data.from_items(...) or similar"
        )
    from gradewire_ray._batches import GradeBatches
    from gradewire_ray._merge import MergeGrades, empty

    graded = dataset.map_batches(
        GradeBatches,
        fn_constructor_kwargs={
            "graders": pickle(chosen),
            "to_thread": pickle(reader),
            "concurrency": concurrency,
        },
        batch_size=rows_per_batch,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=num_cpus,
        zero_copy_batch=True,
    ).materialize()
    keys = [g.grader_key for g in chosen]
    k = policy.max_rows if policy.max_rows is not None else 2**31 - 1
    merger = MergeGrades(keys, edges, k, policy.max_cell_chars, reader)
    summaries = graded.map_batches(
        merger.of_block, batch_size=None, batch_format="pyarrow", num_cpus=num_cpus
    )
    acc = empty()
    for row in summaries.iter_rows():  # merged as they come: the driver holds one at a time
        acc = merger.combine(acc, json.loads(row["summary"]))
    return _result(graded.drop_columns([STATE_COLUMN]), keys, edges, acc)


def _result(
    dataset: Any, keys: Sequence[str], edges: Mapping[str, tuple[float, ...]], acc: Any
) -> GradedDataset:
    states: dict[str, LogState] = {}
    histograms: dict[str, Histogram] = {}
    tables: dict[str, dict[str, LogValue]] = {}
    for key in keys:
        states[key] = LogState.from_dict(acc["logs"].get(key, LogState().to_dict()))
        raw = acc["histograms"].get(key)
        histograms[key] = Histogram.empty(edges[key]) if raw is None else Histogram.from_dict(raw)
        scored = [
            {"score": value, "prompt": prompt, "completion": completion, "reasoning": reasoning}
            for value, prompt, completion, reasoning in acc["scored"].get(key, [])
        ]
        failed = [
            {
                ("error" if status == "error" else "abstained"): message,
                "prompt": prompt,
                "completion": completion,
            }
            for status, message, prompt, completion in acc["failed"].get(key, [])
        ]
        tables[key] = dict(sample_tables(scored, failed))
    return GradedDataset(dataset, states, histograms, tables, int(acc["rows"]))


def _graders(graders: BaseGrader | Sequence[BaseGrader]) -> list[BaseGrader]:
    chosen = [graders] if isinstance(graders, BaseGrader) else list(graders)
    if not chosen:
        raise InvalidInputError("grade_dataset needs at least one grader")
    for grader in chosen:
        if not isinstance(grader, BaseGrader):
            raise InvalidTypeError(
                f"grade_dataset takes graders, not {type(grader).__name__}; wrap a function "
                "with BaseGrader.from_function(key, fn)"
            )
    keys = [g.grader_key for g in chosen]
    if len(set(keys)) != len(keys):
        raise InvalidInputError(f"two graders share a key ({keys}); give each its own key")
    return chosen


def _edges(
    edges: Sequence[float] | Mapping[str, Sequence[float]], keys: Sequence[str]
) -> dict[str, tuple[float, ...]]:
    if isinstance(edges, Mapping):
        table = {str(k): check_edges(v) for k, v in edges.items()}
        fallback = table.pop("*", DEFAULT_EDGES)
        return {key: table.get(key, fallback) for key in keys}
    fixed = check_edges(edges)
    return dict.fromkeys(keys, fixed)


def _positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{name} must be an int >= 1, not {value!r}")
