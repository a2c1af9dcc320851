"""Lazy package attributes (PEP 562): a public name's module is imported when it is first used.

A package lists its public names, the module each lives in, and the names that moved away
with where they went; `attach` gives the package's ``__getattr__`` and ``__dir__``. A name is
imported on first access and then stored in the package's namespace, so later lookups are
plain attribute reads. Type checkers read the package's ``if TYPE_CHECKING:`` imports
instead; the package defines ``__getattr__`` only when not type checking, so a misspelt
name stays an error for mypy rather than becoming ``Any``.
"""

from __future__ import annotations

import importlib
import sys

from gradewire.core._errors import GradewireError

TYPE_CHECKING = False  # `import gradewire` imports neither typing nor collections
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

__all__ = ["HUD_NAMES", "MovedNameError", "MovedNameImportError", "attach"]

_COMBINATOR = (
    "it is HUD's combinator, now only in gradewire.hud (from gradewire.hud import {name}); "
    "natively, CombinedGrader combines graders by weight"
)

HUD_NAMES = {
    "SubScore": (
        "it is HUD's name, now only in gradewire.hud (from gradewire.hud import SubScore, "
        "HUD's pydantic model); natively a score-tree node is a gradewire.Grade, with "
        "weight, children and info"
    ),
    "EvaluationResult": (
        "it is HUD's name, now only in gradewire.hud (from gradewire.hud import "
        "EvaluationResult); natively a combined result is a gradewire.Grade with children"
    ),
    "combine": _COMBINATOR.format(name="combine"),
    "combine_any": _COMBINATOR.format(name="combine_any"),
    "combine_all": _COMBINATOR.format(name="combine_all"),
    "BashGrader": (
        "the native command grader is gradewire.CommandGrader, with the same arguments "
        "(CommandGrader(key, command, ...)); HUD's class-method BashGrader is "
        "gradewire.hud.BashGrader"
    ),
    "LLMJudgeGrader": (
        "the native rubric judge is gradewire.RubricJudgeGrader, with the same arguments "
        "(RubricJudgeGrader(key, model, criteria, ...)); HUD's class-method LLMJudgeGrader is "
        "gradewire.hud.LLMJudgeGrader"
    ),
}
"""Names that were gradewire's as well as HUD's, and where each went (HUD's live in hud)."""


class MovedNameError(GradewireError, AttributeError):
    """A public name that moved (or was renamed): the message says where it went."""


class MovedNameImportError(GradewireError, ImportError):
    """``from package import name`` of a name that moved: the message says where it went.

    An ImportError, not an AttributeError: Python turns an AttributeError raised during
    ``from ... import`` into a bare "cannot import name", which would drop the message.
    """


def attach(
    package: str,
    names: Mapping[str, Iterable[str]],
    *,
    moved: Mapping[str, str] | Callable[[str], str | None] | None = None,
    submodules: Iterable[str] = (),
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``.

    Args:
        package: The package's ``__name__``.
        names: Module (absolute, or ``.module`` inside ``package``) -> the public names it
            holds.
        moved: Former public name -> what to tell a user who asks for it (or a function
            of the name giving that, None for a name that never was public here).
        submodules: Subpackages reachable as attributes without an import statement.
    """
    where = {
        name: package + module if module.startswith(".") else module
        for module, listed in names.items()
        for name in listed
    }
    gone: Callable[[str], str | None] = moved if callable(moved) else dict(moved or {}).get
    subpackages = frozenset(submodules)
    listing = sorted(where)

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
            # Stored in the package, so the next lookup does not come back here.
            setattr(sys.modules[package], name, value)
            return value
        if name in subpackages:
            return importlib.import_module(f"{package}.{name}")
        note = None if name.startswith("__") else gone(name)
        if note is not None:
            # `from package import name` asks through importlib's _handle_fromlist first.
            caller = sys._getframe(1).f_code.co_name
            error = MovedNameImportError if caller == "_handle_fromlist" else MovedNameError
            raise error(f"{package}.{name} is no longer here: {note}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        namespace = vars(sys.modules[package])
        dunders = [name for name in namespace if name.startswith("__") and name.endswith("__")]
        return sorted({*listing, *dunders})

    return __getattr__, __dir__
