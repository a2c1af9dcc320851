"""``gradewire eval`` of an OpenAI Evals run's output items: the note on the recorded results.

The items are graded again with the eval's ``testing_criteria`` run locally; this note
says, per criterion, how the new results agree with those the output items recorded
(`gradewire.eval.runs._recorded_agreement`): on the terminal, and in ``summary.json``
under ``recorded_agreement``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["note_recorded_agreement"]


def note_recorded_agreement(data: Path, result: Any) -> list[dict[str, Any]] | None:
    """Print and record how ``result``'s run agrees with the results ``data`` recorded.

    Returns the agreement per criterion as written to ``summary.json``; None when
    ``data`` is not an Evals output-items file (there is nothing recorded to agree with).
    """
    from gradewire.eval.reporting._terminal import terminal_safe
    from gradewire.eval.runs._evals_output_items import (
        is_evals_output_items,
        read_evals_output_items,
    )
    from gradewire.eval.runs._folder import SUMMARY, write_json
    from gradewire.eval.runs._recorded_agreement import SCORE_TOLERANCE, recorded_agreement

    if not is_evals_output_items(data):
        return None
    agreements = recorded_agreement(result.run, read_evals_output_items(data))
    print()
    if not agreements:
        print(
            "recorded results: no grader of the file has the name of a recorded testing "
            "criterion, so nothing is compared (name the graders as the eval named them)"
        )
    else:
        print(
            "recorded results: each criterion graded again against the result the output "
            f"items recorded (scores within {SCORE_TOLERANCE:g}, the same pass verdict):"
        )
        for agreement in agreements:
            kind = "deterministic" if agreement.deterministic else "model grader"
            print(f"  {terminal_safe(agreement.sentence())} [{kind}]")
    figures = [a.to_dict() for a in agreements]
    path = result.run.folder / SUMMARY
    summary = json.loads(path.read_text(encoding="utf-8"))
    summary["recorded_agreement"] = figures
    write_json(path, summary)
    return figures
