"""Which judge gave a run's verdicts, and which model answered it, read from its results.

Every judge's grade records its identity and the models that answered
(``info["judge"]``: ``{"identity": ..., "served": [{"model", "fingerprint", "answers"}]}``);
this module tallies them per grader over a run's current outcomes, as ``summary.json``
records them (``"judges"``), and says in words when they are not one: a served model that
changed within the run, or runs (two, or a leaderboard's many) judged by different judges or
models.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gradewire.eval.runs._records import plain

__all__ = [
    "JudgeFacts",
    "drift_lines",
    "judge_facts",
    "served_name",
    "spread_lines",
    "within_run_lines",
]

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
    return spread_lines(keys, [(names[0], first), (names[1], second)])


def spread_lines(
    keys: Sequence[str], runs: Sequence[tuple[str, Mapping[str, JudgeFacts]]]
) -> list[str]:
    """One line per grader judged by different judges or served models across ``runs``.

    ``runs`` are (name, `judge_facts` of the run) in the order to tell them; the runs are
    grouped by what judged them, each group named once: ``g: judged by m1 in a, b and m2
    in c``. A run with no judge facts for a grader (no judge, or no such grader) is left
    out of that grader's line. Two runs give compare's sentences.
    """
    lines = []
    for key in keys:
        facts = [(name, run[key]) for name, run in runs if key in run]
        served = _groups(
            (name, frozenset(_served_names(fact.get("served") or []))) for name, fact in facts
        )
        if len(served) > 1:
            lines.append(f"{key}: judged by {_told(served)}")
        identities = _groups(
            (name, frozenset(fact.get("identities") or {}) or frozenset(_one(fact.get("identity"))))
            for name, fact in facts
        )
        if len(identities) > 1:
            lines.append(
                f"{key}: the judge differs: {_told(identities)} (its model, prompt, criteria, "
                "examples or settings changed)"
            )
    return lines


def _groups(
    named: Iterable[tuple[str, frozenset[str]]],
) -> dict[frozenset[str], list[str]]:
    """The run names per set of values, in the order first met (runs with none left out)."""
    groups: dict[frozenset[str], list[str]] = {}
    for name, values in named:
        if values:
            groups.setdefault(values, []).append(name)
    return groups


def _told(groups: Mapping[frozenset[str], Sequence[str]]) -> str:
    """``x in a and y in b``; with more groups ``x in a; y in b and z in c``."""
    parts = [
        f"{', '.join(sorted(values))} in {', '.join(names)}" for values, names in groups.items()
    ]
    return "; ".join(parts[:-1]) + " and " + parts[-1]


def _one(identity: object) -> set[str]:
    return {identity} if isinstance(identity, str) else set()
