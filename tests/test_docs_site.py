"""The manual (docs/, mkdocs.yml) builds strictly, covers every public package, and keeps
the README's content.

The build runs as ``make docs`` does (``mkdocs build --strict``) into a temporary folder:
a broken link or anchor, a page left out of the nav or missing from it, and a docstring
that mkdocstrings cannot render each fail it. The ```python blocks of the pages run as
tests of their own (``docs`` is in pytest's testpaths; tests/support/readme_examples.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

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


# Type aliases (Literal[...]) carry no docstring, and the reference shows only documented names.
_UNRENDERED = {"gradewire.core": {"Role"}, "gradewire.tools": {"CompletionVia"}}


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
    # Every public name of every package has its entry: griffe reads the names as the
    # packages declare them (`Name as Name`, docs/_griffe/reexports.py), never imported.
    for page in sorted((tmp_path / "site" / "reference").glob("*/index.html")):
        package = page.parent.name
        html = page.read_text(encoding="utf-8")
        names = importlib.import_module(package).__all__
        missing = [n for n in names if not n.startswith("_") and f'id="{package}.{n}"' not in html]
        assert not set(missing) - _UNRENDERED.get(package, set()), (package, missing)


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


def _report() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "report.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_performance_page_is_what_the_result_files_make() -> None:
    """docs/performance.md is generated from bench/results/*.json, never edited by hand."""
    report = _report()
    assert report.main(["--check"]) == 0, "run `python bench/report.py` (make bench-report)"


def test_the_report_shows_each_figure_with_its_machine_and_lists_what_did_not_run(
    tmp_path: Path,
) -> None:
    report = _report()
    result = {
        "bench": "compare",
        "title": "The bootstrap beside scipy's",
        "command": "python bench/compare.py --pairs 1000",
        "finished": "2026-12-07T21:00:00+00:00",
        "commit": "abc123",
        "machine": {
            "cpu": "Some CPU",
            "cores": 2,
            "memory_bytes": 8 * 2**30,
            "system": "Linux",
            "python": "3.11.9",
            "load_at_start": [1.0, 2.0, 3.0],
            "load_at_end": [4.0, 5.0, 6.0],
        },
        "figures": [
            {
                "measure": "bootstrap | 1,000 pairs",
                "value": 0.5,
                "unit": "s",
                "better": "lower",
                "alternatives": [{"name": "scipy", "value": 8.0}],
                "note": "",
            },
            {
                "measure": "rate",
                "value": 100.0,
                "unit": "samples/s",
                "better": "higher",
                "alternatives": [{"name": "gather", "value": 400.0}],
                "note": "",
            },
        ],
    }
    (tmp_path / "compare.json").write_text(json.dumps(result))
    scripts = [ROOT / "bench" / "compare.py", ROOT / "bench" / "math_match.py"]
    page = report.render(report.read_results(tmp_path), scripts, ROOT)
    assert "Some CPU, 2 cores, 8.0 GiB" in page
    assert "1.0 / 2.0 / 3.0 at the start, 4.0 / 5.0 / 6.0 at the end" in page
    assert "| bootstrap \\| 1,000 pairs | 0.5 s | scipy: 8 s | 16× |" in page
    assert "| rate | 100 samples/s | gather: 400 samples/s | 0.25× |" in page
    not_run = page.split("## Not run for this page", 1)[1]
    assert "`bench/math_match.py`" in not_run
    assert "`bench/compare.py`" not in not_run
    assert "| yes |" in not_run  # math_match writes a result file, it just did not run
