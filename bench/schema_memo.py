"""The judge client with its per-schema memos switched off: the "before" rows of the benches.

`without_schema_memo` swaps each memoised schema transform for the function it memoises,
so a bench can measure the client as it was (every call rebuilding the response model's JSON
schema, its prompt instruction and the strict form of the schema) beside the client as it
is, in the same run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from gradewire.models import _dialects, _response_format, _structured_call


@contextlib.contextmanager
def without_schema_memo() -> Iterator[None]:
    """Within the block, structured calls build every schema transform afresh."""
    build_format: Any = _response_format._response_format.__wrapped__  # type: ignore[attr-defined]
    build_instruction: Any = _structured_call.instruction_for.__wrapped__  # type: ignore[attr-defined]
    saved = (
        _structured_call.json_schema_response_format,
        _structured_call.instruction_for,
        _dialects.strict_response_format,
    )
    _structured_call.json_schema_response_format = build_format
    _structured_call.instruction_for = build_instruction
    _dialects.strict_response_format = _dialects._strict_format  # type: ignore[assignment]
    try:
        yield
    finally:
        (
            _structured_call.json_schema_response_format,
            _structured_call.instruction_for,
            _dialects.strict_response_format,
        ) = saved
