import ast
import importlib
import inspect
import pickle
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import gradewire

PACKAGE = Path(gradewire.__file__).parent


# Every public package: the root, the stage packages, and the two that stand apart.
STAGES = (
    "core",
    "helpers",
    "http",
    "models",
    "judges",
    "tools",
    "openai",
    "sinks",
    "sinks.background",
    "specs",
    "stats",
    "server",
    "train",
    "eval",
    "plot",
)
PACKAGES = ("gradewire", *(f"gradewire.{stage}" for stage in (*STAGES, "hud", "cli")))


def test_all_is_sorted_and_listed_by_dir():
    assert gradewire.__all__ == sorted(gradewire.__all__)
    assert set(gradewire.__all__) <= set(dir(gradewire))
    listed = {name for name in dir(gradewire) if not name.startswith("__")}
    assert listed == set(gradewire.__all__) - {"__version__"}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_of_every_all_resolves(package):
    module = importlib.import_module(package)
    assert module.__doc__, package  # says what the stage does and what it may import
    assert module.__all__ == sorted(module.__all__), package
    for name in module.__all__:
        assert getattr(module, name) is not None, (package, name)
        assert name in dir(module), (package, name)


def test_a_name_importable_from_two_places_is_one_object():
    objects: dict[str, dict[str, object]] = {}
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            objects.setdefault(name, {})[package] = getattr(module, name)
    for name, found in objects.items():
        first = next(iter(found.values()))
        assert all(obj is first for obj in found.values()), (name, sorted(found))


def test_the_root_names_come_from_their_stages():
    homes: dict[str, str] = {}
    for stage in STAGES:
        module = importlib.import_module(f"gradewire.{stage}")
        for name in module.__all__:
            homes.setdefault(name, stage)
    for name in set(gradewire.__all__) - {"__version__"}:
        assert name in homes, name
        stage = importlib.import_module(f"gradewire.{homes[name]}")
        assert getattr(gradewire, name) is getattr(stage, name), name


INTEGRATIONS = tuple(
    sorted(path.parent.name for path in PACKAGE.parents[1].glob("integrations/*/src/*/__init__.py"))
)


def _declarations(path: Path) -> tuple[list[str], list[str]]:
    """The names an __init__ re-exports under ``if TYPE_CHECKING:`` (``Name as Name``, what
    type checkers take as public), and the imports there that are not in that form."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    declared: list[str] = []
    other: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.ImportFrom):
                    for alias in stmt.names:
                        target = declared if alias.asname == alias.name else other
                        target.append(alias.name)
    return declared, other


@pytest.mark.parametrize("package", PACKAGES + INTEGRATIONS)
def test_each_public_name_is_declared_once_where_type_checkers_read_it(package):
    module = importlib.import_module(package)
    path = Path(module.__file__)
    declared, other = _declarations(path)
    assert not other, (
        f"{path}: declare a public name as `from <module> import {other[0]} as {other[0]}` in "
        "the TYPE_CHECKING block (gradewire.core._lazy says why)"
    )
    assert len(declared) == len(set(declared)), sorted(n for n in declared if declared.count(n) > 1)
    assert set(declared) == set(module.__all__) - {"__version__"}, package
    tree = ast.parse(path.read_text(encoding="utf-8"))
    written = [
        target.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    ]
    assert "__all__" not in written, f"{path}: __all__ is derived from the declarations"


def test_importing_every_package_imports_none_of_their_modules():
    # Each package's names come when used: importing all of them, the integrations too,
    # loads only the packages and the lazy-attribute machinery, and reads no source.
    packages = [*PACKAGES, *INTEGRATIONS]
    code = (
        "import importlib, sys\n"
        f"for package in {packages!r}:\n"
        "    importlib.import_module(package)\n"
        "print(sorted(m for m in sys.modules if m.startswith('gradewire')))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'ast', 'typing', 'wandb', "
        "'mlflow', 'ray', 'torch', 'transformers', 'trl', 'inspect_ai', 'verifiers', "
        "'numpy', 'pydantic', 'httpx', 'aiohttp'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules, heavy = (ast.literal_eval(line) for line in out.stdout.splitlines())
    lazy_machinery = {"gradewire.core._lazy", "gradewire.core._errors"}
    assert set(modules) == set(packages) | lazy_machinery
    assert heavy == []


def test_all_is_read_from_the_source_on_first_use_only():
    code = (
        "import sys, gradewire, gradewire.models\n"
        "print('ast' in sys.modules)\n"
        "gradewire.models.__all__, dir(gradewire)\n"
        "print('ast' in sys.modules, '__all__' in vars(gradewire.models))\n"
        "print(sorted(m for m in sys.modules if m.startswith('gradewire.models.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, after, loaded = out.stdout.splitlines()
    assert before == "False"
    assert after == "True True"  # parsed once, then a plain attribute
    assert loaded == "[]"  # listing the names imports none of them


def test_a_new_package_declares_a_name_in_one_line(tmp_path, monkeypatch):
    # The format as a new package (or a new name) would use it, outside gradewire's tree.
    package = tmp_path / "newpkg"
    (package / "sub").mkdir(parents=True)
    (package / "_things.py").write_text("class Thing:\n    pass\n\ndef helper():\n    pass\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "_deep.py").write_text("VALUE = 3\n")
    (package / "__init__.py").write_text(
        '"""A package."""\n'
        "import typing\n"
        "from gradewire.core._lazy import attach\n"
        "__version__ = '1.0'\n"
        "if typing.TYPE_CHECKING:\n"
        "    from collections.abc import Callable\n"
        "    from newpkg._things import Thing as Thing, helper\n"
        "    from .sub._deep import VALUE as VALUE\n"
        "    from ._things import helper as helper\n"
        "if not typing.TYPE_CHECKING:\n"
        "    __getattr__, __dir__ = attach(__name__, moved={'Old': 'use Thing'})\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m.startswith("newpkg")]:
        monkeypatch.delitem(sys.modules, name)
    newpkg = importlib.import_module("newpkg")
    assert "newpkg._things" not in sys.modules
    assert newpkg.__all__ == ["Thing", "VALUE", "__version__", "helper"]
    assert "newpkg._things" not in sys.modules
    assert {n for n in dir(newpkg) if not n.startswith("_")} == {"Thing", "VALUE", "helper"}
    assert newpkg.VALUE == 3
    assert newpkg.Thing is importlib.import_module("newpkg._things").Thing
    assert "Callable" not in newpkg.__all__  # a plain import there is for annotations only
    with pytest.raises(AttributeError, match="no attribute 'Callable'"):
        newpkg.Callable  # noqa: B018
    with pytest.raises(ImportError, match="use Thing"):
        exec("from newpkg import Old", {})
    namespace: dict[str, object] = {}
    exec("from newpkg import *", namespace)
    assert set(namespace) - {"__builtins__"} == {"Thing", "VALUE", "__version__", "helper"}


def test_a_package_that_declares_nothing_says_how_to_declare(tmp_path, monkeypatch):
    (tmp_path / "emptypkg").mkdir()
    (tmp_path / "emptypkg" / "__init__.py").write_text(
        "from gradewire.core._lazy import attach\n__getattr__, __dir__ = attach(__name__)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    emptypkg = importlib.import_module("emptypkg")
    with pytest.raises(gradewire.GradewireError, match="Name> as <Name>"):
        emptypkg.anything  # noqa: B018


def test_import_gradewire_is_light():
    code = (
        "import sys, gradewire\n"
        "print(sorted(m for m in sys.modules if m == 'gradewire' or m.startswith('gradewire.')))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'numpy', 'pydantic', 'httpx', 'asyncio', 'typing_extensions'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules, heavy = (ast.literal_eval(line) for line in out.stdout.splitlines())
    assert len(modules) <= 5, modules
    assert heavy == []


def test_first_use_imports_only_what_it_needs():
    code = (
        "import sys, gradewire as gw\n"
        "gw.StringThread([('user', 'q'), ('assistant', 'a')]), gw.Grade(1.0, 'k'), gw.exact_match\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'pydantic', 'httpx'}))\n"
        "print(sorted(m for m in sys.modules if m.startswith('gradewire.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    heavy, modules = (ast.literal_eval(line) for line in out.stdout.splitlines())
    assert heavy == []
    assert not any(
        m.startswith(("gradewire.judges", "gradewire.sinks", "gradewire.eval")) for m in modules
    )


@pytest.mark.parametrize(
    ("package", "name", "where"),
    [
        ("gradewire", "SubScore", "gradewire.hud"),
        ("gradewire", "EvaluationResult", "gradewire.hud"),
        ("gradewire", "combine", "gradewire.hud"),
        ("gradewire", "combine_any", "gradewire.hud"),
        ("gradewire", "combine_all", "gradewire.hud"),
        ("gradewire", "BashGrader", "gradewire.CommandGrader"),
        ("gradewire", "LLMJudgeGrader", "gradewire.RubricJudgeGrader"),
        ("gradewire", "ChatCompletion", "from gradewire.models import ChatCompletion"),
        ("gradewire", "RetryPolicy", "from gradewire.http import RetryPolicy"),
        ("gradewire", "paired_bootstrap", "from gradewire.eval import paired_bootstrap"),
        ("gradewire.core", "SubScore", "gradewire.hud"),
        ("gradewire.judges", "OpenAIChatModel", "from gradewire.models import OpenAIChatModel"),
        ("gradewire.judges", "LLMJudgeGrader", "gradewire.RubricJudgeGrader"),
        ("gradewire.judges", "render_schema", "from gradewire.helpers import render_schema"),
        ("gradewire.tools", "BashGrader", "gradewire.CommandGrader"),
    ],
)
def test_a_name_that_moved_says_where_it_went(package, name, where):
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match=re.escape(where)) as raised:
        getattr(module, name)
    assert isinstance(raised.value, gradewire.GradewireError)
    assert not hasattr(module, name)
    with pytest.raises(ImportError, match=re.escape(where)) as imported:
        exec(f"from {package} import {name}", {})
    assert isinstance(imported.value, gradewire.GradewireError)


def test_an_unknown_name_is_a_plain_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'") as raised:
        gradewire.Nothing  # noqa: B018
    assert not isinstance(raised.value, gradewire.GradewireError)
    with pytest.raises(ImportError, match="cannot import name 'Nothing'"):
        exec("from gradewire import Nothing", {})


def test_stage_packages_are_attributes_of_the_root():
    assert gradewire.models is importlib.import_module("gradewire.models")
    assert gradewire.models.ChatCompletion.__module__ == "gradewire.models._chat_model"


def test_public_objects_work_with_standard_tooling():
    # Source lookup (IPython's ??, autodoc) and type-hint resolution need each object's
    # real module, so public objects keep it rather than claiming `gradewire`.
    for name in gradewire.__all__:
        obj = getattr(gradewire, name)
        if isinstance(obj, type) or inspect.isfunction(obj):
            assert inspect.getsource(obj)
            # create_app returns aiohttp's Application, a name only type checkers import.
            if name != "create_app":
                typing.get_type_hints(obj)
    grade = gradewire.Grade(1.0, "k")
    assert pickle.loads(pickle.dumps(grade)) == grade


def test_errors_share_one_root():
    for name in gradewire.__all__:
        obj = getattr(gradewire, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert issubclass(obj, gradewire.GradewireError), name
    assert issubclass(gradewire.InvalidTypeError, TypeError)
    assert issubclass(gradewire.InvalidInputError, ValueError)
    assert issubclass(gradewire.OutputParserException, ValueError)
    assert issubclass(gradewire.MissingDependencyError, ImportError)
    error = gradewire.OutputParserException("bad", "raw text")
    again = pickle.loads(pickle.dumps(error))
    assert (again.message, again.llm_output) == ("bad", "raw text")


def test_missing_dependency_names_the_pip_command():
    error = gradewire.MissingDependencyError("pandas", extra="pandas", purpose="make frames")
    assert "pip install 'gradewire[pandas]'" in str(error)
    assert str(pickle.loads(pickle.dumps(error))) == str(error)


def test_import_pulls_no_tracker_or_heavy_framework():
    code = (
        "import sys, gradewire\n"
        "heavy = {'wandb', 'mlflow', 'torch', 'transformers', 'ray', 'pandas', 'trl'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_core_source_never_imports_integrations():
    forbidden = {"wandb", "mlflow", "torch", "transformers", "ray", "trl"}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            else:
                continue
            assert not forbidden & {n.split(".")[0] for n in names}, (path, names)


def test_package_is_typed():
    assert (PACKAGE / "py.typed").exists()
