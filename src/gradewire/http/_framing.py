"""Reading one HTTP/1.1 answer from the bytes a connection receives (no I/O), as RFC 9112 says.

The grammar is h11's reading of RFC 9112 (h11 is the parser under httpx), and a differential
test holds the two together on generated answers, valid and not: what h11 reads is read with
the same status, headers, body and framing; what h11 refuses is refused.

* Field names are tokens, with no whitespace before the colon; values hold no NUL, CR or LF
  (RFC 9110 section 5.5; other control characters are kept, as that section allows). Lines
  of the head may end in a bare LF (RFC 9112 section 2.2); obsolete folded lines are joined.
* ``Connection`` is a list of tokens: ``close`` anywhere in it ends the connection, as does
  an HTTP/1.0 answer.
* Transfer-Encoding is ``chunked`` alone, given once, and wins over Content-Length (section
  6.3). Content-Length is decimal digits, repeated only with identical values. 204 and 304
  answers have no body; an answer with neither framing runs to the close.
* Chunk-size lines end in CRLF, chunk data is followed by CRLF, trailers are read as fields.
* 1xx answers are skipped, but 101: no protocol upgrade was asked for.

Stricter than h11: the major version must be 1, and the connection is never reused after an
answer that carries both Transfer-Encoding and Content-Length (how responses are smuggled) or
after bytes beyond the answer. The status line and chunk-size lines fail as soon as their
first bytes cannot start a valid line, rather than by waiting for bytes that will not come.
Heads and chunk-size lines are bounded (`MAX_HEAD`), bodies by the caller's cap
(`ResponseTooLarge`), so a huge answer cannot exhaust memory.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["MAX_HEAD", "Answer", "AnswerReader", "MalformedAnswer", "ResponseTooLarge"]

MAX_HEAD = 64 * 1024
"""The largest head, chunk-size line or trailer section read, in bytes."""

_TOKEN = "[-!#$%&'*+.^_`|~0-9A-Za-z]+"
# A visible character or obs-text, or a control other than NUL and the whitespace ones.
_VCHAR = "[^\x00\t\n\x0b\x0c\r ]"
_FIELD = f"({_TOKEN}):[ \t]*((?:{_VCHAR}+(?:[ \t]+{_VCHAR}+)*)?)[ \t]*"
_FIELD_LINE = re.compile(_FIELD)
# Whole field lines, each from a line start through its line end: when every line of a block
# but its last, empty one is found, the block is read in one pass in C; anything else goes
# line by line, which folds and names the bad line.
_FIELD_LINES = re.compile(f"^{_FIELD}\r?\n", re.MULTILINE)
_FRAMING_FIELDS = frozenset(("content-length", "transfer-encoding", "connection"))
_STATUS_LINE = re.compile("HTTP/([0-9])\\.([0-9]) ([0-9]{3})(?: [^\x00\n\x0b\x0c\r]*)?\r?")
# What the first line can be while it is still arriving (its end not yet come).
_STATUS_START = re.compile(
    rb"(?:H(?:T(?:T(?:P(?:/(?:[0-9](?:\.(?:[0-9](?: (?:[0-9](?:[0-9](?:[0-9]"
    rb"(?: [^\x00\n\x0b\x0c\r]*)?\r?)?)?)?)?)?)?)?)?)?)?)?)?"
)
_HEAD_END = re.compile(rb"\n\r?\n")
_DIGITS = re.compile("[0-9]{1,20}")
_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;[^\n]*|[ \t]*)")  # without its CRLF
_CHUNK_START = re.compile(rb"[0-9A-Fa-f]{0,20}|[0-9A-Fa-f]{1,20}(?:;[^\n]*|[ \t]*\r?)")
_CHUNK_START_CHECKED = 64  # bytes of a chunk-size line checked against the grammar as they come

_HEAD, _LENGTH, _CLOSE, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILERS, _DONE = range(8)


class MalformedAnswer(ValueError):
    """The bytes are not an HTTP/1.1 answer as RFC 9112 writes it."""


class ResponseTooLarge(Exception):
    """The answer (or its decompressed body) is larger than the cap it is read with.

    Attributes:
        detail: How large it is or claims to be, for the error message.
        status: The HTTP status of the answer.
    """

    def __init__(self, detail: str, *, status: int) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status


class Answer(NamedTuple):
    """One answer read whole."""

    status: int
    headers: dict[str, str]  # lowercase names; repeated fields joined by ", "
    body: bytes  # as framed: still compressed when Content-Encoding says so
    reusable: bool  # the connection can carry the next request


# The fields of a head: the headers, the Content-Length (normalised), whether chunked, whether
# "close" is in the Connection list. A plain tuple: a NamedTuple costs a Python call per head.
_Fields = tuple[dict[str, str], str | None, bool, bool]


def _unfold(lines: list[str]) -> list[str]:
    """Join obsolete folded lines (a line starting with SP or HTAB continues the last)."""
    joined: list[str] = []
    for line in lines:
        if line.startswith((" ", "\t")):
            if not joined:
                raise MalformedAnswer(f"a folded line before any field: {line[:60]!r}")
            joined[-1] += " " + line.lstrip(" \t")
        else:
            joined.append(line)
    return joined


def read_fields(block: str) -> _Fields:
    """The fields of a head or trailer section, checked and normalised as h11 does.

    ``block`` holds the field lines and the empty line that ends them.
    """
    pairs: list[tuple[str, str]] = _FIELD_LINES.findall(block)
    if len(pairs) == block.count("\n") - 1:
        return _normalise(pairs)
    lines = _lines(block)
    if any(line.startswith((" ", "\t")) for line in lines):
        lines = _unfold(lines)
    pairs = []
    for line in lines:
        match = _FIELD_LINE.fullmatch(line)
        if match is None:
            raise MalformedAnswer(f"invalid header line {line[:60]!r}")
        pairs.append((match[1], match[2]))
    return _normalise(pairs)


def _normalise(pairs: list[tuple[str, str]]) -> _Fields:
    headers: dict[str, str] = {}
    length: str | None = None
    chunked = close = False
    for raw_name, value in pairs:
        name = raw_name.lower()
        if name not in _FRAMING_FIELDS:
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        elif name == "content-length":
            if not (value.isascii() and value.isdigit() and len(value) <= 20):
                value = _one_length(value)
            if length is not None and value != length:
                raise MalformedAnswer(f"conflicting Content-Length values {value[:40]!r}")
            headers[name] = length = value
        elif name == "transfer-encoding":
            if chunked:
                raise MalformedAnswer("Transfer-Encoding given twice")
            if value.lower() != "chunked":
                raise MalformedAnswer(
                    f"unsupported Transfer-Encoding {value[:40]!r}: only chunked is read"
                )
            chunked = True
            headers[name] = "chunked"
        else:  # Connection: a list of tokens
            close = close or "close" in (token.strip(" \t") for token in value.lower().split(","))
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers, length, chunked, close


def _one_length(value: str) -> str:
    """The one length a Content-Length list gives: its items must be identical numbers."""
    values = {part.strip(" \t") for part in value.split(",")}
    if len(values) > 1:
        raise MalformedAnswer(f"conflicting Content-Length values {value[:40]!r}")
    length = values.pop()
    if _DIGITS.fullmatch(length) is None:
        raise MalformedAnswer(f"invalid Content-Length {value[:40]!r}: it must be a decimal number")
    return length


def _lines(block: str) -> list[str]:
    """The lines of a block ending with an empty line, each without its CRLF or bare LF."""
    lines = block.split("\n")[:-2]
    return [line[:-1] if line.endswith("\r") else line for line in lines]


class AnswerReader:
    """Reads the answer to each request sent on one connection, fed the bytes as they come."""

    __slots__ = (
        "_body",
        "_buffer",
        "_keep_alive",
        "_max_bytes",
        "_remaining",
        "_searched",
        "_state",
        "_status",
        "headers",
    )

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.start(0)

    def start(self, max_bytes: int) -> None:
        """Expect the answer to a request just sent, its body at most ``max_bytes``."""
        self._buffer.clear()
        self._max_bytes = max_bytes
        self._state = _HEAD
        self._searched = 0  # how far the buffer was searched for the end of a line or head
        self._status = 0
        self.headers: dict[str, str] = {}
        self._keep_alive = True
        self._remaining = 0
        self._body = bytearray()

    def feed(self, data: bytes) -> Answer | None:
        """Take bytes from the server; the answer once it is whole, else None.

        Raises:
            MalformedAnswer: The bytes cannot be (the start of) a valid answer.
            ResponseTooLarge: The body is, or says it is, larger than the cap.
        """
        self._buffer += data
        buffer = self._buffer
        while True:
            state = self._state
            if state == _LENGTH:
                if len(buffer) < self._remaining:
                    return None
                body = bytes(buffer[: self._remaining])
                del buffer[: self._remaining]
                return self._done(body)
            if state == _HEAD:
                if not self._read_head():
                    return None
            elif state == _CHUNK_DATA:
                taken = buffer[: self._remaining]
                self._body += taken
                del buffer[: len(taken)]
                self._remaining -= len(taken)
                if self._remaining:
                    return None
                self._state = _CHUNK_END
            elif state == _CHUNK_SIZE:
                if not self._read_chunk_size():
                    return None
            elif state == _CHUNK_END:
                if buffer[:2] != b"\r\n"[: len(buffer)]:
                    raise MalformedAnswer("chunk data not followed by CRLF")
                if len(buffer) < 2:
                    return None
                del buffer[:2]
                self._state = _CHUNK_SIZE
            elif state == _TRAILERS:
                if not self._read_trailers():
                    return None
                return self._done(bytes(self._body))
            elif state == _CLOSE:
                if len(buffer) > self._max_bytes:
                    raise self._too_large(f"more than {self._max_bytes} bytes arrived")
                return None
            else:
                return None  # _DONE: later bytes are left in the buffer, unread

    def feed_eof(self) -> Answer | None:
        """The server closed the connection: the answer, if that completes it, else None."""
        if self._state != _CLOSE:
            return None  # cut short, or no answer at all
        body = bytes(self._buffer)
        self._buffer.clear()
        self._keep_alive = False
        return self._done(body)

    def _done(self, body: bytes) -> Answer:
        self._state = _DONE
        reusable = self._keep_alive and not self._buffer
        return Answer(self._status, self.headers, body, reusable)

    def _too_large(self, detail: str) -> ResponseTooLarge:
        return ResponseTooLarge(detail, status=self._status)

    def _read_head(self) -> bool:
        buffer = self._buffer
        if buffer[:1] == b"\n" or buffer[:2] == b"\r\n":
            raise MalformedAnswer("an empty line where the status line should be")
        found = _HEAD_END.search(buffer, self._searched)
        if found is None or found.end() > MAX_HEAD:
            self._check_head_start()
            self._searched = max(len(buffer) - 2, 0)
            return False
        end = found.end()
        head = buffer[:end].decode("latin-1")
        del buffer[:end]
        self._searched = 0
        first_end = head.find("\n")
        status_line = _STATUS_LINE.fullmatch(head, 0, first_end)
        if status_line is None:
            raise MalformedAnswer(f"invalid status line {head[: min(first_end, 60)]!r}")
        major, minor, code = status_line.groups()
        if major != "1":
            raise MalformedAnswer(f"not an HTTP/1.x answer: {head[: min(first_end, 60)]!r}")
        headers, length, chunked, close = read_fields(head[first_end + 1 :])
        status = int(code)
        if status < 200:
            if status < 100 or status == 101:
                raise MalformedAnswer(
                    f"status {status} where an answer to a request should be"
                    + (" (no protocol upgrade was asked for)" if status == 101 else "")
                )
            return True  # informational (100 Continue, 103 Early Hints): the answer follows
        self._status = status
        self.headers = headers
        self._keep_alive = not close and minor != "0"
        if chunked and length is not None:
            self._keep_alive = False  # both framings: read it (chunked wins), never reuse
        if status in (204, 304):
            self._remaining = 0  # no body, whatever the head says
            self._state = _LENGTH
        elif chunked:
            self._state = _CHUNK_SIZE
        elif length is not None:
            self._remaining = int(length)
            if self._remaining > self._max_bytes:
                raise self._too_large(f"its Content-Length is {self._remaining} bytes")
            self._state = _LENGTH
        else:
            self._state = _CLOSE
            self._keep_alive = False
        return True

    def _check_head_start(self) -> None:
        """Fail now on a head that is too long or whose status line is already invalid."""
        buffer = self._buffer
        if len(buffer) > MAX_HEAD:
            raise MalformedAnswer(f"answer head larger than {MAX_HEAD} bytes")
        line_end = buffer.find(b"\n")
        if line_end < 0:
            valid = _STATUS_START.fullmatch(buffer) is not None
        else:
            valid = _STATUS_LINE.fullmatch(buffer[:line_end].decode("latin-1")) is not None
        if not valid:
            raise MalformedAnswer(f"invalid status line {bytes(buffer[:60])!r}")

    def _read_chunk_size(self) -> bool:
        buffer = self._buffer
        line_end = buffer.find(b"\r\n", self._searched)
        if line_end < 0:
            if len(buffer) > MAX_HEAD:
                raise MalformedAnswer("chunk-size line too long")
            # Valid starts are closed under prefixes: the first bytes are checked against the
            # grammar, the rest (an extension or whitespace) only for a bare LF.
            valid = _CHUNK_START.fullmatch(buffer, 0, _CHUNK_START_CHECKED) is not None and (
                buffer.find(b"\n", max(self._searched - 1, 0)) < 0
            )
            if not valid:
                shown = bytes(buffer[:40])
                raise MalformedAnswer(f"invalid chunk-size line {shown!r}: the size must be hex")
            self._searched = max(len(buffer) - 1, 0)
            return False
        found = _CHUNK_LINE.fullmatch(buffer, 0, line_end)
        if found is None:
            shown = bytes(buffer[: min(line_end, 40)])
            raise MalformedAnswer(f"invalid chunk-size line {shown!r}: the size must be hex")
        size = int(found[1], 16)
        del buffer[: line_end + 2]
        self._searched = 0
        if size == 0:
            self._state = _TRAILERS
        else:
            if len(self._body) + size > self._max_bytes:
                raise self._too_large(f"its chunks add up to more than {self._max_bytes} bytes")
            self._remaining = size
            self._state = _CHUNK_DATA
        return True

    def _read_trailers(self) -> bool:
        buffer = self._buffer
        for empty in (b"\n", b"\r\n"):
            if buffer.startswith(empty):
                del buffer[: len(empty)]
                return True
        found = _HEAD_END.search(buffer, self._searched)
        if found is None or found.end() > MAX_HEAD:
            if len(buffer) > MAX_HEAD:
                raise MalformedAnswer(f"chunked trailers larger than {MAX_HEAD} bytes")
            self._searched = max(len(buffer) - 2, 0)
            return False
        end = found.end()
        read_fields(buffer[:end].decode("latin-1"))  # checked, then set aside
        del buffer[:end]
        return True
