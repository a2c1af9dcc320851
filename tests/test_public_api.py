import __future__

import ast
import importlib
import inspect
import pickle
import subprocess
import sys
import types
import typing
from pathlib import Path

import gradewire

PACKAGE = Path(gradewire.__file__).parent


def test_all_is_exact_and_sorted():
    assert gradewire.__all__ == sorted(gradewire.__all__)
    # Submodules (gradewire.hud once imported) are attributes too, but not exports.
    public = {
        name
        for name, value in vars(gradewire).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(gradewire.__all__) - {"__version__"}
    for name in gradewire.__all__:
        assert getattr(gradewire, name) is not None


# The stages whose names gradewire re-exports; gradewire.hud and gradewire.cli stand apart.
STAGES = (
    "core",
    "helpers",
    "http",
    "judges",
    "tools",
    "sinks",
    "sinks.background",
    "specs",
    "stats",
    "server",
    "train",
    "eval",
)


def test_each_stage_curates_its_names_and_the_root_gathers_them():
    gathered = set()
    for stage in (*STAGES, "hud", "cli"):
        module = importlib.import_module(f"gradewire.{stage}")
        assert module.__doc__, stage  # says what the stage does and what it may import
        assert module.__all__ == sorted(module.__all__), stage
        public = {
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and not isinstance(value, types.ModuleType)
            and value is not __future__.annotations
        }
        # HUD's own __all__ lists one private-looking name, _combine_subscores.
        assert public == {n for n in module.__all__ if not n.startswith("_")}, stage
        assert all(hasattr(module, name) for name in module.__all__), stage
        if stage in STAGES:
            for name in module.__all__:
                assert getattr(gradewire, name) is getattr(module, name), (stage, name)
            gathered |= set(module.__all__)
    assert gathered == set(gradewire.__all__) - {"__version__"}


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
