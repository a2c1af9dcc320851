"""Lazy package attributes (PEP 562): a public name's module is imported when it is first used.

Each public name of a package is declared once, in the package's ``if TYPE_CHECKING:`` block,
as an import that re-exports it::

    TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing

    if TYPE_CHECKING:
        from gradewire.models._profile import ModelProfile as ModelProfile

    if not TYPE_CHECKING:
        __getattr__, __dir__ = attach(__name__)

**To add a public name, add its ``from <module> import <Name> as <Name>`` line to that block,
and nothing else.** ``Name as Name`` is the re-export that type checkers read (mypy's
``no_implicit_reexport``, pyright's rules for ``py.typed`` libraries); an import there
without it is for annotations only, private to type checkers and to `attach` alike. The
package keeps no ``__all__`` and no module -> names map of its own: on the first attribute
access, never at import, `attach` parses the package's source, takes each re-exporting
import of that block as where a name lives, and serves ``__all__`` (those names, sorted, and
``__version__`` when the package sets one), so ``from package import *`` and ``dir()``
agree with what type checkers see. A name is imported on first access and then stored in
the package's namespace, so later lookups are plain attribute reads. The package defines
``__getattr__`` only when not type checking, so a misspelt name stays an error for mypy
rather than becoming ``Any``.

Names that moved away are given with where they went (``moved=``), so asking for one says
where to look; subpackages reachable as attributes without an import are ``submodules=``.
"""

from __future__ import annotations

import importlib
import sys

from gradewire.core._errors import GradewireError

TYPE_CHECKING = False  # `import gradewire` imports neither typing nor collections
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

__all__ = [
    "HUD_NAMES",
    "MovedNameError",
    "MovedNameImportError",
    "attach",
    "declared_names",
]

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


def declared_names(source: str, package: str) -> dict[str, str]:
    """The public names a package's ``__init__`` declares, each with the module it lives in.

    A name is declared by an import that re-exports it (``from module import Name as Name``,
    the module absolute or relative to ``package``) in a top-level ``if TYPE_CHECKING:``
    block; the other imports of that block are for annotations only.

    Args:
        source: The source of the package's ``__init__.py``.
        package: The package's name, which relative imports start from.

    Returns:
        Name -> the absolute name of its module, in the order of the source.
    """
    import ast  # only on first use of a package's names: `import gradewire` stays light

    where: dict[str, str] = {}
    for block in ast.parse(source).body:
        if not (isinstance(block, ast.If) and _is_type_checking(block.test)):
            continue
        for statement in block.body:
            if not isinstance(statement, ast.ImportFrom):
                continue
            module = statement.module or ""
            if statement.level:
                base = package.rsplit(".", statement.level - 1)[0]
                module = f"{base}.{module}" if module else base
            for alias in statement.names:
                if alias.asname == alias.name:
                    where[alias.name] = module
    return where


def _is_type_checking(test: object) -> bool:
    """Whether an ``if`` tests TYPE_CHECKING (bare or ``typing.TYPE_CHECKING``)."""
    name = getattr(test, "id", None) or getattr(test, "attr", None)
    return name == "TYPE_CHECKING"


def _package_source(package: str) -> str:
    """The source of ``package``'s ``__init__``, through its loader (a file, a zip...)."""
    spec = sys.modules[package].__spec__
    get_source = getattr(spec and spec.loader, "get_source", None)
    source = get_source(package) if get_source is not None else None
    if source is None:
        raise GradewireError(
            f"{package} reads its public names from the imports of its __init__.py, whose "
            "source is missing from this installation: reinstall gradewire from its wheel "
            "or sdist (an install that keeps only .pyc files has no source to read)"
        )
    return str(source)


def attach(
    package: str,
    *,
    moved: Mapping[str, str] | Callable[[str], str | None] | None = None,
    submodules: Iterable[str] = (),
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, which declares its names once.

    The names and their modules are read from the package's own ``if TYPE_CHECKING:`` block
    (`declared_names`) on the first access of a name, ``__all__`` or ``dir()``, and kept.

    Args:
        package: The package's ``__name__``.
        moved: Former public name -> what to tell a user who asks for it (or a function
            of the name giving that, None for a name that never was public here).
        submodules: Subpackages reachable as attributes without an import statement.
    """
    gone: Callable[[str], str | None] = moved if callable(moved) else dict(moved or {}).get
    subpackages = frozenset(submodules)
    declared: dict[str, str] = {}

    def where() -> dict[str, str]:
        if not declared:
            found = declared_names(_package_source(package), package)
            if not found:
                raise GradewireError(
                    f"{package} attaches lazy names but declares none: add "
                    "`from <module> import <Name> as <Name>` lines to its "
                    "`if TYPE_CHECKING:` block"
                )
            declared.update(found)
        return declared

    def public() -> list[str]:
        names = set(where())
        if "__version__" in vars(sys.modules[package]):
            names.add("__version__")
        return sorted(names)

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            listing = public()
            # Stored, as every name is: `from package import *` and later reads find it.
            setattr(sys.modules[package], name, listing)
            return listing
        if name.startswith("__") and name.endswith("__"):
            # Probes for optional dunders (__path__, __wrapped__, __test__...) read no source.
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = where().get(name)
        if module is not None:
            if module == package:  # `from . import sub as sub`
                value = importlib.import_module(f"{package}.{name}")
            else:
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
        return sorted({*public(), *dunders, "__all__"})

    return __getattr__, __dir__
