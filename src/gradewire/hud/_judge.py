"""HUD's `LLMJudgeGrader`: a weighted MET/UNMET rubric, on the native rubric judge."""

from __future__ import annotations

import collections
import hashlib
import os
import threading
from collections.abc import Iterable
from typing import Any

from gradewire.core import InvalidInputError, StringThread, Turn
from gradewire.hud._grader import Grader, reject_unknown
from gradewire.hud._results import SubScore
from gradewire.judges._rubric_judge import Criterion, RubricJudgeGrader
from gradewire.models._chat_model import ChatModel
from gradewire.models._client import ModelClient
from gradewire.models._get_model import get_model
from gradewire.models._openai_config import base_url_setting

__all__ = [
    "JUDGE_API_KEY_ENV",
    "JUDGE_BASE_URL_ENV",
    "LLMJudgeGrader",
    "named_judge_model",
    "shared_judge_model",
]

JUDGE_BASE_URL_ENV = "GRADEWIRE_JUDGE_BASE_URL"
JUDGE_API_KEY_ENV = "GRADEWIRE_JUDGE_API_KEY"
# HUD's own settings for its inference gateway, read as HUD reads them.
HUD_API_KEY_ENV = "HUD_API_KEY"
HUD_GATEWAY_URL_ENV = "HUD_GATEWAY_URL"
HUD_GATEWAY_URL = "https://inference.hud.ai"
DEFAULT_MODEL = "claude-sonnet-5-5"  # hud 0.6.21's default judge
# Enough for every judge a run uses; old entries (a test server's port) fall out.
_MAX_MODELS = 16

_models: collections.OrderedDict[tuple[str, str | None, str], ModelClient] = (
    collections.OrderedDict()
)
_models_lock = threading.Lock()


def shared_judge_model(model: str) -> ModelClient:
    """The judge client for ``model`` at the configured endpoint, one per endpoint and key.

    The endpoint is, in this order: ``$GRADEWIRE_JUDGE_BASE_URL`` with
    ``$GRADEWIRE_JUDGE_API_KEY``; HUD's inference gateway when ``$HUD_API_KEY`` is set (as
    HUD's own judge does: ``$HUD_GATEWAY_URL``, default ``https://inference.hud.ai``, with
    that key); else ``$OPENAI_BASE_URL`` (OpenAI's API when unset) with ``$OPENAI_API_KEY``.
    The environment is read on every call; calls that resolve to the same endpoint, model
    and key share one client, hence its connections and its concurrency limit. ``model``
    is sent as it is, as HUD sends it (``get_model("openai/" + model)``).
    """
    override = os.environ.get(JUDGE_BASE_URL_ENV, "").strip()
    hud_key = os.environ.get(HUD_API_KEY_ENV, "").strip()
    if override:
        # Never the OpenAI key: it must not travel to a gateway the user did not give it to.
        base_url = base_url_setting(override)
        api_key = os.environ.get(JUDGE_API_KEY_ENV, "")
    elif hud_key:
        gateway = os.environ.get(HUD_GATEWAY_URL_ENV, "").strip() or HUD_GATEWAY_URL
        base_url = base_url_setting(gateway)
        api_key = hud_key
    else:
        base_url = base_url_setting(None)
        api_key = os.environ.get("OPENAI_API_KEY", "")
    return _shared(f"openai/{model}", base_url, api_key)


def named_judge_model(name: str) -> ModelClient:
    """The judge client ``get_model(name)`` makes (``"anthropic/claude-haiku-4-5"``), shared.

    Its endpoint is ``$GRADEWIRE_JUDGE_BASE_URL`` with ``$GRADEWIRE_JUDGE_API_KEY`` when
    set, else the provider's own (``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``...).
    """
    override = os.environ.get(JUDGE_BASE_URL_ENV, "").strip()
    if override:
        return _shared(name, override, os.environ.get(JUDGE_API_KEY_ENV, ""))
    return _shared(name, None, None)


def _shared(name: str, base_url: str | None, api_key: str | None) -> ModelClient:
    secret = hashlib.sha256((api_key or "").encode()).hexdigest() if api_key is not None else ""
    key = (name, base_url, secret)
    with _models_lock:
        found = _models.get(key)
        if found is not None:
            _models.move_to_end(key)
            return found
        client = get_model(name, base_url=base_url, api_key=api_key)
        _models[key] = client
        while len(_models) > _MAX_MODELS:
            _models.popitem(last=False)
        return client


class LLMJudgeGrader(Grader):
    """Score an answer against weighted criteria, each judged MET or UNMET by an LLM.

    One judge call per criterion, all in parallel. The result has one child per criterion:
    ``name`` the requirement, ``value`` 1.0 (MET) or 0.0 (UNMET), ``weight`` its weight and
    ``info["reason"]`` the judge's justification. On a negative-weight criterion (a mistake
    to avoid) 1.0 means the answer makes the mistake. The value is the weighted
    pass-fraction: ``(sum of met positive weights - sum of |weight| of made mistakes) /
    sum of positive weights``, clamped to [0, 1].

    HUD sends the judge calls to its gateway; here they go to an OpenAI-compatible server
    (see `shared_judge_model`), or to the ``judge=`` of the call: a `ChatModel`, or a
    ``"provider/model"`` name for `get_model` (``judge="anthropic/claude-haiku-4-5"``). A judge that
    cannot answer (`ModelCallError`, or `OutputParserException` after a repair request)
    raises, so `combine` fails rather than report a reward that was never measured.

    Example:
        >>> result = await LLMJudgeGrader.grade(  # doctest: +SKIP
        ...     weight=1.0, answer=answer, criteria=["Correct", ("Well-reasoned", 2.0)],
        ...     question=prompt, model="claude-haiku-4-5",
        ... )
    """

    name = "LLMJudgeGrader"

    @classmethod
    async def compute_score(
        cls,
        answer: object = "",
        criteria: str | Iterable[Criterion] | None = None,
        question: str | None = "",
        model: str = DEFAULT_MODEL,
        judge: ChatModel | str | None = None,
        **kwargs: Any,
    ) -> SubScore:
        """Judge ``answer`` on every criterion and combine the verdicts by weight.

        Args:
            answer: The answer judged (anything else than a str is converted with `str()`).
            criteria: Requirements as strings (weight 1.0) or ``(requirement, weight)``
                pairs; a negative weight is a mistake to avoid. At least one positive.
            question: The question the answer responds to, shown to the judge.
            model: The judge model's name at the configured endpoint.
            judge: A `ChatModel` to call instead, or a ``"provider/model"`` name
                (`named_judge_model`); ``model`` is then not used.
            **kwargs: Refused: HUD ignores unknown arguments, which hides a misspelled one.

        Raises:
            InvalidInputError: No criteria, or none with a positive weight.
            ModelCallError: The judge endpoint failed for good (after its retries).
            OutputParserException: The judge's answer could not be read.
        """
        reject_unknown(cls, kwargs, ("answer", "criteria", "question", "model", "judge"))
        if criteria is None:
            raise InvalidInputError(
                f'{cls.__name__}.grade() needs criteria=, e.g. ["Correct", ("Well-reasoned", 2.0)]'
            )
        if isinstance(judge, str):
            chat_model: ChatModel = named_judge_model(judge)
        elif judge is not None:
            chat_model = judge
        else:
            chat_model = shared_judge_model(model)
        rubric = RubricJudgeGrader(cls.name, chat_model, criteria, sample_tables=False)
        turns: list[Turn] = []
        if question:
            turns.append(Turn("user", question))
        turns.append(Turn("assistant", answer if isinstance(answer, str) else str(answer)))
        grade = await rubric.grade(StringThread(turns))
        judge_name = getattr(chat_model, "model", None)
        info = {
            "model": judge_name if isinstance(judge_name, str) else model,
            "usage": dict(grade.info.get("usage", {})),
        }
        verdicts = [
            SubScore(
                name=child.name,
                value=child.value,
                weight=child.weight,
                info={"reason": child.info.get("reason", child.reasoning or "")},
            )
            for child in grade.children
        ]
        return SubScore(name=cls.name, value=grade.value, children=verdicts, info=info)
