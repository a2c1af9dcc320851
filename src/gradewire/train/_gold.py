"""The gold reference's share of a step's samples, and grading with each grade timed."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
from collections.abc import Collection, Sequence

from gradewire.core import BaseGrader, Grade, InvalidInputError, InvalidTypeError, StringThread
from gradewire.core._grader import timeout_setting

__all__ = [
    "check_gold",
    "check_gold_fraction",
    "in_gold_share",
    "sample_identity",
    "timed_attempts",
]

ID_KEY = "id"
"""A sample's ``metadata`` key that names it (default: its whole conversation)."""


def check_gold(gold: object, training_keys: Collection[str]) -> BaseGrader | None:
    """``gold=``: None, or a grader whose key is none of the training graders' keys."""
    if gold is None:
        return None
    if not isinstance(gold, BaseGrader):
        raise InvalidTypeError(
            f"gold must be a grader, not {type(gold).__name__}; wrap a function with "
            "BaseGrader.from_function(key, fn)"
        )
    if gold.grader_key in training_keys:
        raise InvalidInputError(
            f"the gold grader's key {gold.grader_key!r} is a training grader's too; "
            "give the gold reference its own key"
        )
    return gold


def check_gold_fraction(value: object) -> float:
    """``gold_fraction``: a share in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidTypeError(f"gold_fraction must be a number, not {value!r}")
    if not (math.isfinite(value) and 0.0 < value <= 1.0):
        raise InvalidInputError(
            f"gold_fraction must be above 0 and at most 1, not {value!r}: 0.25 grades a "
            "quarter of each step's samples with the gold reference, 1.0 all of them"
        )
    return float(value)


def sample_identity(sample: StringThread) -> str:
    """A stable key of the sample: ``metadata["id"]`` when set, else its conversation."""
    named = sample.metadata.get(ID_KEY)
    if named is not None:
        return f"id:{named}"
    return json.dumps([[t.role, t.content] for t in sample.turns], ensure_ascii=True)


def in_gold_share(sample: StringThread, fraction: float) -> bool:
    """Whether the sample is in the gold share: a hash of its identity below ``fraction``.

    A hash, not a random draw: every rank, and a restarted run, picks the same samples,
    and a sample's pick does not depend on which others share its batch.
    """
    if fraction >= 1.0:
        return True
    text = sample_identity(sample).encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(text, digest_size=8, person=b"gw-gold").digest()
    return int.from_bytes(digest, "big") / 2.0**64 < fraction


async def timed_attempts(
    grader: BaseGrader,
    samples: Sequence[StringThread],
    max_concurrency: int,
    timeout: float | None,
) -> tuple[list[Grade | Exception], list[float]]:
    """`BaseGrader._attempt_many`, with the seconds each grade took.

    The same rules as the grader's own batch call: at most ``max_concurrency`` at once,
    ``timeout`` for a grader that sets none, failures returned, not raised.
    """
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
        raise InvalidInputError(f"max_concurrency must be a positive int, not {max_concurrency!r}")
    if max_concurrency < 1:
        raise InvalidInputError(f"max_concurrency must be a positive int, not {max_concurrency!r}")
    default = timeout_setting(timeout, "timeout")
    batch = list(samples)
    outcomes: list[Grade | Exception] = [Exception("not graded")] * len(batch)
    seconds = [math.nan] * len(batch)
    pending = iter(enumerate(batch))

    async def work() -> None:
        for index, sample in pending:
            start = time.perf_counter()
            outcomes[index] = await grader._attempt(sample, default)
            seconds[index] = time.perf_counter() - start

    workers = min(max_concurrency, len(batch))
    if workers:
        await asyncio.gather(*(work() for _ in range(workers)))
    return outcomes, seconds
