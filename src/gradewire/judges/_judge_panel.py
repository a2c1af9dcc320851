"""JudgePanel: several judges grade each sample, their verdicts folded into one grade."""

from __future__ import annotations

import asyncio
import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from gradewire.core._errors import (
    GradingError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
)
from gradewire.core._failure_records import attach_log_fields
from gradewire.core._grade import Grade
from gradewire.core._grader import BaseGrader, LogValue
from gradewire.core._log_state import LogState, Stats
from gradewire.core._thread import StringThread
from gradewire.judges._identity import judge_identity, mark_changed
from gradewire.stats._agreement import agreement

__all__ = ["Aggregate", "JudgePanel", "TieBreak"]

Aggregate = Literal["majority", "mean", "median", "min", "max"]
TieBreak = Literal["abstain", "low", "high", "mean"]
_AGGREGATES = ("majority", "mean", "median", "min", "max")
_TIE_BREAKS = ("abstain", "low", "high", "mean")
# The per-sample record field that keeps each judge's verdict, for the panel's α.
_VERDICTS = "verdicts"


class JudgePanel(BaseGrader):
    """Several judges grade each sample; the panel folds their verdicts into one grade.

    A panel of small judges is cheaper than one large judge and often closer to people
    (Verga et al. 2024, "Replacing Judges with Juries"). Every judge grades the sample
    concurrently; the panel's value is the ``aggregate`` of the verdicts that came in:

    - ``"majority"``: the value most judges gave (exact values, so use it with judges
      whose values are a few levels, such as PASS/FAIL judges). When two or more values
      share the top count, ``tie_break`` decides: ``"abstain"`` (the default: the sample
      abstains, with the tie in the reason), ``"low"`` or ``"high"`` (the lowest or
      highest of the tied values) or ``"mean"`` (their mean).
    - ``"mean"``, ``"median"``, ``"min"``, ``"max"`` of the verdicts.

    A judge that fails or abstains on a sample gives no verdict; the panel still grades
    the sample when at least ``quorum`` judges gave one: never a 0 for verdicts that did
    not come. Below the quorum, the sample abstains (``score/abstained_count``) when the
    judges that abstained could have made up the quorum, and is otherwise an error
    (`GradingError`, ``score/error_count``, caused by the first judge's failure): the
    failures alone kept it from a verdict, as when every judge fails because the judge
    server is down, so a trainer's fail-fast sees it. Either way the message names each
    judge's failure or abstention.

    The grade's children are the judges' grades, each with its verdict and reasoning;
    ``info`` holds ``verdicts`` (judge key → value), ``failed`` and ``abstained``
    (judge key → message) and ``tie`` (whether a majority tie was broken).

    Logs, besides ``score`` and each judge's own logs under ``<judge key>/``:
    ``<judge key>/lean`` per sample (the judge's verdict minus the panel's value, so its
    mean is how far the judge leans above or below the panel), ``judges_answered``, and
    ``krippendorff_alpha``: the agreement of the judges over the samples logged since the
    logs were last cleared (interval level, which for PASS/FAIL judges equals the nominal
    α), one value per logging window. A drifting judge shows as a growing lean and a
    falling α. When log states of several ranks are merged, ``krippendorff_alpha/mean``
    is the mean of the ranks' α (its ``count`` says over how many windows), not the α of
    the pooled samples.

    Example:
        >>> panel = JudgePanel(
        ...     "helpful",
        ...     [BinaryJudgeGrader(f"judge_{i}", model, "Answers the question") for i in range(3)],
        ...     aggregate="majority",
        ... )  # doctest: +SKIP
    """

    def __init__(
        self,
        grader_key: str,
        judges: Sequence[BaseGrader[Any]],
        *,
        aggregate: Aggregate = "majority",
        quorum: int | None = None,
        tie_break: TieBreak = "abstain",
        sample_tables: bool = False,
        max_log_records: int | None = None,
    ) -> None:
        """Set up the panel.

        Args:
            grader_key: The panel's logical name.
            judges: Two graders or more (usually LLM judges), each with a distinct key.
            aggregate: How the verdicts fold into one value (see the class docstring).
            quorum: The fewest verdicts that still grade a sample, from 1 to the number of
                judges; default a strict majority of the panel (2 of 3, 3 of 4).
            tie_break: What a tie under ``aggregate="majority"`` gives (see the class
                docstring); ignored by the other aggregates.
            sample_tables: Add the scored/unscored sample tables to `get_logs()`.
            max_log_records: Bound on the records kept by the panel and by each judge
                that has none of its own (see `BaseGrader.max_log_records`).
        """
        super().__init__(grader_key, sample_tables=sample_tables)
        if isinstance(judges, (str, bytes, Mapping)) or not isinstance(judges, Sequence):
            raise InvalidTypeError("judges must be a list of graders")
        self.judges: tuple[BaseGrader[Any], ...] = tuple(judges)
        keys: set[str] = set()
        for judge in self.judges:
            if not isinstance(judge, BaseGrader):
                raise InvalidTypeError(
                    f"a panel's judges must be graders (BaseGrader), not {type(judge).__name__}"
                )
            if judge.grader_key in keys:
                raise InvalidInputError(
                    f"two judges share the key {judge.grader_key!r}; give each a distinct "
                    "grader_key so their verdicts and logs do not mix"
                )
            keys.add(judge.grader_key)
        if len(self.judges) < 2:
            raise InvalidInputError(
                f"a panel needs at least two judges, not {len(self.judges)}; use the judge "
                "itself as the grader"
            )
        if aggregate not in _AGGREGATES:
            raise InvalidInputError(
                f"aggregate must be one of {', '.join(map(repr, _AGGREGATES))}, not {aggregate!r}"
            )
        if tie_break not in _TIE_BREAKS:
            raise InvalidInputError(
                f"tie_break must be one of {', '.join(map(repr, _TIE_BREAKS))}, not {tie_break!r}"
            )
        size = len(self.judges)
        if quorum is None:
            quorum = size // 2 + 1
        if isinstance(quorum, bool) or not isinstance(quorum, int) or not 1 <= quorum <= size:
            raise InvalidInputError(
                f"quorum must be a whole number of judges from 1 to {size}, not {quorum!r}"
            )
        self.aggregate: Aggregate = aggregate
        self.quorum = quorum
        self.tie_break: TieBreak = tie_break
        self.max_log_records = max_log_records

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        mark_changed(self, name)

    @property
    def identity(self) -> str:
        """Everything that decides the panel's verdicts, as one stable string.

        Its judges' identities, the aggregate, quorum and tie break (see `identity_facts`).
        """
        return judge_identity(self)

    def _sub_graders(self) -> tuple[BaseGrader[Any], ...]:
        return getattr(self, "judges", ())

    async def grade(self, sample: StringThread) -> Grade:
        """Grade with every judge concurrently and fold their verdicts."""
        outcomes = await asyncio.gather(*(judge._attempt(sample) for judge in self.judges))
        verdicts: dict[str, Grade] = {}
        failed: dict[str, str] = {}
        abstained: dict[str, str] = {}
        for judge, outcome in zip(self.judges, outcomes, strict=True):
            key = judge.grader_key
            if isinstance(outcome, Grade):
                verdicts[key] = outcome
            elif isinstance(outcome, IgnoreGradeException):
                abstained[key] = outcome.reason
            else:
                failed[key] = f"{type(outcome).__name__}: {outcome}"
        values = {key: grade.value for key, grade in verdicts.items()}
        if len(verdicts) < self.quorum:
            missing = [f"{k} failed ({why})" for k, why in failed.items()]
            missing += [f"{k} abstained ({why})" for k, why in abstained.items()]
            reason = (
                f"{len(verdicts)} of {len(self.judges)} judges gave a verdict, fewer than the "
                f"quorum of {self.quorum}: {'; '.join(missing)}"
            )
            if len(verdicts) + len(abstained) < self.quorum:
                # Even had every abstaining judge answered, the failures alone keep the
                # quorum out of reach: the sample failed (a judge server that is down must
                # reach the trainers' fail-fast), it did not abstain.
                first = next(
                    outcome
                    for outcome in outcomes
                    if isinstance(outcome, Exception)
                    and not isinstance(outcome, IgnoreGradeException)
                )
                raise self._failed(reason, values) from first
            raise self._abstain(reason, values)
        value, tie = self._panel_value(list(values.values()))
        if value is None:
            shown = ", ".join(f"{k}: {v:g}" for k, v in values.items())
            raise self._abstain(
                f"the judges are split with no majority ({shown}) and tie_break='abstain'",
                values,
            )
        reasoning = "\n".join(
            [f"{k}: {g.value:g} - {g.reasoning}" for k, g in verdicts.items()]
            + [f"{k}: failed - {why}" for k, why in failed.items()]
            + [f"{k}: abstained - {why}" for k, why in abstained.items()]
        )
        log: dict[str, Any] = {
            "score": value,
            "judges_answered": len(verdicts),
            **{f"{key}/lean": verdict - value for key, verdict in values.items()},
            _VERDICTS: values,
        }
        if self.sample_tables:
            log["prompt"] = sample.last_user_content() or ""
            log["completion"] = sample.completion() or ""
            log["reasoning"] = reasoning
        self.add_log(log)
        info = {
            "aggregate": self.aggregate,
            "verdicts": values,
            "failed": failed,
            "abstained": abstained,
            "tie": tie,
            # Its judges' grades (the children) say which model answered each.
            "judge": {"identity": self.identity},
        }
        return Grade(value, self.grader_key, reasoning, children=verdicts.values(), info=info)

    def _abstain(self, reason: str, values: Mapping[str, float]) -> IgnoreGradeException:
        exc = IgnoreGradeException(reason)
        # The verdicts that did come still count in the panel's α.
        attach_log_fields(exc, {"judges_answered": len(values), _VERDICTS: dict(values)})
        return exc

    def _failed(self, reason: str, values: Mapping[str, float]) -> GradingError:
        exc = GradingError(f"panel {self.grader_key!r}: {reason}")
        attach_log_fields(exc, {"judges_answered": len(values), _VERDICTS: dict(values)})
        return exc

    def _panel_value(self, values: list[float]) -> tuple[float | None, bool]:
        """The panel's value (None: an unbroken tie) and whether a tie was broken."""
        if self.aggregate == "mean":
            return math.fsum(values) / len(values), False
        if self.aggregate == "median":
            return float(statistics.median(values)), False
        if self.aggregate == "min":
            return min(values), False
        if self.aggregate == "max":
            return max(values), False
        counts = Counter(values).most_common()
        top = counts[0][1]
        tied = sorted(v for v, c in counts if c == top)
        if len(tied) == 1:
            return tied[0], False
        if self.tie_break == "abstain":
            return None, True
        if self.tie_break == "low":
            return tied[0], True
        if self.tie_break == "high":
            return tied[-1], True
        return math.fsum(tied) / len(tied), True

    def _own_log_state(self) -> LogState:
        state = super()._own_log_state()
        alpha = self.alpha()
        if alpha is None or not state.stats:
            return state
        return LogState({**state.stats, "krippendorff_alpha": Stats.of([alpha])}, state.counts)

    def alpha(self) -> float | None:
        """Krippendorff's α of the judges over the samples logged since the last clear.

        With `max_log_records` set, over the records still kept (the newest).

        None when fewer than two samples got two verdicts or more, or when α is undefined
        (every verdict the same value).
        """
        raters: dict[str, dict[int, float]] = {judge.grader_key: {} for judge in self.judges}
        for index, record in enumerate(self._logs):
            verdicts = record.get(_VERDICTS) if isinstance(record, Mapping) else None
            if isinstance(verdicts, Mapping):
                for key, value in verdicts.items():
                    if key in raters:
                        raters[key][index] = value
        rated = Counter(index for labels in raters.values() for index in labels)
        if sum(1 for count in rated.values() if count >= 2) < 2:
            return None
        first, second, *more = raters.values()
        result = agreement(
            first,
            second,
            *more,
            scale="interval",
            statistics=["krippendorff_alpha"],
            n_resamples=0,
        )
        alpha = result.krippendorff_alpha
        return alpha if math.isfinite(alpha) else None

    def log_state(self, *, clear: bool = False) -> LogState:
        """The panel's state merged with every judge's, under ``<judge key>/``."""
        state = self._own_log_state()
        for judge in self.judges:
            state = state.merge(judge.log_state().prefixed(judge.grader_key))
        if clear:
            self.clear_logs()
        return state

    def get_logs(self, clear: bool = False, log_all_samples: bool = False) -> dict[str, LogValue]:
        """The panel's logs, then each judge's under ``<judge key>/``."""
        logs = super().get_logs(clear=False, log_all_samples=log_all_samples)
        for judge in self.judges:
            for key, value in judge.get_logs(clear=False, log_all_samples=log_all_samples).items():
                logs[f"{judge.grader_key}/{key}"] = value
        if clear:
            self.clear_logs()
        return logs

    def clear_logs(self) -> None:
        """Forget the panel's records and every judge's."""
        super().clear_logs()
        for judge in getattr(self, "judges", ()):
            judge.clear_logs()

    def __repr__(self) -> str:
        return (
            f"JudgePanel(grader_key={self.grader_key!r}, "
            f"judges={[j.grader_key for j in self.judges]!r}, aggregate={self.aggregate!r}, "
            f"quorum={self.quorum}, tie_break={self.tie_break!r})"
        )
