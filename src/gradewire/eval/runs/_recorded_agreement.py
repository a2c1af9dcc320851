"""How a run graded again agrees with the results a source recorded, criterion by criterion.

An OpenAI Evals run's output items record each testing criterion's ``score`` and
``passed`` per item; ``gradewire eval`` grades the same items again with the same
``testing_criteria`` run locally. A deterministic grader (``string_check``,
``text_similarity`` other than ``cosine``, ``python``, a ``multi`` of those) should give
the recorded result on every item: each item where it does not is listed by id, since it
means the two implementations differ (or the data does). A model grader's verdicts vary
between calls, so its figures are given as they are, not held to every item.

Two results agree when their scores are equal within `SCORE_TOLERANCE` (absolute and
relative: libraries round differently) and their pass verdicts, where both have one, are
the same.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradewire.eval.runs._eval_run import EvalRun

__all__ = ["SCORE_TOLERANCE", "CriterionAgreement", "is_deterministic", "recorded_agreement"]

SCORE_TOLERANCE = 1e-6
"""Two scores agree when within this of each other, absolutely or relative to the larger."""

_DETERMINISTIC = frozenset({"string_check", "text_similarity", "python"})


def is_deterministic(spec: Mapping[str, Any]) -> bool:
    """Whether a grader spec gives the same result every time on the same sample.

    ``string_check`` and ``python`` do; ``text_similarity`` does except with ``cosine``
    (an embedding model's); ``multi`` does when every grader in it does; model graders
    (``score_model``, ``label_model``) and anything else are not taken to.
    """
    kind = spec.get("type")
    if kind == "multi":
        graders = spec.get("graders")
        inner = graders.values() if isinstance(graders, Mapping) else [graders]
        return all(isinstance(g, Mapping) and is_deterministic(g) for g in inner)
    if kind == "text_similarity":
        return spec.get("evaluation_metric") != "cosine"
    return kind in _DETERMINISTIC


@dataclass(frozen=True)
class CriterionAgreement:
    """One criterion graded again against its recorded results.

    Attributes:
        grader: The grader's key in the run graded again.
        criterion: The result's name in the recorded run.
        deterministic: The grader gives the same result every time (`is_deterministic`),
            so it should agree on every item.
        n: Items both the recorded run and the run graded again scored.
        agreeing: Of those, the items whose results agree.
        disagreeing: The ids of the others, in the run's order.
        examples: Up to five of them as ``(id, recorded score, score now)``.
        not_compared: Items one of the two did not score (an error, an abstention, no
            result), left out of ``n``.
    """

    grader: str
    criterion: str
    deterministic: bool
    n: int
    agreeing: int
    disagreeing: tuple[str, ...]
    examples: tuple[tuple[str, float, float], ...] = ()
    not_compared: int = 0

    def sentence(self) -> str:
        """The agreement in one sentence, naming the items that disagree."""
        name = (
            self.grader
            if self.grader == self.criterion
            else (f"{self.grader} (recorded as {self.criterion})")
        )
        head = f"{name}: agrees with the recorded result on {self.agreeing} of {self.n} items"
        if self.not_compared:
            head += f" ({self.not_compared} not scored by both, left out)"
        if not self.disagreeing:
            return head
        shown = ", ".join(self.disagreeing[:10])
        more = f", ... ({len(self.disagreeing) - 10} more)" if len(self.disagreeing) > 10 else ""
        examples = "; ".join(
            f"{sample}: recorded {recorded:.6g}, now {now:.6g}"
            for sample, recorded, now in self.examples
        )
        if self.deterministic:
            why = (
                "a deterministic grader should agree on every item: the implementations or "
                "the data differ"
            )
        else:
            why = "a model grader's verdicts vary between calls"
        return f"{head}; disagrees on {shown}{more} ({examples}); {why}"

    def to_dict(self) -> dict[str, Any]:
        """The agreement as JSON-ready data."""
        return {
            "grader": self.grader,
            "criterion": self.criterion,
            "deterministic": self.deterministic,
            "n": self.n,
            "agreeing": self.agreeing,
            "disagreeing": list(self.disagreeing),
            "examples": [list(e) for e in self.examples],
            "not_compared": self.not_compared,
            "score_tolerance": SCORE_TOLERANCE,
        }


def _criterion(key: str, recorded: Sequence[str]) -> str | None:
    """The recorded result's name for the grader ``key``: the same, or ``key-<suffix>``."""
    if key in recorded:
        return key
    close = [name for name in recorded if name.startswith(f"{key}-")]
    return close[0] if len(close) == 1 else None


def recorded_agreement(graded: EvalRun, recorded: EvalRun) -> list[CriterionAgreement]:
    """Per grader of ``graded`` that ``recorded`` has results of: how the two agree.

    Args:
        graded: The run graded again (``gradewire eval`` of the output items).
        recorded: The same items as the source recorded them
            (`gradewire.eval.runs._evals_output_items.read_evals_output_items`).
    """
    specs: dict[str, Mapping[str, Any]] = {}
    for spec in graded.config.get("graders", []):
        if isinstance(spec, Mapping):
            # A gradewire spec names its key; an OpenAI grader object its name.
            key = spec.get("key") if isinstance(spec.get("key"), str) else spec.get("name")
            if isinstance(key, str):
                specs[key] = spec
    out = []
    for key in graded.graders:
        criterion = _criterion(key, list(recorded.graders))
        if criterion is None:
            continue
        now, before = graded.scores(key), recorded.scores(criterion)
        passed_now, passed_before = graded.passes(key), recorded.passes(criterion)
        ids = [r.id for r in graded.records if r.id in now and r.id in before]
        held = {r.id for r in graded.records} & {r.id for r in recorded.records}
        disagreeing = [
            sample
            for sample in ids
            if not math.isclose(
                now[sample], before[sample], rel_tol=SCORE_TOLERANCE, abs_tol=SCORE_TOLERANCE
            )
            or (
                sample in passed_now
                and sample in passed_before
                and passed_now[sample] != passed_before[sample]
            )
        ]
        out.append(
            CriterionAgreement(
                grader=key,
                criterion=criterion,
                deterministic=is_deterministic(specs.get(key, {})),
                n=len(ids),
                agreeing=len(ids) - len(disagreeing),
                disagreeing=tuple(disagreeing),
                examples=tuple((s, before[s], now[s]) for s in disagreeing[:5]),
                not_compared=len(held) - len(ids),
            )
        )
    return out
