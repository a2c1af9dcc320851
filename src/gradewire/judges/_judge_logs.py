"""The log record shapes `BaseGrader.get_sample_tables` reads."""

from __future__ import annotations

from typing import TypedDict

__all__ = ["FailedJudgeLog", "SuccessJudgeLog"]


class _Scored(TypedDict):
    score: float
    prompt: str


class SuccessJudgeLog(_Scored, total=False):
    """A scored sample: ``{"score": float, "prompt": str, "reasoning": str (optional)}``."""

    reasoning: str


class _Failed(TypedDict):
    error: str


class FailedJudgeLog(_Failed, total=False):
    """A sample that could not be scored: ``{"error": str, "prompt": str (optional)}``."""

    prompt: str
