"""Text that would take over a terminal, and the check that none of it reached one.

`ATTACK` sets the window title, clears the screen, turns text red, reverses the rest of the
line (U+202E), opens a C1 control sequence and returns the cursor: what an id, a completion
or a judge's error text may hold. `assert_inert(text)` fails when any of those controls is in
``text`` raw rather than escaped.
"""

from __future__ import annotations

ATTACK = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\u202egnp.exe\x9b1m\r"
RAW = ("\x1b", "\x07", "\u202e", "\x9b", "\r")


def assert_inert(text: str) -> None:
    """Fail when a control character of `ATTACK` reached ``text`` unescaped."""
    for char in RAW:
        assert char not in text, f"{char!r} reached the terminal"
