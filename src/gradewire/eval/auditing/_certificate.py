"""Certifying a judge: its agreement with people, measured and bound to its identity.

`certify_judge` grades labelled samples with the judge, measures what the audits measure
(agreement with the labels with intervals, the confusion matrix, true and false pass
rates and the base rate; the flip rate over ``repeats`` passes with the judge's cache
bypassed; the position audit of a pairwise judge; the length audit) and writes it all as
a `JudgeCertificate` that names the judge's identity (see
`gradewire.judges._certificate` for the certificate, its check and the gate).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Literal

import numpy as np

from gradewire.core import BaseGrader, Grade, InvalidInputError, InvalidTypeError, StringThread
from gradewire.core._logging_core import LoggingCore
from gradewire.eval.auditing._judge_audits import (
    _grade_all,
    _keyed,
    audit_length,
    audit_position,
)
from gradewire.judges import JudgePanel, PairwiseJudgeGrader
from gradewire.judges._certificate import JudgeCertificate, json_ready
from gradewire.judges._identity import identity_facts, is_judge
from gradewire.stats import agreement
from gradewire.stats._mean_interval import wilson

__all__ = ["certify_judge"]


async def certify_judge(
    judge: BaseGrader[Any],
    samples: Sequence[StringThread] | Mapping[str, StringThread],
    labels: Mapping[str, float | None] | Sequence[float | None],
    *,
    repeats: int = 3,
    scale: Literal["nominal", "interval"] | None = None,
    length: bool = True,
    concurrency: int = 8,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> JudgeCertificate:
    """Measure ``judge`` against people's ``labels`` and bind the result to its identity.

    The judge is run on a copy whose model has no cache (a retest of cached answers
    measures nothing) and whose logs are its own (the judge's logs are left as they were).

    Args:
        judge: The judge (a `JudgeGrader` or a `JudgePanel`).
        samples: The labelled samples (a dict id → thread, or a list keyed by position).
        labels: People's label per sample id (0/1, or a number on the judge's scale;
            None: unlabelled, left out).
        repeats: Passes of the retest (2 or more); the first pass is also the one
            compared with the labels.
        scale: ``"nominal"`` (0/1 and other categories; Cohen's κ is bound) or
            ``"interval"`` (Krippendorff's α is bound); default nominal when every label
            is 0 or 1, else interval.
        length: Run the length audit too (two more passes).
        concurrency: Samples in flight.
        confidence: The intervals' level.
        n_resamples: Bootstrap resamples of the agreement intervals.
        seed: Bootstrap seed.

    Raises:
        InvalidTypeError: ``judge`` is not a judge.
        InvalidInputError: Fewer than 2 samples or labelled samples, labels of unknown
            samples, ``repeats`` below 2, or answers that still came from a cache.
    """
    if not is_judge(judge):
        raise InvalidTypeError(
            f"certify a judge (a grader that calls a model), not {type(judge).__name__}"
        )
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 2:
        raise InvalidInputError(f"repeats must be 2 or more passes, not {repeats!r}")
    keyed = _keyed(samples)
    labelled = _labels(labels, keyed)
    if scale is None:
        scale = "nominal" if set(labelled.values()) <= {0.0, 1.0} else "interval"
    if scale not in ("nominal", "interval"):
        raise InvalidInputError(f"scale must be 'nominal' or 'interval', not {scale!r}")
    identity = judge.identity  # type: ignore[attr-defined]
    facts = identity_facts(judge)
    fresh = _uncached(judge)
    passes: list[dict[str, Grade]] = []
    for _ in range(repeats):
        grades = await _grade_all(fresh, keyed, concurrency)
        cached = [k for k, g in grades.items() if _cached_calls(g)]
        if cached:
            raise InvalidInputError(
                f"{len(cached)} answer(s) came from a cache although the judge's cache was "
                "bypassed; a certificate needs fresh answers: use a model without a cache"
            )
        passes.append(grades)
    scores = {k: g.value for k, g in passes[0].items()}
    both = [k for k in labelled if k in scores]
    if len(both) < 2:
        raise InvalidInputError(
            f"the judge scored {len(both)} of the {len(labelled)} labelled samples; "
            "a certificate needs at least 2"
        )
    statistic = "cohen_kappa" if scale == "nominal" else "krippendorff_alpha"
    people = {k: labelled[k] for k in both}
    judged = {k: scores[k] for k in both}
    result = agreement(
        people,
        judged,
        scale=scale,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
        names=["people", "judge"],
    )
    value = float(result.statistics.get(statistic, math.nan))
    low, high = result.intervals.get(statistic, (math.nan, math.nan))
    confusion = None
    if result.confusion is not None and result.categories is not None:
        confusion = {
            "categories": [_plain_label(c) for c in result.categories],
            "rows": "people",
            "columns": "judge",
            "matrix": result.confusion.tolist(),
        }
    position = length_result = None
    if isinstance(fresh, PairwiseJudgeGrader):
        position = (await audit_position(fresh, keyed, concurrency=concurrency)).to_dict()
    if length:
        length_result = (
            await audit_length(fresh, keyed, concurrency=concurrency, seed=seed)
        ).to_dict()
    return JudgeCertificate(
        grader=judge.grader_key,
        identity=identity,
        facts=facts,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        n=len(both),
        n_labelled=len(labelled),
        scale=scale,
        statistic=statistic,
        value=value,
        ci_low=float(low),
        ci_high=float(high),
        confidence=confidence,
        method=result.method,
        agreement=json_ready(result.to_dict()),
        confusion=confusion,
        rates=_rates(people, judged, confidence) if scale == "nominal" else None,
        retest=_retest(passes, confidence, scale),
        position=position,
        length=length_result,
        served=_served(passes),
    )


def _labels(
    labels: Mapping[str, float | None] | Sequence[float | None], keyed: Mapping[str, StringThread]
) -> dict[str, float]:
    if isinstance(labels, Mapping):
        given = {str(k): v for k, v in labels.items()}
    elif isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence):
        raise InvalidTypeError("labels must be a dict id → label or a list aligned with samples")
    else:
        if len(labels) != len(keyed):
            raise InvalidInputError(
                f"{len(labels)} labels for {len(keyed)} samples; give one per sample (None: "
                "unlabelled)"
            )
        given = dict(zip(keyed, labels, strict=True))
    unknown = sorted(set(given) - set(keyed))
    if unknown:
        raise InvalidInputError(f"labels of samples that are not given: {unknown[:5]}")
    out: dict[str, float] = {}
    for key, value in given.items():
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if isinstance(value, bool):
            value = float(value)
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InvalidInputError(f"the label of {key!r} is {value!r}, not a finite number")
        out[key] = float(value)
    if len(out) < 2:
        raise InvalidInputError(f"a certificate needs at least 2 labelled samples, not {len(out)}")
    return out


def _uncached(judge: BaseGrader[Any]) -> BaseGrader[Any]:
    """A copy of ``judge`` with its own logs, whose models answer without a cache."""
    clone = copy.copy(judge)
    LoggingCore.__init__(
        clone, sample_tables=judge.sample_tables, max_log_records=judge.max_log_records
    )
    if isinstance(clone, JudgePanel):
        clone.judges = tuple(_uncached(member) for member in clone.judges)
        return clone
    model: Any = getattr(clone, "model", None)
    if getattr(model, "cache", None) is not None:
        # A ModelClient rebuilt from its own settings (as a pickled copy is), without cache.
        rebuild, (kind, settings) = model.__reduce__()
        clone.model = rebuild(kind, {**settings, "cache": None})  # type: ignore[attr-defined]
    return clone


def _cached_calls(grade: Grade) -> bool:
    usage = grade.info.get("usage")
    if isinstance(usage, Mapping) and usage.get("cached_calls", 0) > 0:
        return True
    return any(_cached_calls(child) for child in grade.children)


def _rate(hits: int, n: int, confidence: float) -> dict[str, Any]:
    rate = hits / n if n else math.nan
    low, high = wilson(rate, n, confidence) if n else (math.nan, math.nan)
    return {"rate": rate, "n": n, "ci_low": low, "ci_high": high}


def _rates(
    people: Mapping[str, float], judged: Mapping[str, float], confidence: float
) -> dict[str, Any] | None:
    if not set(people.values()) <= {0.0, 1.0} or not set(judged.values()) <= {0.0, 1.0}:
        return None
    keys = list(people)
    passed = [k for k in keys if people[k] == 1.0]
    failed = [k for k in keys if people[k] == 0.0]
    return {
        "base_rate": _rate(len(passed), len(keys), confidence),
        "true_pass_rate": _rate(sum(judged[k] == 1.0 for k in passed), len(passed), confidence),
        "false_pass_rate": _rate(sum(judged[k] == 1.0 for k in failed), len(failed), confidence),
        "judge_pass_rate": _rate(sum(judged[k] == 1.0 for k in keys), len(keys), confidence),
        "method": "Wilson score interval",
    }


def _retest(passes: Sequence[Mapping[str, Grade]], confidence: float, scale: str) -> dict[str, Any]:
    common = [k for k in passes[0] if all(k in p for p in passes)]
    flips = [k for k in common if len({p[k].value for p in passes}) > 1]
    n = len(common)
    out: dict[str, Any] = {"repeats": len(passes), **_rate(len(flips), n, confidence)}
    out["flip_rate"] = out.pop("rate")
    out["flips"] = flips
    out["method"] = "share of samples whose score was not the same in every pass; Wilson interval"
    alpha = math.nan
    if n >= 2:
        result = agreement(
            *({k: p[k].value for k in common} for p in passes),
            scale="interval" if scale == "interval" else "nominal",
            statistics=["krippendorff_alpha"],
            n_resamples=0,
        )
        alpha = float(result.krippendorff_alpha)
    out["krippendorff_alpha"] = alpha
    return out


def _served(passes: Sequence[Mapping[str, Grade]]) -> list[dict[str, Any]]:
    counts: dict[tuple[Any, Any], int] = {}

    def walk(grade: Grade) -> None:
        judge = grade.info.get("judge")
        if isinstance(judge, Mapping):
            for entry in judge.get("served") or ():
                who = (entry.get("model"), entry.get("fingerprint"))
                counts[who] = counts.get(who, 0) + int(entry.get("answers", 1))
        for child in grade.children:
            walk(child)

    for grades in passes:
        for grade in grades.values():
            walk(grade)
    return [
        {"model": model, "fingerprint": fingerprint, "answers": answers}
        for (model, fingerprint), answers in counts.items()
    ]


def _plain_label(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value
