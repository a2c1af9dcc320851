"""The manual (docs/, mkdocs.yml) builds strictly, covers every public package, and keeps
the README's content.

The build runs as ``make docs`` does (``mkdocs build --strict``) into a temporary folder:
a broken link or anchor, a page left out of the nav or missing from it, and a docstring
that mkdocstrings cannot render each fail it. The ```python blocks of the pages run as
tests of their own (``docs`` is in pytest's testpaths; tests/support/readme_examples.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for entry in nav for page in _nav_pages(entry)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return []


def _config() -> dict[str, object]:
    # mkdocs.yml holds no custom tags; the safe loader is enough.
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert isinstance(config, dict)
    return config


def test_the_docs_build_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    assert (tmp_path / "site" / "index.html").is_file()
    reference = (tmp_path / "site" / "reference" / "gradewire.eval" / "index.html").read_text()
    assert "compare_runs" in reference  # the API reference is generated from the docstrings


def test_every_page_is_in_the_nav_and_every_public_package_has_a_reference_page() -> None:
    nav = _nav_pages(_config()["nav"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert set(pages) <= set(nav), sorted(set(pages) - set(nav))
    packages = ["gradewire"] + [
        f"gradewire.{folder.name}"
        for folder in sorted((ROOT / "src" / "gradewire").iterdir())
        if (folder / "__init__.py").is_file()
    ]
    packages += [
        folder.name
        for folder in sorted(ROOT.glob("integrations/*/src/*"))
        if (folder / "__init__.py").is_file()
    ]
    for package in packages:
        page = f"reference/{package}.md"
        assert page in nav, f"{package} has no API reference page ({page} in mkdocs.yml's nav)"
        assert f"::: {package}\n" in (DOCS / page).read_text(encoding="utf-8"), page


def test_the_readme_links_into_the_docs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert len(set(links)) >= 8, links
    for link in links:
        assert (ROOT / link).is_file(), link
