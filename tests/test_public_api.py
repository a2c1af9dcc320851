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


def _type_checking_names(path: Path) -> set[str]:
    """The names an __init__ imports under ``if TYPE_CHECKING:`` (what type checkers see)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.ImportFrom):
                    names |= {alias.asname or alias.name for alias in stmt.names}
    return names


@pytest.mark.parametrize("package", PACKAGES)
def test_type_checkers_see_the_names_the_package_resolves(package):
    module = importlib.import_module(package)
    if "__getattr__" not in vars(module):
        return  # an eager package: its imports are the names
    seen = _type_checking_names(Path(module.__file__))
    assert seen == set(module.__all__) - {"__version__"}, package


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
