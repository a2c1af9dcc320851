"""The suite's own layout: a test module never imports another test module.

What tests share lives in ``tests/support/`` (or, for one folder's tests alone, in a
non-test module of that folder), and fixtures several modules use live in a
``conftest.py``. An import from a ``test_*`` module ties a test to another test's
internals, hides a fixture behind an import, runs an imported test function twice, and
fails under pytest's ``--import-mode=importlib``, which puts no test folder on the path.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported_test_modules(path: Path) -> list[str]:
    """The ``test_*`` modules the Python source ``path`` imports, as written there."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            # `from . import test_x` and `from pkg import test_x` name modules too.
            joint = "." if node.module else ""
            names = [base] if is_test_module(base) else [base + joint + a.name for a in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Name, ast.Attribute))
            and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr)
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names = [node.args[0].value]
        else:
            continue
        found += [name for name in names if is_test_module(name)]
    return found


def is_test_module(name: str) -> bool:
    """Whether ``name`` is a test module of this suite (not, say, ``aiohttp.test_utils``).

    Test modules are imported by their file's name (each folder of tests is on the path),
    or as ``tests.<folder>.test_x``, ``support.test_x`` or relatively.
    """
    first, *rest = name.lstrip(".").split(".")
    inside = name.startswith(".") or first in ("tests", "support")
    return first.startswith("test_") or (inside and any(p.startswith("test_") for p in rest))


def python_files() -> Iterator[Path]:
    for folder in [ROOT / "tests", *sorted((ROOT / "integrations").glob("*/tests"))]:
        yield from sorted(folder.rglob("*.py"))


def offenders() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in python_files():
        imported = imported_test_modules(path)
        if imported:
            found[path.relative_to(ROOT).as_posix()] = imported
    return found


def test_the_check_sees_every_way_of_importing_a_test_module(tmp_path: Path) -> None:
    source = tmp_path / "example.py"
    source.write_text(
        "import importlib\n"
        "import test_a\n"
        "import tests.eval.test_b as b\n"
        "from test_c import run\n"
        "from . import test_d\n"
        "from .. import test_i\n"
        "from support import test_j\n"
        "from .test_e import x\n"
        "def f():\n"
        "    from test_f import y\n"
        "    return importlib.import_module('test_g'), __import__('test_h')\n"
        "import support.eval_cli, testing, pytest_asyncio\n"
        "from support.eval_cli import run as test_runner\n"
        "from aiohttp import test_utils\n"
        "import aiohttp.test_utils\n"
        "importlib.import_module(name)\n"
    )
    assert sorted(imported_test_modules(source)) == [
        "..test_i",
        ".test_d",
        ".test_e",
        "support.test_j",
        "test_a",
        "test_c",
        "test_f",
        "test_g",
        "test_h",
        "tests.eval.test_b",
    ]


def test_no_test_module_imports_another() -> None:
    found = offenders()
    assert found == {}, (
        "a test module imports from a test module: move what they share to tests/support/ "
        f"(or a non-test module of the folder) and shared fixtures to conftest.py: {found}"
    )
