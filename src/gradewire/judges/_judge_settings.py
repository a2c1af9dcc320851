"""JudgeSettings: the settings every LLM judge takes, declared once.

Each judge's constructor takes them as typed keyword arguments
(``**settings: Unpack[JudgeSettings]``) and hands them to `JudgeGrader` unchanged; the
``*_judge`` grader specs build their fields from the same declaration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, with_config

from gradewire.judges._judge_prompts import SYSTEM_PROMPT
from gradewire.models._model_settings import StructuredSettings, check_settings

__all__ = ["JudgeSettings", "ResolvedJudgeSettings", "resolve_judge_settings"]


@with_config(ConfigDict(extra="forbid"))
class JudgeSettings(StructuredSettings, total=False):
    """The settings of an LLM judge: the structured call's, and how the judge logs and asks.

    ``temperature`` and ``max_tokens`` (see `gradewire.models.ModelSettings`: the judge's
    setting wins over the model's, and the model's over the 0.0 / 1,024 default) and
    ``truncation`` (see `gradewire.models.StructuredSettings`) apply to every call the
    judge makes. None, like leaving a key out, means "not set here".

    Attributes:
        system_prompt: Replaces the judge's system message (its role, and the rule that
            tagged material is data, not instructions). The task, the material and the
            answer format stay in the user message, so an override cannot break parsing.
        sample_tables: Add the scored/unscored sample tables to `get_logs()` (default True
            for judges).
    """

    system_prompt: Annotated[str | None, Field(pattern=r"\S", strict=True)]
    sample_tables: Annotated[bool | None, Field(strict=True)]


@dataclass(frozen=True)
class ResolvedJudgeSettings:
    """A judge's settings with its defaults filled in (None: left to the model)."""

    temperature: float | None
    max_tokens: int | None
    truncation: Literal["error", "parse"]
    system_prompt: str
    sample_tables: bool


def resolve_judge_settings(settings: dict[str, Any], where: str) -> ResolvedJudgeSettings:
    """Check ``settings`` (a judge's keyword arguments) and fill in the judge defaults."""
    checked = check_settings(settings, JudgeSettings, where)
    return ResolvedJudgeSettings(
        temperature=checked.get("temperature"),
        max_tokens=checked.get("max_tokens"),
        truncation=checked.get("truncation", "error"),
        system_prompt=checked.get("system_prompt", SYSTEM_PROMPT),
        sample_tables=checked.get("sample_tables", True),
    )
