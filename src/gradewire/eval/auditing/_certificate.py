"""A judge's certificate: its agreement with people, measured and bound to its identity.

`certify_judge` grades labelled samples with the judge, measures what the audits measure
(agreement with the labels with intervals, the confusion matrix, true and false pass
rates and the base rate; the flip rate over ``repeats`` passes with the judge's cache
bypassed; the position audit of a pairwise judge; the length audit) and writes it all as
a `JudgeCertificate` that names the judge's identity. A certificate holds for that
identity only: a judge whose model, prompt, criteria, examples or settings changed is
another judge, and `check_certificate` says so.

`require_certificate` makes a judge hold one: `run_eval` (and ``gradewire judge check``
on a run, for compare) warns or refuses when the judge's identity no longer matches its
certificate, or when the lower end of the agreement interval is below ``min_agreement``.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import numpy as np

from gradewire.core import BaseGrader, Grade, InvalidInputError, InvalidTypeError, StringThread
from gradewire.core._errors import GradewireError
from gradewire.core._logging_core import LoggingCore
from gradewire.eval.auditing._judge_audits import (
    _grade_all,
    _keyed,
    audit_length,
    audit_position,
)
from gradewire.judges import JudgePanel, PairwiseJudgeGrader
from gradewire.judges._identity import identity_facts, is_judge
from gradewire.stats import agreement
from gradewire.stats._mean_interval import wilson

__all__ = [
    "CERTIFICATE_VERSION",
    "CertificateError",
    "CertificateRequirement",
    "JudgeCertificate",
    "certify_judge",
    "check_certificate",
    "require_certificate",
    "requirement_problems",
]

CERTIFICATE_VERSION = 1
OnFailure = Literal["warn", "refuse"]


class CertificateError(GradewireError):
    """A judge that must hold a certificate does not (another identity, or below the bound)."""


@dataclass(frozen=True)
class JudgeCertificate:
    """What a judge's verdicts were worth against people, for one identity of the judge.

    Attributes:
        grader: The judge's key when certified.
        identity: The judge's identity (`gradewire.judges.identity_facts`); the
            certificate holds for it only.
        facts: The identity's facts, to say what changed when a judge no longer matches.
        created: When it was certified (UTC, ISO 8601).
        n: Labelled samples the judge scored (first pass).
        n_labelled: Labelled samples given.
        scale: The agreement scale (``"nominal"`` for 0/1 labels, else ``"interval"``).
        statistic: The agreement statistic bound by ``min_agreement``: Cohen's κ on a
            nominal scale, Krippendorff's α on an interval one.
        value: Its value.
        ci_low: The lower end of its interval (what ``min_agreement`` is compared with).
        ci_high: The upper end.
        confidence: The intervals' level.
        method: How the intervals were computed.
        agreement: Every agreement statistic with its interval (`Agreement.to_dict`).
        confusion: The confusion matrix (rows: people, columns: the judge) and its
            categories, on a nominal scale.
        rates: On 0/1 labels: ``base_rate`` (share of samples people pass),
            ``true_pass_rate`` (the judge passes what people pass), ``false_pass_rate``
            (the judge passes what people fail), ``judge_pass_rate``; each with
            ``n`` and a Wilson interval.
        retest: ``repeats`` passes with the cache bypassed: ``flip_rate`` (share of the
            samples scored in every pass whose score was not the same in all), with a
            Wilson interval, and Krippendorff's α of the passes.
        position: The position audit (pairwise judges), else None.
        length: The length audit, else None.
        served: The models that answered while certifying (model, fingerprint, answers).
    """

    grader: str
    identity: str
    facts: Mapping[str, Any]
    created: str
    n: int
    n_labelled: int
    scale: str
    statistic: str
    value: float
    ci_low: float
    ci_high: float
    confidence: float
    method: str
    agreement: Mapping[str, Any]
    confusion: Mapping[str, Any] | None
    rates: Mapping[str, Any] | None
    retest: Mapping[str, Any]
    position: Mapping[str, Any] | None = None
    length: Mapping[str, Any] | None = None
    served: Sequence[Mapping[str, Any]] = ()
    version: int = CERTIFICATE_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The certificate as JSON data (NaN as None)."""
        data: dict[str, Any] = _json_ready(asdict(self))
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeCertificate:
        """Read a certificate back.

        Raises:
            InvalidInputError: Not a certificate, or one of another version.
        """
        if not isinstance(data, Mapping) or "identity" not in data:
            raise InvalidInputError(
                "not a judge certificate (no 'identity'); make one with certify"
            )
        if data.get("version") != CERTIFICATE_VERSION:
            raise InvalidInputError(
                f"a certificate of version {data.get('version')!r}; this gradewire reads "
                f"version {CERTIFICATE_VERSION}: certify the judge again"
            )
        values = dict(data)
        for name in ("value", "ci_low", "ci_high"):
            values[name] = math.nan if values.get(name) is None else float(values[name])
        values["served"] = tuple(values.get("served") or ())
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise InvalidInputError(f"a certificate with unknown fields {unknown}")
        return cls(**values)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the certificate as JSON to ``path``."""
        file = Path(path)
        file.write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=True) + "\n")
        return file

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> JudgeCertificate:
        """Read a certificate file.

        Raises:
            InvalidInputError: Unreadable, not JSON, or not a certificate.
        """
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidInputError(f"cannot read the certificate {path}: {exc}") from None
        return cls.from_dict(data)

    def __str__(self) -> str:
        name = {"cohen_kappa": "Cohen's κ", "krippendorff_alpha": "Krippendorff's α"}.get(
            self.statistic, self.statistic
        )
        lines = [
            f"certificate of {self.grader!r} ({self.identity}), {self.created}",
            f"  agreement with people on {self.n} labelled samples: {name} "
            f"{_f(self.value)} ({self.confidence:.0%} interval [{_f(self.ci_low)}, "
            f"{_f(self.ci_high)}], {self.method})",
        ]
        raw = self.agreement.get("raw_agreement")
        if raw is not None:
            lines.append(f"  raw agreement {_f(raw)} (chance agreement not removed)")
        if self.rates:
            parts = []
            for key, label in (
                ("base_rate", "base rate (people pass)"),
                ("true_pass_rate", "true pass rate"),
                ("false_pass_rate", "false pass rate"),
            ):
                rate = self.rates.get(key) or {}
                parts.append(
                    f"{label} {_f(rate.get('rate'))} [{_f(rate.get('ci_low'))}, "
                    f"{_f(rate.get('ci_high'))}] of {rate.get('n', 0)}"
                )
            lines.append("  " + "; ".join(parts) + " (Wilson intervals)")
        retest = self.retest
        lines.append(
            f"  retest over {retest.get('repeats')} passes (cache bypassed): flip rate "
            f"{_f(retest.get('flip_rate'))} [{_f(retest.get('ci_low'))}, "
            f"{_f(retest.get('ci_high'))}] of {retest.get('n')} samples (Wilson)"
        )
        if self.position:
            lines.append(
                f"  position: consistency {_f(self.position.get('consistency'))} on "
                f"{self.position.get('n')} pairs"
            )
        if self.length:
            lines.append(
                f"  length: a neutral padding shifted the mean by {_f(self.length.get('shift'))} "
                f"[{_f(self.length.get('ci_low'))}, {_f(self.length.get('ci_high'))}]"
            )
        return "\n".join(lines)


@dataclass(frozen=True)
class CertificateRequirement:
    """That a judge holds a certificate, and what its agreement must be at least.

    Attributes:
        certificate: The certificate.
        min_agreement: The least lower end of the agreement interval (``ci_low``) that
            passes; None: any, only the identity must match.
        on_failure: ``"warn"`` (a warning line, grading goes on) or ``"refuse"`` (a
            `CertificateError` before anything is graded).
    """

    certificate: JudgeCertificate
    min_agreement: float | None = None
    on_failure: OnFailure = "warn"


def require_certificate(
    judge: BaseGrader[Any],
    certificate: JudgeCertificate | str | os.PathLike[str],
    *,
    min_agreement: float | None = None,
    on_failure: OnFailure = "warn",
) -> BaseGrader[Any]:
    """Make ``judge`` hold ``certificate``: `run_eval` checks it before grading.

    The requirement is not part of the judge's identity. Returns the judge.

    Raises:
        InvalidTypeError: ``judge`` is not a judge.
        InvalidInputError: A bad ``min_agreement`` or ``on_failure``.
    """
    if not is_judge(judge):
        raise InvalidTypeError(
            f"only a judge (a grader that calls a model) holds a certificate, not "
            f"{type(judge).__name__}"
        )
    if not isinstance(certificate, JudgeCertificate):
        certificate = JudgeCertificate.load(certificate)
    if min_agreement is not None and (
        isinstance(min_agreement, bool)
        or not isinstance(min_agreement, (int, float))
        or not -1.0 <= min_agreement <= 1.0
    ):
        raise InvalidInputError(
            f"min_agreement must be a number from -1 to 1, not {min_agreement!r}"
        )
    if on_failure not in ("warn", "refuse"):
        raise InvalidInputError(f"on_failure must be 'warn' or 'refuse', not {on_failure!r}")
    requirement = CertificateRequirement(
        certificate, None if min_agreement is None else float(min_agreement), on_failure
    )
    judge.certificate_requirement = requirement  # type: ignore[attr-defined]
    return judge


def check_certificate(
    identity: str | None,
    certificate: JudgeCertificate,
    min_agreement: float | None = None,
    *,
    facts: Mapping[str, Any] | None = None,
    what: str = "the judge",
) -> list[str]:
    """Why ``certificate`` does not vouch for a judge of ``identity`` (empty: it does).

    Args:
        identity: The judge's identity now (None: unknown, which does not match).
        certificate: Its certificate.
        min_agreement: The least lower end of the agreement interval; None: any.
        facts: The judge's identity facts now, to say what changed.
        what: How the judge is named in the sentences.
    """
    problems = []
    if identity != certificate.identity:
        changed = _changed(certificate.facts, facts) if facts is not None else []
        detail = f" (changed: {', '.join(changed[:6])})" if changed else ""
        problems.append(
            f"{what} is {identity or 'of unknown identity'}, not the {certificate.identity} "
            f"its certificate of {certificate.created} measured{detail}: certify it again"
        )
    if min_agreement is not None:
        low = certificate.ci_low
        if not math.isfinite(low) or low < min_agreement:
            problems.append(
                f"{what}'s agreement with people is {certificate.statistic} "
                f"{_f(certificate.value)} with a {certificate.confidence:.0%} interval from "
                f"{_f(low)}: its lower end is below min_agreement={min_agreement:g}"
            )
    return problems


def requirement_problems(judge: BaseGrader[Any]) -> tuple[CertificateRequirement | None, list[str]]:
    """The certificate requirement of ``judge`` (if any) and why it is not met."""
    requirement = getattr(judge, "certificate_requirement", None)
    if not isinstance(requirement, CertificateRequirement):
        return None, []
    identity = getattr(judge, "identity", None)
    problems = check_certificate(
        identity if isinstance(identity, str) else None,
        requirement.certificate,
        requirement.min_agreement,
        facts=identity_facts(judge),
        what=f"judge {judge.grader_key!r}",
    )
    return requirement, problems


def _changed(
    before: Mapping[str, Any], after: Mapping[str, Any] | None, prefix: str = ""
) -> list[str]:
    if after is None:
        return []
    out = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if a == b:
            continue
        path = f"{prefix}{key}"
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out.extend(_changed(a, b, f"{path}.") or [path])
        else:
            out.append(path)
    return out


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
        agreement=_json_ready(result.to_dict()),
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


def _json_ready(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, np.generic):
        return _json_ready(value.item())
    if isinstance(value, np.ndarray):
        return _json_ready(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def _f(value: object) -> str:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    return f"{value:.3f}"
