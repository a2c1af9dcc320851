"""HUD's grader API on gradewire: only the import changes (``from gradewire.hud import X``).

HUD calls graders as class methods, ``await BashGrader.grade(weight=1.0, command=...)``;
gradewire's own graders are instances that score a `StringThread`. This module gives HUD's
style, built on the native graders, so a HUD task runs unchanged and keeps what it returns.
It is not imported by ``import gradewire``; each name is imported when first used.

`SubScore` and `EvaluationResult` are HUD's pydantic models, field for field: the same
defaults, validation (a pydantic ``ValidationError``), ``metadata`` alias, mutability,
extra-field rules, warnings, ``model_dump*`` / ``model_validate*`` / ``model_copy`` /
``to_summary`` output, and lists where HUD has lists. Where HUD is installed they derive
from HUD's own models (the first use of either imports ``hud``), so HUD's task
runner, which forwards a result's fields to the platform only for its own
``EvaluationResult``, forwards subscores, content, info and ``isError`` of these too.
``from_grade`` / ``to_grade`` convert to and from the native `gradewire.Grade` tree, and
`combine` takes native grades (or a native grader's ``grade()`` call) beside subscores.

Example:
    >>> from gradewire.hud import BashGrader, LLMJudgeGrader, SubScore, combine, exact_match
    >>> result = await combine(  # doctest: +SKIP
    ...     BashGrader.grade(weight=0.5, command="pytest -q"),
    ...     LLMJudgeGrader.grade(weight=0.3, answer=answer, criteria=["Matches the spec"]),
    ...     SubScore(name="format", value=exact_match(answer, "42"), weight=0.2),
    ... )

Where this module deliberately differs from HUD (hud 0.6.21), and why:

- ``BashGrader`` and ``LLMJudgeGrader`` refuse keyword arguments they do not take (HUD
  ignores them, so a misspelt ``timeout=`` silently ran with the 600 s default).
- ``BashGrader``: when the command cannot run at all, ``info["stderr"]`` and
  ``info["error"]`` give the real reason (HUD says "/bin/bash not found" for a missing
  ``cwd`` too). The command reads an empty stdin (HUD's inherits the server's), and
  ``info`` also holds ``timed_out``, ``duration_s``, ``command`` and ``cwd`` (and
  ``notes``); descendants that leave the process group are ended too. Exit codes 126/127
  score 0.0, as in HUD; the native `gradewire.CommandGrader` raises `GradingError` instead.
- ``LLMJudgeGrader`` asks gradewire's rubric judge (its own prompts and structured
  output, one request per criterion) at an OpenAI-compatible endpoint:
  ``$GRADEWIRE_JUDGE_BASE_URL``, else HUD's gateway when ``$HUD_API_KEY`` is set (as
  HUD), else ``$OPENAI_BASE_URL``; or pass ``judge=`` any `ChatModel`. A reply it cannot
  read raises `OutputParserException` after one repair request (HUD guesses a verdict
  from the text); ``info`` also holds the token ``usage``. Empty ``criteria``, or only
  negative weights, raise `InvalidInputError`: HUD scores the first 0.0, a reward that
  measured nothing.
- `combine` cancels the other grader calls when one raises (HUD leaves them running).
- `exact_match` never matches an answer that normalising erases ("", "The") against an
  expected answer that keeps text after it ("A"): HUD scores ``exact_match("", "A")``
  1.0, a reward a policy can learn to exploit. `numeric_match` reads ``1,000``,
  ``$1,234.56``, ``50%``, ``3/4`` and the Unicode minus (HUD reads ``1,000`` as 1), and
  takes ``..5`` for an ellipsis before 5 (HUD: 0.5) and the ``-`` of ``E-1`` for a hyphen
  (HUD: -1).
  `f1_score` is ``2 * overlap / (len(answer) + len(reference))``, HUD's value up to the
  last bit of rounding.
- A `Grader` subclass that sets no ``name`` is named after its class (HUD: ``"BaseGrader"``),
  so two unnamed graders stay told apart in one `combine`.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.helpers._numeric import numeric_match as numeric_match
    from gradewire.helpers._text import contains as contains
    from gradewire.helpers._text import contains_all as contains_all
    from gradewire.helpers._text import contains_any as contains_any
    from gradewire.helpers._text import exact_match as exact_match
    from gradewire.helpers._text import f1_score as f1_score
    from gradewire.helpers._text import normalize as normalize
    from gradewire.hud._bash import BashGrader as BashGrader
    from gradewire.hud._combine import _combine_subscores as _combine_subscores
    from gradewire.hud._combine import combine as combine
    from gradewire.hud._combine import combine_all as combine_all
    from gradewire.hud._combine import combine_any as combine_any
    from gradewire.hud._grader import Grader as Grader
    from gradewire.hud._judge import LLMJudgeGrader as LLMJudgeGrader
    from gradewire.hud._results import EvaluationResult as EvaluationResult
    from gradewire.hud._results import SubScore as SubScore

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
