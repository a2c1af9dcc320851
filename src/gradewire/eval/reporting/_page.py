"""The shell of a self-contained HTML page: inline assets under a strict CSP, data as JSON.

Nothing is loaded from the network. The Content-Security-Policy allows exactly the page's
own script and stylesheet (by hash), so even text that escaped escaping could not run a
script. Data goes in a ``<script type="application/json">`` with every ``<``, ``>`` and
``&`` written as a JSON escape, so no completion can close the element.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["asset", "escape", "page", "page_parts", "script_json", "script_safe"]

escape = html.escape


@cache
def asset(name: str) -> str:
    """A bundled file of ``gradewire/eval/reporting/_assets``."""
    return (
        resources.files("gradewire.eval.reporting")
        .joinpath("_assets")
        .joinpath(name)
        .read_text("utf-8")
    )


def script_json(value: Any) -> str:
    """JSON safe to put inside a ``<script>`` element (lone surrogates kept as escapes)."""
    text = json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"), default=str)
    return script_safe(text)


def script_safe(text: str) -> str:
    """JSON text made safe inside a ``<script>`` element (``<``, ``>``, ``&`` escaped)."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _hash(text: str) -> str:
    digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
    return f"'sha256-{digest}'"


def page(title: str, body: str, *, data: Any = None, script: str | None = None) -> str:
    """A whole HTML document: ``body`` is trusted HTML (its dynamic parts escaped already)."""
    data_json = None if data is None else [script_json(data)]
    return "".join(page_parts(title, body, data_json=data_json, script=script))


def page_parts(
    title: str, body: str, *, data_json: Iterable[str] | None = None, script: str | None = None
) -> Iterator[str]:
    """`page` in pieces, the data as JSON text already made `script_safe` in chunks.

    Written piece by piece, a report of 100,000 samples is never one string in memory.
    """
    css = asset("report.css")
    js = asset(script) if script else ""
    csp = f"default-src 'none'; style-src {_hash(css)}; img-src data:"
    if js:
        csp += f"; script-src {_hash(js)}"
    yield "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(title)}</title>",
            f"<style>{css}</style></head>",
            f"<body>{body}",
        ]
    )
    if data_json is not None:
        yield '\n<script type="application/json" id="gw-data">'
        yield from data_json
        yield "</script>"
    if js:
        yield f"\n<script>{js}</script>"
    yield "\n</body></html>\n"
