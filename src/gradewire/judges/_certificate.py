"""A judge's certificate as data: what it says, how it is read and written, and its check.

A `JudgeCertificate` (made by `gradewire.eval.certify_judge`) holds a judge's agreement with
people and the identity of the judge it measured. `check_certificate` says why it does not
vouch for a judge (another identity, or an agreement interval whose lower end is below a
bound); `require_certificate` makes a judge hold one. `gate_certificates` is the one check
of that requirement, called before anything is graded by `run_eval` and when a reward is
built (`RewardLogger`, the TRL, veRL and OpenRLHF adapters, the reward server): it warns
or refuses with `CertificateError`, as the requirement's ``on_failure`` says.

It lives with the judges, below every driver, so eval and the reward adapters (which may
not import one another) share it.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from gradewire.core import BaseGrader, InvalidInputError, InvalidTypeError
from gradewire.core._errors import GradewireError
from gradewire.judges._identity import identity_facts, is_judge

__all__ = [
    "CERTIFICATE_VERSION",
    "CertificateError",
    "CertificateRequirement",
    "JudgeCertificate",
    "check_certificate",
    "gate_certificates",
    "json_ready",
    "require_certificate",
    "requirement_problems",
]

logger = logging.getLogger("gradewire")

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
        data: dict[str, Any] = json_ready(asdict(self))
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
    """Make ``judge`` hold ``certificate``, checked before it grades anything.

    `run_eval` checks it before grading, and so do the reward adapters when the reward is
    built (`RewardLogger`, ``trl_reward``, ``verl_compute_score``,
    ``openrlhf_reward_func``, the reward server), once, not at every step; a judge inside
    a `CombinedGrader` or a `JudgePanel` is checked too. The requirement is not part of
    the judge's identity. Returns the judge.

    Args:
        judge: The judge.
        certificate: Its certificate, or the path of a certificate file.
        min_agreement: The least lower end of the certificate's agreement interval
            (``ci_low``); None: any, only the identity must match.
        on_failure: ``"warn"`` (a warning is logged, grading goes on) or ``"refuse"``
            (`CertificateError` before anything is graded).

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


def gate_certificates(graders: Iterable[BaseGrader[Any] | None], *, where: str) -> None:
    """Check every judge among ``graders`` that must hold a certificate, before grading.

    The one check of `require_certificate`: eval calls it before it grades, the reward
    adapters when the reward is built. Judges inside a `CombinedGrader` (``graders``) or a
    `JudgePanel` (``judges``) are checked too. A judge whose requirement says ``"warn"``
    logs each problem as a warning on the ``gradewire`` logger; one that says
    ``"refuse"`` raises.

    Args:
        graders: The graders about to grade (None entries are skipped, e.g. no gold).
        where: Who checks, for the messages (``"eval"``, ``"trl_reward"``...).

    Raises:
        CertificateError: A judge with ``on_failure="refuse"`` whose certificate does not
            vouch for it (another identity, or a lower end below ``min_agreement``).
    """
    refused: list[str] = []
    seen: set[int] = set()
    for grader in _with_parts(graders, seen):
        requirement, problems = requirement_problems(grader)
        if requirement is None or not problems:
            continue
        if requirement.on_failure == "refuse":
            refused.extend(problems)
        else:
            for problem in problems:
                logger.warning("gradewire %s: %s", where, problem)
    if refused:
        raise CertificateError(
            "; ".join(refused) + f" (the judge was required to hold its certificate with "
            f"on_failure='refuse'; {where} graded nothing: certify the judge as it is now, or "
            "restore the certified one)"
        )


def _with_parts(
    graders: Iterable[BaseGrader[Any] | None], seen: set[int]
) -> Iterator[BaseGrader[Any]]:
    """Each grader and, depth first, the graders it is made of (each once)."""
    for grader in graders:
        if not isinstance(grader, BaseGrader) or id(grader) in seen:
            continue
        seen.add(id(grader))
        yield grader
        for name in ("graders", "judges"):
            parts = getattr(grader, name, None)
            if isinstance(parts, (list, tuple)):
                yield from _with_parts(parts, seen)


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


def json_ready(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, np.generic):
        return json_ready(value.item())
    if isinstance(value, np.ndarray):
        return json_ready(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def _f(value: object) -> str:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    return f"{value:.3f}"
