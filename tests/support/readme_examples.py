"""Runs every ```python block of README.md, integrations/*/README.md and docs/**/*.md as a test.

pytest-markdown-docs (``--markdown-docs`` in the pytest options) collects each fence whose
language is ``python``, ``py`` or ``python3`` as a test item; a fence marked
```` ```python notest ```` is not run. This plugin (loaded by the root ``conftest.py``) gives
each of those items the world its code expects, so that every block runs exactly as a
reader would copy it into a file and run it:

- **Rules checked first**: a block must be a complete program: no top-level ``await``
  (wrap async code in ``asyncio.run`` or ``gw.run_sync``) and no ``continuation`` (it would
  use names from an earlier block). ``__name__`` is ``"__main__"``, as in a script.
- **A fresh working directory** (the test's ``tmp_path``): whatever a block writes (an
  ``mlflow.db``, a ``gradewire-demo/`` folder, a JSONL file) lands there, and so does what
  it puts in the temp folder (``TMPDIR``; a `BackgroundSink`'s spill; only Ray keeps
  ``/tmp/ray``, as its socket paths must stay short; when the Ray tests' session instance
  is up, its workers write relative paths in its own scratch folder). Every fence of the
  same Markdown file whose info string has ``file=NAME`` (```` ```toml file=graders.toml
  ````) is written there first, so a block can load the file the README shows beside it.
- **W&B offline**: ``WANDB_MODE=offline`` and every W&B directory inside the working
  directory; W&B's service is stopped at the end of the session.
- **A judge on loopback**: a fresh `JudgeServer` (``tests/support/judge_server.py``) per
  block, found through ``OPENAI_BASE_URL`` (and ``GRADEWIRE_JUDGE_BASE_URL`` for
  `gradewire.hud`), with ``OPENAI_API_KEY`` and ``JUDGE_API_KEY`` set. It answers a
  JSON-schema request with an answer that fits the schema (first enum value, non-empty
  strings, one item per array), and anything else with ``PASS``.
- **A real MLflow tracking server on loopback** for blocks whose code mentions ``mlflow``:
  one ``mlflow server`` per session (``integrations/mlflow/tests/mlflow_support.py``),
  started on first use and found through ``MLFLOW_TRACKING_URI``.
- **Printed output**: what a block prints is kept (and shown when it fails) rather than
  mixed into pytest's output (its ``print`` writes to the test's buffer). A comment
  ``# -> TEXT`` says that the block prints a line matching TEXT, where ``...`` matches
  anything: ``print(grades)  # -> [1.0, 0.0]``, or the comment alone on the next line.
  The lines so promised must appear in that order.

Nothing here is specific to one block or one page: a new README section or docs page (any
Markdown file under a folder of pytest's testpaths, ``docs`` among them) gets the same
services. Use
them through the environment (``OPENAI_BASE_URL``, ``MLFLOW_TRACKING_URI``) or start what a
block serves itself on port 0; never a fixed port, never a host other than loopback.
"""

from __future__ import annotations

import builtins
import io
import re
import sys
import tempfile
import tokenize
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.judge_server import JudgeServer, Request, chat
from support.wandb_offline import go_offline, stop_wandb

__all__ = ["expected_lines", "fence_files", "schema_instance"]

_ROOT = Path(__file__).resolve().parents[2]
_MARKER = "markdown-docs"  # the marker pytest-markdown-docs puts on its items
_EXPECT = re.compile(r"#\s*->\s?(.*)$")


# What the block prints, while it runs (pytest-markdown-docs turns capturing off).
_printed: list[io.StringIO] = []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker(_MARKER) is not None:
            item.add_marker(pytest.mark.usefixtures("readme_world"))


def pytest_markdown_docs_globals() -> dict[str, Any]:
    """Globals of every block: run as a script, and printing into the test's buffer."""
    return {"__name__": "__main__", "print": _print}


def _print(*args: Any, **kwargs: Any) -> None:
    if kwargs.get("file") is None and _printed:
        kwargs["file"] = _printed[-1]
    builtins.print(*args, **kwargs)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    if item.get_closest_marker(_MARKER) is None:
        return (yield)
    buffer = io.StringIO()
    _printed.append(buffer)
    try:
        result = yield
    finally:
        _printed.remove(buffer)
        if buffer.getvalue():
            item.add_report_section("call", "stdout", buffer.getvalue())
    _check_output(str(getattr(item, "code", "")), buffer.getvalue())
    return result


def _check_output(code: str, printed: str) -> None:
    lines = printed.splitlines()
    position = 0
    for expected in expected_lines(code):
        pattern = re.compile(".*".join(map(re.escape, expected.strip().split("..."))))
        for index in range(position, len(lines)):
            if pattern.fullmatch(lines[index].strip()):
                position = index + 1
                break
        else:
            shown = "\n".join(lines) or "(nothing)"
            raise AssertionError(
                f"the block says it prints a line matching {expected!r} (a '# ->' comment), "
                f"but after the lines already matched it printed:\n{shown}"
            )


def expected_lines(code: str) -> list[str]:
    """The ``# -> TEXT`` promises of a block, in order."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type == tokenize.COMMENT and (match := _EXPECT.match(token.string)):
            found.append(match.group(1))
    return found


@pytest.fixture
def readme_world(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """The working directory, files, environment and services a README block runs with."""
    item = request.node
    code: str = item.code
    _check_rules(item, code)
    monkeypatch.chdir(tmp_path)
    scratch = tmp_path / ".tmp"  # a spill folder or other temp file stays inside the test's
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    # Except Ray's: it puts Unix sockets there, whose paths may not pass 107 bytes. And a
    # block that starts Ray sends no usage report.
    monkeypatch.setenv("RAY_TMPDIR", "/tmp")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    for name, text in fence_files(Path(item.path)).items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for name in (
        "MLFLOW_TRACKING_URI",
        "MLFLOW_EXPERIMENT_NAME",
        "MLFLOW_EXPERIMENT_ID",
        "RANK",
        "LOCAL_RANK",
        "SLURM_PROCID",
        "GRADEWIRE_SERVE_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    go_offline(monkeypatch, tmp_path / ".wandb")
    if "wandb" in code:
        request.getfixturevalue("_readme_wandb_service")
    if "mlflow" in code:
        server = request.getfixturevalue("_readme_mlflow_server")
        monkeypatch.setenv("MLFLOW_TRACKING_URI", server.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        monkeypatch.setenv("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    with JudgeServer(_schema_answer) as judge:
        monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
        monkeypatch.setenv("GRADEWIRE_JUDGE_BASE_URL", judge.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "readme-key")
        monkeypatch.setenv("JUDGE_API_KEY", "readme-key")
        yield


def _check_rules(item: pytest.Item, code: str) -> None:
    try:
        # Compiled as a script is: without the flag that allows a top-level await.
        compile(code, str(item.path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        detail = (
            f"line {exc.lineno}: {exc.msg}; wrap the async code in `async def main()` and "
            "run it with asyncio.run(main()) or gw.run_sync(main()), as a script must"
            if "outside" in str(exc.msg) and ("await" in str(exc.msg) or "async" in str(exc.msg))
            else f"line {exc.lineno}: {exc.msg}"
        )
        pytest.fail(f"{item.nodeid} is not a complete program ({detail})", pytrace=False)
    info = _fence_info(Path(item.path), int(item.start_line))
    if "continuation" in info:
        pytest.fail(
            f"{item.nodeid} is marked 'continuation': make it a complete program (its own "
            "imports and data), so that a reader can run it alone",
            pytrace=False,
        )


def _fences(path: Path) -> list[tuple[int, list[str], str]]:
    """(first code line, info words, content) of every fence of a Markdown file."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    return [
        (token.map[0] + 1, token.info.split(), token.content)
        for token in tokens
        if token.type == "fence" and token.map
    ]


def _fence_info(path: Path, start_line: int) -> list[str]:
    for line, info, _ in _fences(path):
        if line == start_line:
            return info
    return []


def fence_files(path: Path) -> dict[str, str]:
    """The fences of a Markdown file marked ``file=NAME``: name -> content."""
    files: dict[str, str] = {}
    for _, info, content in _fences(path):
        for word in info[1:]:
            if word.startswith("file="):
                name = word[len("file=") :]
                if not name or Path(name).is_absolute() or ".." in Path(name).parts:
                    raise ValueError(
                        f"{path}: a fence's file= must be a relative path, not {name!r}"
                    )
                files[name] = content
    return files


@pytest.fixture(scope="session")
def _readme_wandb_service() -> Iterator[None]:
    yield
    stop_wandb()


@pytest.fixture(scope="session")
def _readme_mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    support = _ROOT / "integrations" / "mlflow" / "tests"
    if str(support) not in sys.path:
        sys.path.insert(0, str(support))
    from mlflow_support import MlflowServer, migrate_template

    directory = tmp_path_factory.mktemp("readme-mlflow")
    db = directory / "mlflow.db"
    migrate_template(db)
    server = MlflowServer(directory, db)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _schema_answer(request: Request) -> Any:
    """A judge's answer: one that fits the JSON schema the request asks for, if any."""
    body = request.json
    if not isinstance(body, dict):
        return chat("PASS")
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if not isinstance(schema, dict):
        return chat("PASS")
    import json

    return chat(json.dumps(schema_instance(schema, schema)))


def schema_instance(schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """The simplest value that fits a JSON schema (the subset pydantic models produce)."""
    if "$ref" in schema:
        target: Any = root
        for part in str(schema["$ref"]).lstrip("#/").split("/"):
            target = target[part]
        return schema_instance(target, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for union in ("anyOf", "oneOf", "allOf"):
        if union in schema:
            options = [o for o in schema[union] if o.get("type") != "null"] or schema[union]
            return schema_instance(options[0], root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    makers: dict[str, Callable[[], Any]] = {
        "object": lambda: {
            name: schema_instance(sub, root)
            for name, sub in (schema.get("properties") or {}).items()
        },
        "array": lambda: [
            schema_instance(schema.get("items") or {}, root)
            for _ in range(max(1, int(schema.get("minItems", 1))))
        ],
        "string": lambda: "It meets the criterion.",
        "integer": lambda: int(schema.get("maximum", schema.get("minimum", 1))),
        "number": lambda: float(schema.get("maximum", schema.get("minimum", 1.0))),
        "boolean": lambda: True,
        "null": lambda: None,
    }
    return makers[kind]()
