r"""Text from data on a terminal: control characters shown as escapes, never obeyed.

Ids, completions, metadata and a judge's error text are untrusted: an escape sequence in
one can retitle the window, clear the screen, hide text or move the cursor, and a Unicode
direction override can make text read backwards. `terminal_safe` writes every such
character as a visible escape (``\x1b``, ``\u202e``); `TerminalSafeFormatter` does the
same for log records (warnings that quote a failing sample).
"""

from __future__ import annotations

import logging
import re

__all__ = ["TerminalSafeFormatter", "terminal_safe"]

# C0 and C1 controls, DEL, the bidirectional overrides and isolates, and lone surrogates
# (which a UTF-8 terminal cannot even be sent).
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_UNSAFE_BUT_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: object, *, multiline: bool = False) -> str:
    """``str(text)`` with its control characters written as visible escapes.

    Args:
        text: What to show (converted with ``str``).
        multiline: Keep newlines and tabs (a message of several lines, a traceback);
            else they are escaped too, for text that must stay on one line.
    """
    pattern = _UNSAFE_BUT_LINES if multiline else _UNSAFE
    return pattern.sub(_escape, str(text))


class TerminalSafeFormatter(logging.Formatter):
    """A log formatter whose output, traceback included, is `terminal_safe` (lines kept)."""

    def format(self, record: logging.LogRecord) -> str:
        """Format the record as `logging.Formatter` does, then escape it."""
        return terminal_safe(super().format(record), multiline=True)
