"""The key of the grader a labels file is of: ``--labels-grader``, or the only grader there is.

Not a grader: it resolves the ``--labels-grader`` option of `eval` and `compare` to a key.
"""

from __future__ import annotations

from collections.abc import Sequence

from gradewire.core import GradewireError

__all__ = ["labels_grader_key"]


def labels_grader_key(chosen: str | None, keys: Sequence[str], holder: str) -> str:
    """The ``--labels-grader`` given, checked, or the one grader of ``keys``.

    Args:
        chosen: The value of ``--labels-grader`` (None if not given).
        keys: The graders the labels may be of.
        holder: What holds ``keys``, for the messages ("the grader file", "both runs").

    Raises:
        GradewireError: No grader was chosen among several, or the one chosen is not there.
    """
    listed = ", ".join(keys)
    if chosen is None:
        if len(keys) != 1:
            raise GradewireError(
                f"{holder} has {len(keys)} graders ({listed}); name the one the labels are "
                "of with --labels-grader"
            )
        return keys[0]
    if chosen not in keys:
        raise GradewireError(f"--labels-grader {chosen!r} is not a grader of {holder} ({listed})")
    return chosen
