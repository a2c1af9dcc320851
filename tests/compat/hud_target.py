"""HUD's grader names, from ``hud.graders`` or ``gradewire.hud`` (see `compat_targets`)."""

from __future__ import annotations

from compat_targets import REAL

if REAL:
    from hud.graders import (
        BashGrader,
        EvaluationResult,
        Grader,
        LLMJudgeGrader,
        SubScore,
        _combine_subscores,
        combine,
        combine_all,
        combine_any,
        contains,
        contains_all,
        contains_any,
        exact_match,
        f1_score,
        normalize,
        numeric_match,
    )
    from hud.graders import __all__ as ALL_NAMES
else:
    from gradewire.hud import (
        BashGrader,
        EvaluationResult,
        Grader,
        LLMJudgeGrader,
        SubScore,
        _combine_subscores,
        combine,
        combine_all,
        combine_any,
        contains,
        contains_all,
        contains_any,
        exact_match,
        f1_score,
        normalize,
        numeric_match,
    )
    from gradewire.hud import __all__ as ALL_NAMES

__all__ = [
    "ALL_NAMES",
    "BashGrader",
    "EvaluationResult",
    "Grader",
    "LLMJudgeGrader",
    "SubScore",
    "_combine_subscores",
    "combine",
    "combine_all",
    "combine_any",
    "contains",
    "contains_all",
    "contains_any",
    "exact_match",
    "f1_score",
    "normalize",
    "numeric_match",
]
