"""The example notebooks of ``notebooks/``, run on a fresh kernel, and what they showed.

- `NOTEBOOKS`: every ``notebooks/*.ipynb``, sorted.
- `execute(path, tmp_path)`: runs one top to bottom on a kernel of its own, with
  ``tmp_path`` as its working directory, and returns it with its outputs.
- `outputs(notebook, mime)`: the outputs of that MIME type, cell after cell.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def execute(path: Path, tmp_path: Path) -> nbformat.NotebookNode:
    """Run the notebook at ``path`` in ``tmp_path``; cells time out after 120 s."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=120, resources={"metadata": {"path": str(tmp_path)}})
    # On a loop of our own, closed at the end: `execute()` leaves jupyter_core's event loop
    # open, and its ResourceWarning then fails whichever test the garbage collector meets.
    asyncio.run(client.async_execute())
    return notebook


def outputs(notebook: nbformat.NotebookNode, mime: str) -> list[str]:
    """The ``mime`` outputs of the notebook's code cells, in order."""
    return [
        str(output["data"][mime])
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if mime in output.get("data", {})
    ]
