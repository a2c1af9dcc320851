"""The Inspect log reader found as `gradewire compare` finds it: through its entry point."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import metadata

import pytest

from gradewire.eval.runs._sources import EVAL_SOURCES

READER = "gradewire_inspect._log_source:read_inspect_log"


@pytest.fixture
def inspect_source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The ``gradewire.eval_sources`` entry point of the Inspect reader, installed.

    pyproject.toml declares it; an editable install made before it was declared lacks it
    until reinstalled, so the tests then add the same declaration in a distribution of their
    own on ``sys.path``, where `importlib.metadata` finds it as it finds an installed one.
    """
    if any(e.value == READER for e in metadata.entry_points(group=EVAL_SOURCES)):
        yield
        return
    root = tmp_path_factory.mktemp("entry_points")
    info = root / "gradewire_inspect_source-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: gradewire-inspect-source\nVersion: 0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        f"[{EVAL_SOURCES}]\ninspect = {READER}\n", encoding="utf-8"
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(root))
        yield
