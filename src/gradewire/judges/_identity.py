"""A judge's identity: one stable string for everything that decides its verdicts.

A judge scored against people in March is not the judge answering in June when its model,
prompt, criteria, examples or settings changed. `identity_facts` gathers what decides a
judge's verdicts, as canonical JSON data; `judge_identity` hashes it into a short string
(``"BinaryJudgeGrader-3f2a9c0d1e4b5a69"``), equal for equal configurations and different
when any of them changes.

What is gathered, and why it is gathered this way:

- **the judge's own configuration**: every attribute of the grader object (criteria, shots,
  scale, labels, temperature, max_tokens, truncation, system prompt, the panel's aggregate
  and its judges' identities...), found by walking the object, not by a list of names, so
  an attribute a future judge adds counts without anyone remembering to add it. Left out
  are only what does not decide a verdict, named in `IGNORED`: the key (a label), the log
  buffer, the grade timeout, and what a judge learns while running (a refused logprobs
  request, error counters).
- **the model**: the provider, the model name, its own settings (temperature, max_tokens),
  the structured-output setting (the dialect asked for) and the extra request fields
  (``seed``, ``top_k``). Not the URL: a server moved to another port is the same judge,
  and who really answered is recorded per answer (`gradewire.models.ServedModel`).
- **the prompt as sent**: the judge is run once, offline, on a fixed probe sample against a
  recording model that answers nothing; the messages and the response format of its first
  call are part of the identity. So a change of a prompt template in gradewire's code, of
  the answer schema (its labels or range) or of anything else that reaches the model is
  seen, although no attribute changed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import enum
import hashlib
import inspect
import json
import math
import weakref
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from gradewire.core._grade import Grade
from gradewire.core._grader import BaseGrader
from gradewire.core._thread import StringThread
from gradewire.models._chat_model import ChatCompletion, ChatMessage
from gradewire.models._profile import ModelProfile, profile_of

__all__ = ["IDENTITY_VERSION", "IGNORED", "identity_facts", "is_judge", "judge_identity"]

IDENTITY_VERSION = 1
"""The version of the derivation: part of every identity, raised when the derivation changes."""

IGNORED: Mapping[str, str] = {
    "grader_key": "a label: the same judge under another key gives the same verdicts",
    "model": "described apart (provider, name, settings), without its connections",
    "logprobs_refused": "learnt while running, from the server",
    "certificate_requirement": "what the judge must prove, not what it is",
    "spec": "the same object as config (OpenAI graders)",
    "_kind_counts": "error counters, learnt while running",
    "_timeout": "bounds how long a grade may take, not what it says",
    "_timeout_applied": "runtime state",
    "_warned": "runtime state",
    "_identity_epoch": "counts attribute changes, so the identity is hashed again only then",
}
"""Attributes of a judge that do not decide its verdicts, with why.

Besides these, the attributes every grader's logging core holds (the log buffer and its
bounds) are left out; every other attribute is part of the identity.
"""

# Keys of an OpenAI grader config that name it rather than decide its verdicts.
_CONFIG_LABELS = frozenset({"name"})

_PROBE_QUESTION = "gradewire identity probe: what is the capital of France?"
_PROBE_ANSWER = "The capital of France is Paris."


class _ProbeGrader(BaseGrader):
    async def grade(self, sample: StringThread) -> Grade:  # pragma: no cover - never graded
        raise NotImplementedError


def _logging_core_names() -> frozenset[str]:
    return frozenset(vars(_ProbeGrader("probe")))


_CORE_NAMES = _logging_core_names()


def is_judge(grader: object) -> bool:
    """Whether ``grader`` is a judge: a grader that calls a model (panels included)."""
    # A judge declares its identity (JudgeGrader, JudgePanel); read by declaration, so this
    # module needs neither (they import it).
    declared = inspect.getattr_static(type(grader), "identity", None)
    return isinstance(grader, BaseGrader) and isinstance(declared, property)


def judge_identity(judge: BaseGrader) -> str:
    """The identity of ``judge``: its class name and a hash of `identity_facts`.

    Example:
        >>> judge_identity(BinaryJudgeGrader("ok", model, "Answers the question"))
        ... # doctest: +SKIP
        'BinaryJudgeGrader-3f2a9c0d1e4b5a69'
    """
    # Every grade records its judge's identity: hashed again only when an attribute of the
    # judge was set (`mark_changed`) or a setting of its model (or a panel member's
    # identity) changed, not per sample. An object mutated in place (a config dict
    # edited) is not seen until an attribute is set.
    key = _change_key(judge)
    try:
        cached = _identities.get(judge)
    except TypeError:
        cached = None
    if cached is not None and cached[0] == key:
        return cached[1]
    text = json.dumps(identity_facts(judge), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    identity = f"{type(judge).__name__}-{digest}"
    with contextlib.suppress(TypeError):
        _identities[judge] = (key, identity)
    return identity


_identities: weakref.WeakKeyDictionary[Any, tuple[Any, str]] = weakref.WeakKeyDictionary()


def mark_changed(judge: object, name: str) -> None:
    """Note that attribute ``name`` of ``judge`` was set (its identity may have changed)."""
    if name in _CORE_NAMES or name == "_identity_epoch":
        return
    epoch = getattr(judge, "_identity_epoch", 0)
    object.__setattr__(judge, "_identity_epoch", epoch + 1)


def _change_key(judge: Any) -> Any:
    model = getattr(judge, "model", None)
    model_key = (
        id(model),
        getattr(model, "model", None),
        getattr(model, "temperature", None),
        getattr(model, "max_tokens", None),
        getattr(model, "structured_output", None),
        repr(getattr(model, "extra_body", None)),
    )
    members = getattr(judge, "judges", ())
    inner = tuple(judge_identity(m) if is_judge(m) else id(m) for m in members)
    return (getattr(judge, "_identity_epoch", 0), model_key, inner)


def identity_facts(judge: BaseGrader) -> dict[str, Any]:
    """Everything that decides ``judge``'s verdicts, as canonical JSON data (see the module).

    Two judges with equal facts have equal identities; diff two judges' facts to see what
    changed between them.
    """
    config = {
        name: _canon(value, name)
        for name, value in sorted(vars(judge).items())
        if name not in IGNORED and name not in _CORE_NAMES
    }
    facts: dict[str, Any] = {
        "version": IDENTITY_VERSION,
        "class": _qualname(type(judge)),
        "config": config,
    }
    model = getattr(judge, "model", None)
    if model is not None and not isinstance(model, str):
        facts["model"] = model_facts(model)
    if _asks_a_model(judge):
        facts["prompt"] = _probe_prompt(judge, config)
    return facts


def _asks_a_model(judge: object) -> bool:
    """A judge that asks its own model (`JudgeGrader`), not a panel of judges."""
    return callable(getattr(judge, "judge", None)) and hasattr(judge, "model")


def model_facts(model: object) -> dict[str, Any]:
    """What of a chat model decides a judge's verdicts (not its URL, key or timeouts)."""
    profile = profile_of(model)
    name = getattr(model, "model", None)
    facts: dict[str, Any] = {
        "class": _qualname(type(model)),
        "provider": profile.provider,
        "name": name if isinstance(name, str) else None,
        "settings": _canon(dict(profile.settings), "settings"),
    }
    setting = getattr(model, "structured_output", None)
    facts["structured_output"] = setting if isinstance(setting, str) else profile.dialect
    extra = getattr(model, "extra_body", None)
    if isinstance(extra, Mapping):
        facts["extra_body"] = _canon(extra, "extra_body")
    return facts


def _canon(value: Any, where: str, seen: frozenset[int] = frozenset()) -> Any:
    """``value`` as JSON data that is equal exactly when the values are equal."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, enum.Enum):
        return _canon(value.value, where, seen)
    if id(value) in seen:
        return "<cycle>"
    seen = seen | {id(value)}
    if isinstance(value, BaseGrader):
        if is_judge(value):
            return {"judge": identity_facts(value)}
        return {"grader": _qualname(type(value)), "config": _object_facts(value, where, seen)}
    if isinstance(value, StringThread):
        return {"thread": _canon(value.to_dict(), where, seen)}
    if isinstance(value, BaseModel):
        return {"model": _qualname(type(value)), "data": value.model_dump(mode="json")}
    if isinstance(value, type):
        if issubclass(value, BaseModel):
            return {"schema": value.model_json_schema()}
        return {"type": _qualname(value)}
    if dataclasses.is_dataclass(value):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {"dataclass": _qualname(type(value)), **_canon(fields, where, seen)}
    if isinstance(value, Mapping):
        labels = _CONFIG_LABELS if where == "config" else frozenset()
        return {
            str(key): _canon(item, where, seen)
            for key, item in sorted(value.items(), key=lambda kv: str(kv[0]))
            if key not in labels
        }
    if isinstance(value, (set, frozenset)):
        items = [_canon(item, where, seen) for item in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, (list, tuple)):
        return [_canon(item, where, seen) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return hashlib.sha256(bytes(value)).hexdigest()
    if inspect.isroutine(value):
        return {"function": _function_facts(value)}
    if hasattr(value, "__dict__") or hasattr(type(value), "__slots__"):
        return {"object": _qualname(type(value)), **_object_facts(value, where, seen)}
    return {"repr": repr(value)}


def _object_facts(value: object, where: str, seen: frozenset[int]) -> dict[str, Any]:
    state: dict[str, Any] = {}
    if hasattr(value, "__dict__"):
        state.update(vars(value))
    for cls in type(value).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if isinstance(name, str) and hasattr(value, name) and not name.startswith("__"):
                state.setdefault(name, getattr(value, name))
    return {
        name: _canon(item, where, seen)
        for name, item in sorted(state.items())
        if name not in IGNORED and name not in _CORE_NAMES
    }


def _function_facts(function: Any) -> str:
    name = f"{getattr(function, '__module__', '')}:{getattr(function, '__qualname__', '')}"
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return name
    return f"{name}:{hashlib.sha256(source.encode()).hexdigest()[:16]}"


def _qualname(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


# --- the prompt as sent ------------------------------------------------------------------


class _Captured(Exception):
    """Raised by the recording model once it has the first call's request."""

    def __init__(self, request: dict[str, Any]) -> None:
        super().__init__("captured")
        self.request = request


class _RecordingModel:
    """Answers nothing: records the first request a judge sends, then stops the judge.

    It declares a fixed profile (OpenAI's JSON-schema dialect, the real model's settings),
    so the probe shows the same request whatever the real endpoint has negotiated so far.
    """

    def __init__(self, settings: Any) -> None:
        self.profile = ModelProfile(
            provider="probe",
            dialects=("json_schema",),
            dialect="json_schema",
            settings=settings,
        )

    async def complete(self, messages: Sequence[ChatMessage], **options: Any) -> ChatCompletion:
        raise _Captured({"messages": [dict(message) for message in messages], **options})


# Per judge: the config facts of the last probe, and its result. The probe depends on the
# configuration and on gradewire's code, which does not change within a process.
_probed: weakref.WeakKeyDictionary[Any, tuple[str, Any]] = weakref.WeakKeyDictionary()


def _probe_prompt(judge: Any, config: Mapping[str, Any]) -> Any:
    key = json.dumps(config, sort_keys=True)
    try:
        cached = _probed.get(judge)
    except TypeError:
        cached = None
    if cached is not None and cached[0] == key:
        return cached[1]
    result = _run_probe(judge)
    with contextlib.suppress(TypeError):  # a judge that cannot be weakly referenced
        _probed[judge] = (key, result)
    return result


def _run_probe(judge: Any) -> Any:
    """The first request the judge sends for the probe sample (None if it sends none)."""
    import copy

    from gradewire.judges._judge_context import JudgedSample

    probe = copy.copy(judge)
    probe.model = _RecordingModel(profile_of(judge.model).settings)
    metadata: dict[str, Any] = {
        "documents": ["Paris is the capital and largest city of France."],
    }
    other_key = getattr(judge, "other_key", None)
    if isinstance(other_key, str):
        metadata[other_key] = "It is Lyon."
    else:
        metadata["other_completion"] = "It is Lyon."
    thread = StringThread([("user", _PROBE_QUESTION), ("assistant", _PROBE_ANSWER)], metadata)
    try:
        sample = JudgedSample.of(thread, require_answer=judge.requires_answer)
    except Exception as exc:
        return {"probe_refused": type(exc).__name__}
    # Run on an event loop of its own, in a thread: judges that ask in parallel need a
    # loop, and this may be called inside a running one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _on_loop(probe.judge(sample))).result()


async def _on_loop(coroutine: Coroutine[Any, Any, Any]) -> Any:
    try:
        await coroutine
    except _Captured as captured:
        return _canon(captured.request, "request")
    except Exception as exc:
        return {"probe_failed": type(exc).__name__}
    return None
