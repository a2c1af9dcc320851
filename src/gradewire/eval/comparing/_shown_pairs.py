"""Which pairs a reader of a comparison is shown, and how many of each kind there are.

A comparison of 10,000 pairs cannot show them all with both completions in full, so it
keeps a few: in turn, the next largest change of each grader, outcome (gained, lost,
tied) and slice, until a cap on the pairs and on their text. Every kind is represented
whatever its size, and the counts of every kind (kept or not) go with them, so a reader
filtering the page knows what was left out. Ties are ordered by how much the completion
changed (a same score for another answer is worth a look); changes by their size.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import product

from gradewire.eval.comparing._results import Outcome, PairedSample, SampleCounts
from gradewire.eval.runs._records import SampleRecord

__all__ = ["OUTCOMES", "SHOWN_CHARACTERS", "SHOWN_PAIRS", "shown_pairs"]

OUTCOMES: tuple[Outcome, ...] = ("gained", "lost", "tied")
SHOWN_PAIRS = 100
"""Default cap on the pairs kept for the compare page."""
SHOWN_CHARACTERS = 1_000_000
"""Cap on the text (prompts and both completions) of the pairs kept."""


def shown_pairs(
    pairs: Sequence[tuple[SampleRecord, SampleRecord]],
    scores: Mapping[str, tuple[Mapping[str, float], Mapping[str, float]]],
    slices: Sequence[str] | None,
    *,
    limit: int = SHOWN_PAIRS,
    max_characters: int = SHOWN_CHARACTERS,
) -> tuple[tuple[PairedSample, ...], SampleCounts]:
    """The pairs to show and the count of every ``(grader, outcome, slice)``.

    Args:
        pairs: The paired records (A, B).
        scores: Per grader, the scores of run A and of run B by id.
        slices: Each pair's slice value (None: no ``by``).
        limit: At most this many pairs are kept.
        max_characters: Pairs stop being added once their text would pass this (a
            single pair longer than it is still kept, when it is the first).
    """
    graders = list(scores)
    items: list[dict[str, tuple[float, float]]] = []
    counts: Counter[tuple[str | None, Outcome | None, str | None]] = Counter()
    for i, (ra, rb) in enumerate(pairs):
        both = {
            key: (float(a[ra.id]), float(b[rb.id]))
            for key, (a, b) in scores.items()
            if ra.id in a and rb.id in b
        }
        items.append(both)
        value = slices[i] if slices is not None else None
        kinds: set[tuple[str | None, Outcome | None]] = {(None, None)}
        for key, (x, y) in both.items():
            outcome = _outcome(x, y)
            kinds.update({(key, None), (key, outcome), (None, outcome)})
        for (grader, kind), where in product(kinds, {None, value}):
            counts[(grader, kind, where)] += 1
    groups = _groups(pairs, items, graders, slices)
    chosen: list[int] = []
    taken: set[int] = set()
    characters = 0
    while len(chosen) < limit and any(groups):
        for group in groups:
            while group and group[-1] in taken:
                group.pop()
            if not group or len(chosen) >= limit:
                continue
            index = group.pop()
            ra, rb = pairs[index]
            size = len(ra.prompt()) + len(ra.completion()) + len(rb.completion())
            if chosen and characters + size > max_characters:
                continue
            chosen.append(index)
            taken.add(index)
            characters += size
    chosen.sort(key=lambda i: (-max((abs(y - x) for x, y in items[i].values()), default=0), i))
    kept = tuple(
        PairedSample(
            id=pairs[i][0].id,
            slice=slices[i] if slices is not None else None,
            metadata=dict(pairs[i][0].metadata or pairs[i][1].metadata),
            prompt=pairs[i][0].prompt(),
            completion_a=pairs[i][0].completion(),
            completion_b=pairs[i][1].completion(),
            scores=items[i],
        )
        for i in chosen
    )
    return kept, dict(counts)


def _outcome(a: float, b: float) -> Outcome:
    return "gained" if b > a else "lost" if b < a else "tied"


def _groups(
    pairs: Sequence[tuple[SampleRecord, SampleRecord]],
    items: Sequence[Mapping[str, tuple[float, float]]],
    graders: Sequence[str],
    slices: Sequence[str] | None,
) -> list[list[int]]:
    """Per grader, outcome and slice, the pairs best shown last (so ``pop`` takes them)."""
    members: dict[tuple[str, Outcome, str | None], list[int]] = {}
    for i, both in enumerate(items):
        for key, (x, y) in both.items():
            value = slices[i] if slices is not None else None
            members.setdefault((key, _outcome(x, y), value), []).append(i)
    changed: dict[int, float] = {}

    def text_change(i: int) -> float:
        if i not in changed:
            a, b = pairs[i][0].completion(), pairs[i][1].completion()
            changed[i] = 0.0 if a == b else 1.0 - difflib.SequenceMatcher(None, a, b).quick_ratio()
        return changed[i]

    order = sorted(
        members,
        key=lambda k: (graders.index(k[0]), OUTCOMES.index(k[1]), k[2] or ""),
    )
    groups = []
    for name in order:
        key, outcome, _ = name
        if outcome == "tied":
            ranked = sorted(members[name], key=lambda i: (-text_change(i), i))
        else:
            ranked = sorted(
                members[name], key=lambda i: (-abs(items[i][key][1] - items[i][key][0]), i)
            )
        groups.append(ranked[::-1])
    return groups
