"""A griffe extension for the API reference: ``from module import Name as Name`` is public.

Each gradewire package declares its public names once, as re-exporting imports in its
``if TYPE_CHECKING:`` block (`gradewire.core._lazy`), and has no ``__all__`` in its source
for griffe to read; griffe takes imported names as private unless told. This marks each
name imported in the redundant-alias form as public, the rule type checkers apply
(mypy's ``no_implicit_reexport``, pyright's rules for py.typed libraries) and the one the
packages' runtime ``__all__`` is derived from. The same as the griffe-public-redundant-alias
package, kept here in a few lines rather than one more docs dependency.
"""

from __future__ import annotations

import ast
from typing import Any

import griffe


class RedundantAliasesArePublic(griffe.Extension):
    """Marks ``Name as Name`` imports public, as type checkers and ``__all__`` have them."""

    def on_alias_instance(
        self, *, node: ast.AST | griffe.ObjectNode, alias: griffe.Alias, **kwargs: Any
    ) -> None:
        """Mark an alias public when its import statement names it ``Name as Name``."""
        if isinstance(node, ast.ImportFrom) and any(
            name.asname == name.name == alias.name for name in node.names
        ):
            alias.public = True
