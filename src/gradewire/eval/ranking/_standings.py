"""What a leaderboard holds: per grader, each run's standing and every pair's difference.

Plain immutable data with a ``to_dict`` for ``--json``; the statistics are made in
`gradewire.eval.ranking._ranks`, the pairing of runs in `gradewire.eval.ranking._leaderboard`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GraderBoard", "Leaderboard", "PairResult", "RunStanding"]


def _number(value: float | None) -> float | None:
    """A figure for JSON: NaN and infinities are null (JSON has no NaN)."""
    if value is None or not math.isfinite(value):
        return None
    return value


@dataclass(frozen=True)
class RunStanding:
    """One run on one grader: its mean with an interval, the ranks it could hold, its tier.

    Attributes:
        run: The run's name (unique within the leaderboard).
        mean: Mean score over the samples every run scored.
        low: Lower end of the mean's interval (NaN: none; ``method`` says why).
        high: Upper end.
        method: The mean interval's method in words (`gradewire.stats._mean_interval`).
        rank_low: The best rank the run could hold (1 is first): one more than the
            runs separably better than it.
        rank_high: The worst rank it could hold: the runs minus those separably worse.
        tier: 1 for runs no run is separably better than; else one more than the highest
            tier of the runs separably better. No two runs of one tier are separable.
        caveat: Why the mean's interval may cover less than it says, or None.
        pass_rate: The share of these samples the run passed, for graders with a pass
            rule (None: no pass rule).
    """

    run: str
    mean: float
    low: float
    high: float
    method: str
    rank_low: int
    rank_high: int
    tier: int
    caveat: str | None = None
    pass_rate: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The standing as JSON-ready data."""
        return {
            "run": self.run,
            "mean": _number(self.mean),
            "interval": [_number(self.low), _number(self.high)],
            "method": self.method,
            "rank_low": self.rank_low,
            "rank_high": self.rank_high,
            "tier": self.tier,
            "caveat": self.caveat,
            "pass_rate": _number(self.pass_rate),
        }


@dataclass(frozen=True)
class PairResult:
    """Two runs on the same samples: ``a``'s mean minus ``b``'s, with its test.

    Attributes:
        a: The run listed first (the higher mean, or the earlier run on a tie).
        b: The other run.
        difference: ``mean(a - b)`` over the paired samples.
        low: Lower end of its interval (not adjusted for the number of pairs).
        high: Upper end.
        p_value: Two-sided p-value of "no difference", from the method that made the
            interval (NaN: no test; ``note`` says why).
        p_value_adjusted: The p-value adjusted for the number of pairs of the grader.
        separable: ``p_value_adjusted`` is below ``1 - confidence``.
        method: The test's and interval's method in words.
        note: Why the figures may be less reliable, or why there are none.
    """

    a: str
    b: str
    difference: float
    low: float
    high: float
    p_value: float
    p_value_adjusted: float
    separable: bool
    method: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The pair as JSON-ready data."""
        return {
            "a": self.a,
            "b": self.b,
            "difference": _number(self.difference),
            "interval": [_number(self.low), _number(self.high)],
            "p_value": _number(self.p_value),
            "p_value_adjusted": _number(self.p_value_adjusted),
            "separable": self.separable,
            "method": self.method,
            "note": self.note,
        }


@dataclass(frozen=True)
class GraderBoard:
    """One grader's leaderboard (over all shared samples, or one slice of them).

    Attributes:
        grader: The grader key.
        n_samples: Samples every run of the board scored (the means and pairs use these).
        runs: The runs' standings, best mean first.
        pairs: Every pair of runs, in the order of ``runs``.
        confidence: Level of the intervals; a pair is separable when its adjusted p-value
            is below ``1 - confidence``.
        adjustment: How the p-values were adjusted, in words.
        rank_method: How the rank intervals were made, in words.
        not_scored: Shared samples some run of the board did not score (left out).
        missing_runs: Runs that have no such grader.
        n_clusters: Clusters among the samples (None: unclustered).
        slice: The ``by`` field's value this board is of (None: every shared sample).
        notes: What the reader should know about the board as a whole.
        slices: The board per value of the ``by`` field.
        judge_drift: One sentence per way the runs' verdicts came from different judges
            or served models (compare's sentences, over many runs): their scores may
            differ because the judge did, not the runs.
    """

    grader: str
    n_samples: int
    runs: tuple[RunStanding, ...]
    pairs: tuple[PairResult, ...]
    confidence: float
    adjustment: str
    rank_method: str
    not_scored: tuple[str, ...] = ()
    missing_runs: tuple[str, ...] = ()
    n_clusters: int | None = None
    slice: str | None = None
    notes: tuple[str, ...] = ()
    slices: tuple[GraderBoard, ...] = ()
    judge_drift: tuple[str, ...] = ()

    @property
    def leader(self) -> RunStanding | None:
        """The run with the best mean (None: no run)."""
        return self.runs[0] if self.runs else None

    def separable_from_leader(self) -> list[str]:
        """The runs separably worse than the leader."""
        leader = self.leader
        if leader is None:
            return []
        return [
            p.b if p.a == leader.run else p.a
            for p in self.pairs
            if p.separable and leader.run in (p.a, p.b)
        ]

    def summary(self) -> str:
        """One sentence: how many runs the leader is separable from, and what ties it."""
        leader = self.leader
        if leader is None:
            return "no run has this grader"
        if len(self.runs) == 1:
            return f"{leader.run} is the only run with this grader: nothing to rank"
        if self.n_samples < 2:
            return f"{self.n_samples} sample(s) scored by every run: nothing to rank"
        separable = self.separable_from_leader()
        others = len(self.runs) - 1
        tied = [r.run for r in self.runs if r.tier == leader.tier and r.run != leader.run]
        sentence = (
            f"{len(separable)} of the {others} other runs are separably worse than the "
            f"leader {leader.run} (adjusted p < {1 - self.confidence:.2g})"
        )
        if tied:
            sentence += (
                f"; {len(tied)} {'shares' if len(tied) == 1 else 'share'} its tier: "
                "not separable from any run above"
            )
        return sentence

    def to_dict(self) -> dict[str, Any]:
        """The board as JSON-ready data."""
        out: dict[str, Any] = {
            "grader": self.grader,
            "n_samples": self.n_samples,
            "confidence": self.confidence,
            "adjustment": self.adjustment,
            "rank_method": self.rank_method,
            "summary": self.summary(),
            "runs": [r.to_dict() for r in self.runs],
            "pairs": [p.to_dict() for p in self.pairs],
            "not_scored": list(self.not_scored),
            "missing_runs": list(self.missing_runs),
            "n_clusters": self.n_clusters,
            "notes": list(self.notes),
            "judge_drift": list(self.judge_drift),
        }
        if self.slice is not None:
            out["slice"] = self.slice
        if self.slices:
            out["slices"] = [s.to_dict() for s in self.slices]
        return out


@dataclass(frozen=True)
class Leaderboard:
    """Many runs compared on the samples they share, grader by grader.

    Attributes:
        runs: The runs' names, in the order given.
        graders: One board per grader any run has, in the runs' grader order.
        n_shared: Samples every run holds (the boards pair on these).
        unshared: Per run, the ids it holds that some other run lacks (left out).
        adjustment: How the p-values were adjusted, in words.
        confidence: Level of the intervals and of separability.
        cluster_key: The metadata field samples were clustered by (None: independent).
        by: The metadata field the boards are sliced by (None: not sliced).
        mismatched_prompts: Shared ids whose prompts differ between runs (only when
            allowed; else the leaderboard is refused).
        changed_graders: Graders whose spec differs between runs (only when allowed).
    """

    runs: tuple[str, ...]
    graders: tuple[GraderBoard, ...]
    n_shared: int
    unshared: dict[str, tuple[str, ...]] = field(default_factory=dict)
    adjustment: str = ""
    confidence: float = 0.95
    cluster_key: str | None = None
    by: str | None = None
    mismatched_prompts: tuple[str, ...] = ()
    changed_graders: tuple[str, ...] = ()

    def board(self, grader: str) -> GraderBoard:
        """The board of ``grader``.

        Raises:
            KeyError: No run has that grader.
        """
        for board in self.graders:
            if board.grader == grader:
                return board
        raise KeyError(grader)

    def __repr__(self) -> str:
        # The dataclass repr would print every pair of every board.
        leaders = "; ".join(
            f"{repr(g.grader)[1:-1]}: {repr(g.leader.run)[1:-1]}"
            for g in self.graders[:8]
            if g.leader is not None
        )
        more = f"; ... {len(self.graders) - 8} more" if len(self.graders) > 8 else ""
        return (
            f"Leaderboard({len(self.runs)} runs on {self.n_shared} shared samples; "
            f"leaders {leaders or 'none'}{more})"
        )

    def _repr_html_(self) -> str:
        from gradewire.eval.ranking._board_view import render_leaderboard_view

        return render_leaderboard_view(self)

    def to_dict(self) -> dict[str, Any]:
        """The leaderboard as JSON-ready data (``gradewire leaderboard --json``)."""
        return {
            "runs": list(self.runs),
            "n_shared": self.n_shared,
            "unshared": {run: list(ids) for run, ids in self.unshared.items()},
            "adjustment": self.adjustment,
            "confidence": self.confidence,
            "cluster_key": self.cluster_key,
            "by": self.by,
            "mismatched_prompts": list(self.mismatched_prompts),
            "changed_graders": list(self.changed_graders),
            "graders": [g.to_dict() for g in self.graders],
        }
