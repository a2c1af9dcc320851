"""HTTP/1.1 framing read strictly: the end of a head, header lines, lengths, chunk sizes.

Strict where a lax reading could misframe a body (Content-Length must be digits and repeated
values must agree; chunk sizes must be hex), tolerant where h11 and httpx are (bare-LF line
ends, obsolete folded header lines). Every limit fails at once instead of waiting for bytes
that will not come.
"""

from __future__ import annotations

import re

__all__ = [
    "CHUNK_LINE",
    "MAX_HEAD",
    "blank_line",
    "check_partial_chunk_line",
    "content_length",
    "read_headers",
]

MAX_HEAD = 64 * 1024  # also bounds a chunk-size line and the trailers
CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\n]*)?\r?\n")
HEX_RUN = re.compile(rb"[0-9A-Fa-f]*")


def blank_line(buffer: bytearray, start: int) -> tuple[int, int]:
    """Where the lines from ``start`` end, and where the empty line after them ends.

    Lines end in CRLF or, as h11 and httpx tolerate, a bare LF. ``(-1, -1)`` while no empty
    line has come yet.
    """
    if buffer.startswith(b"\r\n", start):
        return start, start + 2
    if buffer.startswith(b"\n", start):
        return start, start + 1
    crlf = buffer.find(b"\n\r\n", start)
    # A bare-LF empty line counts only before the first CRLF one: look no further.
    lf = buffer.find(b"\n\n", start, len(buffer) if crlf < 0 else crlf + 1)
    if lf >= 0:
        return lf, lf + 2
    if crlf >= 0:
        return crlf, crlf + 3
    return -1, -1


def read_headers(lines: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    name = ""
    for line in lines[1:]:
        if line[:1] in (" ", "\t"):
            # Obsolete line folding: the line continues the previous header's value.
            if not name:
                raise ValueError("a folded header line before any header")
            headers[name] = f"{headers[name]} {line.strip()}".strip()
            continue
        name, colon, value = line.partition(":")
        if not colon:
            raise ValueError(f"header line without a colon: {line[:40]!r}")
        name = name.strip().lower()
        value = value.strip()
        # Repeated headers combine as one comma-separated list (RFC 9110).
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


def content_length(value: str) -> int:
    """The body length a Content-Length value gives; repeated values must be identical."""
    if value.isdigit() and value.isascii():
        return int(value)
    values = {part.strip() for part in value.split(",")}
    if len(values) > 1:
        raise ValueError(f"conflicting Content-Length values {value[:40]!r}")
    only = values.pop()
    if not (only.isdigit() and only.isascii()):
        raise ValueError(f"invalid Content-Length {value[:40]!r}: it must be a decimal number")
    return int(only)


def check_partial_chunk_line(buffer: bytearray) -> None:
    """Fail at once on a chunk-size line that cannot become valid, whole or not."""
    if b"\n" in buffer[:MAX_HEAD]:
        line = bytes(buffer[: buffer.find(b"\n")]).rstrip(b"\r")
        raise ValueError(f"invalid chunk size line {line[:40]!r}: the size must be hex digits")
    digits = HEX_RUN.match(buffer)
    count = 0 if digits is None else digits.end()
    if count > 16 or (count < len(buffer) and (count == 0 or buffer[count] not in b" \t;\r")):
        head = bytes(buffer[:40])
        raise ValueError(f"invalid chunk size line {head!r}: the size must be hex digits")
    if len(buffer) > MAX_HEAD:
        raise ValueError("chunk size line too long")
