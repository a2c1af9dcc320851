"""The README and docs examples run as tests: the setup that makes them run, and its rules.

The blocks themselves are test items of their own (``README.md::[CodeFence#N]``,
``docs/tutorials/eval-engineer.md::[CodeFence#N]``), collected by pytest-markdown-docs and
given their services by ``tests/support/readme_examples.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from support.readme_examples import expected_lines, fence_files, schema_instance

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
READMES = [ROOT / "README.md", *sorted(ROOT.glob("integrations/*/README.md"))]
DOCS = sorted(ROOT.glob("docs/**/*.md"))
_RUN = {"python", "py", "python3"}  # what pytest-markdown-docs collects


def _fences(path: Path) -> list[list[str]]:
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    return [t.info.split() for t in tokens if t.type == "fence"]


def test_every_readme_is_collected_with_its_code_blocks():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    options = options["ini_options"]
    assert "--markdown-docs" in options["addopts"].split()
    collected = {p for pattern in options["testpaths"] for p in ROOT.glob(pattern)}
    collected |= {md for folder in collected if folder.is_dir() for md in folder.rglob("*.md")}
    for readme in READMES + DOCS:
        assert readme in collected, f"{readme.relative_to(ROOT)} is not in testpaths"
    runnable = [i for i in _fences(ROOT / "README.md") if i and i[0] in _RUN and "notest" not in i]
    assert len(runnable) >= 4, "the README lost its code examples (one per main job)"
    in_docs = [i for d in DOCS for i in _fences(d) if i and i[0] in _RUN and "notest" not in i]
    assert len(in_docs) >= 20, "the docs lost their code examples"


def test_the_readme_is_an_entrance():
    """The README stays short and says the two commands of a fresh machine, which exist."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert "make demo" in text
    assert "make test" in text
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test", "docs"):
        assert f"\n{target}:" in makefile, target


@pytest.mark.parametrize("readme", READMES + DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_fences_use_a_language_the_collector_runs(readme):
    """A ```Python or ```pycon fence would be skipped silently: it must say python."""
    for info in _fences(readme):
        if info and info[0].lower() in {"python", "py", "python3", "pycon", "ipython"}:
            assert info[0] in _RUN, f"{readme.name}: a ```{info[0]} fence is never run"


def test_expected_output_comments():
    code = textwrap.dedent(
        """\
        print([1.0, 0.0])  # -> [1.0, 0.0]
        x = 1  # not a promise
        print({"a": 1})
        # -> {'a': ...}
        """
    )
    assert expected_lines(code) == ["[1.0, 0.0]", "{'a': ...}"]


def test_schema_instance_fits_the_judges_schemas():
    from pydantic import BaseModel

    from gradewire.models._structured_call import json_schema_response_format

    class Verdict(BaseModel):
        reasoning: str
        verdict: str

    class Verdicts(BaseModel):
        verdicts: list[Verdict]
        score: int | None = None

    for model in (Verdict, Verdicts):
        response_format = json_schema_response_format(model)
        assert response_format is not None
        schema = response_format["json_schema"]["schema"]
        model.model_validate(schema_instance(schema, schema))


def test_file_fences_are_written_beside_the_blocks(tmp_path):
    page = tmp_path / "doc.md"
    page.write_text(
        "```toml file=graders.toml\n[judge]\n```\n\n```json file=../escape.json\n{}\n```\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="relative path"):
        fence_files(page)
    page.write_text("```toml file=conf/graders.toml\n[judge]\n```\n", encoding="utf-8")
    assert fence_files(page) == {"conf/graders.toml": "[judge]\n"}


_DOC = """\
# A page

```python
print("hi")  # -> hi
```

```python
print("hi")  # -> bye
```

```python
import asyncio
await asyncio.sleep(0)
```

```python notest
raise SystemExit("a notest block must not run")
```

```python
from pathlib import Path
import os
assert Path("data.txt").read_text() == "from the page\\n"
assert os.environ["WANDB_MODE"] == "offline"
assert __name__ == "__main__"
print(os.environ["OPENAI_BASE_URL"])  # -> http://127.0.0.1:.../v1
```

```text file=data.txt
from the page
```
"""


def test_the_rules_are_enforced_on_any_markdown_page(tmp_path):
    """The setup run on a page of its own: promises checked, top-level await refused."""
    (tmp_path / "page.md").write_text(_DOC, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nfilterwarnings = error\nasyncio_default_fixture_loop_scope = function\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "support.readme_examples",
            "--markdown-docs",
            "-p",
            "no:cacheprovider",
            "-rA",
            "-W",
            "error",
            "--rootdir",
            str(tmp_path),
            "-c",
            str(tmp_path / "pytest.ini"),
            str(tmp_path / "page.md"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
        check=False,
    )
    out = done.stdout
    assert "PASSED page.md::[CodeFence#1]" in out, out
    assert "FAILED page.md::[CodeFence#2]" in out, out
    assert "prints a line matching 'bye'" in out, out
    assert "FAILED page.md::[CodeFence#3]" in out or "ERROR page.md::[CodeFence#3]" in out, out
    assert "asyncio.run(main())" in out, out
    assert "a notest block must not run" not in out, out
    assert "PASSED page.md::[CodeFence#4]" in out, out
    assert "2 passed" in out, out
