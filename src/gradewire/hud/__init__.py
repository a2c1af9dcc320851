"""HUD's grader API on gradewire: only the import changes (``from gradewire.hud import X``).

HUD calls graders as class methods, ``await BashGrader.grade(weight=1.0, command=...)``;
gradewire's own graders are instances that score a `StringThread`. This module gives HUD's
style, built on the native graders, so a HUD task runs unchanged. It is not imported by
``import gradewire``.

Example:
    >>> from gradewire.hud import BashGrader, LLMJudgeGrader, SubScore, combine, exact_match
    >>> result = await combine(  # doctest: +SKIP
    ...     BashGrader.grade(weight=0.5, command="pytest -q"),
    ...     LLMJudgeGrader.grade(weight=0.3, answer=answer, criteria=["Matches the spec"]),
    ...     SubScore(name="format", value=exact_match(answer, "42"), weight=0.2),
    ... )

Where this module differs from HUD, and from the native graders:

- ``BashGrader``: a command that cannot run at all (no ``/bin/bash``, a missing ``cwd``)
  scores 0.0 with the reason in ``info["error"]``, as in HUD, and exit codes 126/127
  ("cannot execute", "command not found") are an ordinary failure, 0.0. The native
  `gradewire.BashGrader` is stricter: it raises `GradingError` for all of these, so
  ``grade_many`` counts an error instead of a zero reward. Use it when a broken grading
  environment must not pass as a failed answer.
- ``LLMJudgeGrader`` calls an OpenAI-compatible server instead of HUD's gateway: the
  ``model`` name (default ``"claude-haiku-4-5"``, so the server must serve that name, e.g.
  a LiteLLM or OpenRouter gateway) at ``$OPENAI_BASE_URL`` with ``$OPENAI_API_KEY``. Set
  ``$GRADEWIRE_JUDGE_BASE_URL`` (and ``$GRADEWIRE_JUDGE_API_KEY``) to send the judge calls
  elsewhere than an agent that already uses ``$OPENAI_BASE_URL``; the OpenAI key is then
  never sent. Or pass ``judge=`` any `ChatModel`. Calls to one endpoint share one client,
  so they share its concurrency limit and connections.
- A judge that cannot answer raises (`ModelCallError`, `OutputParserException` after one
  repair request), as HUD does on a failed call; HUD's guess of a verdict from text that
  is not JSON is not made. Empty ``criteria``, or only negative weights, raise
  `InvalidInputError` (HUD scores 0.0, resp. rates a penalties-only rubric).
- The built-in graders refuse keyword arguments they do not take (HUD ignores them, so a
  misspelt ``timeout=`` silently ran with the 600 s default).
- A `Grader` subclass that sets no ``name`` is named after its class (HUD: ``"BaseGrader"``).
- `SubScore` keeps details in ``info`` (HUD's page), a leaf's ``children`` is ``()``
  rather than None, and there is no deprecated ``score`` alias of ``value``; `combine`
  does not warn when positive weights do not sum to 1.
"""

from __future__ import annotations

from gradewire.core._combine import combine, combine_all, combine_any
from gradewire.core._evaluation_result import EvaluationResult
from gradewire.core._subscore import SubScore
from gradewire.helpers._numeric import numeric_match
from gradewire.helpers._text import (
    contains,
    contains_all,
    contains_any,
    exact_match,
    f1_score,
    normalize,
)
from gradewire.hud._bash import BashGrader
from gradewire.hud._grader import Grader
from gradewire.hud._judge import LLMJudgeGrader

__all__ = [
    "BashGrader",
    "EvaluationResult",
    "Grader",
    "LLMJudgeGrader",
    "SubScore",
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
