"""Which judge gave a run's verdicts, and which model answered it, read from its results.

Every judge's grade records its identity and the models that answered
(``info["judge"]``: ``{"identity": ..., "served": [{"model", "fingerprint", "answers"}]}``);
this module tallies them per grader over a run's current outcomes, as ``summary.json``
records them (``"judges"``), and says in words when they are not one: a served model that
changed within the run, or two runs judged by different judges or models.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gradewire.eval.runs._records import plain

__all__ = ["JudgeFacts", "drift_lines", "judge_facts", "served_name", "within_run_lines"]

JudgeFacts = dict[str, Any]
"""One grader's judge facts: ``identity`` (the one identity, or None when several),
``identities`` ({identity: verdicts}) and ``served`` ([{model, fingerprint, answers}])."""


def judge_facts(run: Any, current: Mapping[str, str | None] | None = None) -> dict[str, JudgeFacts]:
    """The judge facts of each grader of ``run`` (an `EvalRun`) that judged with a model.

    Args:
        run: The run.
        current: The identity of each grader as it is now (the graders of this
            invocation), recorded even when none of its verdicts are in the run yet.
    """
    facts: dict[str, JudgeFacts] = {}
    for key in run.graders:
        identities: dict[str, int] = {}
        served: dict[tuple[str | None, str | None], int] = {}
        for record in run.records:
            outcome = run.outcome(record, key)
            if outcome is None or outcome.grade is None:
                continue
            _walk(plain(outcome.grade), identities, served, counted=False)
        now = (current or {}).get(key)
        if not identities and not served and now is None:
            continue
        one = next(iter(identities)) if len(identities) == 1 else None
        facts[key] = {
            "identity": now if now is not None and not identities else one,
            "identities": identities,
            "served": [
                {"model": model, "fingerprint": fingerprint, "answers": answers}
                for (model, fingerprint), answers in sorted(
                    served.items(), key=lambda item: (-item[1], str(item[0]))
                )
            ],
        }
    return facts


def _walk(
    grade: Mapping[str, Any],
    identities: dict[str, int],
    served: dict[tuple[str | None, str | None], int],
    *,
    counted: bool,
) -> None:
    info = grade.get("info")
    judge = info.get("judge") if isinstance(info, Mapping) else None
    if isinstance(judge, Mapping):
        identity = judge.get("identity")
        # The outermost judge is the one that decided (a panel's identity holds its judges').
        if isinstance(identity, str) and not counted:
            identities[identity] = identities.get(identity, 0) + 1
            counted = True
        for entry in judge.get("served") or ():
            if isinstance(entry, Mapping):
                who = (_text(entry.get("model")), _text(entry.get("fingerprint")))
                answers = entry.get("answers")
                count = answers if isinstance(answers, int) and answers > 0 else 1
                served[who] = served.get(who, 0) + count
    for child in grade.get("children") or ():
        if isinstance(child, Mapping):
            _walk(child, identities, served, counted=counted)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def served_name(entry: Mapping[str, Any]) -> str:
    """A served model as one phrase: ``gpt-4o-2024-08-06 (fp_1a2b)``."""
    model = entry.get("model") or "an unnamed model"
    fingerprint = entry.get("fingerprint")
    return f"{model} ({fingerprint})" if fingerprint else str(model)


def _served_names(entries: Iterable[Mapping[str, Any]]) -> list[str]:
    return [served_name(entry) for entry in entries]


def within_run_lines(facts: Mapping[str, JudgeFacts]) -> list[str]:
    """One line per grader whose verdicts came from more than one judge or served model."""
    lines = []
    for key, fact in facts.items():
        served = fact.get("served") or []
        if len(served) > 1:
            shown = ", ".join(
                f"{served_name(entry)} ({entry['answers']} answers)" for entry in served
            )
            lines.append(
                f"{key}: the model behind the judge changed within the run: {shown}; "
                "its verdicts may not be comparable with each other"
            )
        identities = fact.get("identities") or {}
        if len(identities) > 1:
            shown = ", ".join(f"{name} ({count} verdicts)" for name, count in identities.items())
            lines.append(
                f"{key}: the run's verdicts come from {len(identities)} different judges: {shown}"
            )
    return lines


def drift_lines(
    keys: Sequence[str],
    first: Mapping[str, JudgeFacts],
    second: Mapping[str, JudgeFacts],
    names: tuple[str, str] = ("A", "B"),
) -> list[str]:
    """One line per grader judged by a different judge or served model in two runs."""
    lines = []
    a, b = names
    for key in keys:
        one, two = first.get(key), second.get(key)
        if one is None or two is None:
            continue
        served_a = set(_served_names(one.get("served") or []))
        served_b = set(_served_names(two.get("served") or []))
        if served_a and served_b and served_a != served_b:
            lines.append(
                f"{key}: judged by {', '.join(sorted(served_a))} in {a} and "
                f"{', '.join(sorted(served_b))} in {b}"
            )
        ids_a = set(one.get("identities") or {}) or _one(one.get("identity"))
        ids_b = set(two.get("identities") or {}) or _one(two.get("identity"))
        if ids_a and ids_b and ids_a != ids_b:
            lines.append(
                f"{key}: the judge differs: {', '.join(sorted(ids_a))} in {a} and "
                f"{', '.join(sorted(ids_b))} in {b} (its model, prompt, criteria, examples "
                "or settings changed)"
            )
    return lines


def _one(identity: object) -> set[str]:
    return {identity} if isinstance(identity, str) else set()
