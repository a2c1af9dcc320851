"""A command's output as it arrives: decoded, with only its head and tail kept."""

from __future__ import annotations

import asyncio
import codecs
import os

__all__ = ["OutputProtocol", "PipeReader", "StreamCapture", "cap_text"]


def cap_text(head: str, tail: str, total: int, cap: int) -> str:
    """A ``total``-character text in at most ``cap`` characters: its head and its tail.

    ``head`` is the text's start and ``tail`` everything after it, or, for a long text,
    at least its last ``cap // 2`` characters; the cut is marked ``…[N chars cut]…``.
    """
    if total <= cap:
        return head + tail
    # The widest marker this text can need, so head + marker + tail never exceeds cap.
    keep = max(cap - len(f"…[{total} chars cut]…"), 0)
    head_n, tail_n = keep - keep // 2, keep // 2
    end = tail[-tail_n:] if tail_n else ""
    if len(end) < tail_n:
        end = (head + tail)[-tail_n:]
    return f"{head[:head_n]}…[{total - head_n - tail_n} chars cut]…{end}"


class StreamCapture:
    """The decoded text of one stream, of which only the head and the tail are kept."""

    __slots__ = ("_cap", "_decoder", "_head", "_head_room", "_tail", "_tail_len", "total")

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head: list[str] = []
        self._head_room = cap
        self._tail: list[str] = []
        self._tail_len = 0
        self.total = 0

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        if not text:
            return
        self.total += len(text)
        if self._head_room:
            part = text[: self._head_room]
            self._head.append(part)
            self._head_room -= len(part)
            text = text[len(part) :]
            if not text:
                return
        self._tail.append(text)
        self._tail_len += len(text)
        if self._tail_len > 2 * self._cap:
            # Trimmed in batches, so a flood of small chunks costs linear time.
            kept = "".join(self._tail)[-self._cap :]
            self._tail, self._tail_len = [kept], len(kept)

    def text(self) -> str:
        self.feed(b"", final=True)  # a cut multi-byte character becomes U+FFFD
        return cap_text("".join(self._head), "".join(self._tail), self.total, self._cap)


class OutputProtocol(asyncio.SubprocessProtocol):
    """Feeds the captures as data arrives and reports exit and end of output apart.

    ``Process.wait()`` of asyncio's streams returns only once the pipes close too, which
    a background process holding stdout delays until the timeout; here the exit of the
    command itself is what ends the run.
    """

    def __init__(self, captures: dict[int, StreamCapture], loop: asyncio.AbstractEventLoop) -> None:
        self.captures = captures
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()
        self._open = set(captures)

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        capture = self.captures.get(fd)
        if capture is not None and isinstance(data, bytes):
            capture.feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._open.discard(fd)
        if not self._open and not self.output_closed.done():
            self.output_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


class PipeReader:
    """Reads a command's stdout and stderr from pipes of this process into an `OutputProtocol`.

    For commands that another process starts (the supervisor): this process makes the
    pipes, hands their write ends over, and reads the other ends on the event loop.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, protocol: OutputProtocol) -> None:
        self._loop = loop
        self._protocol = protocol
        self._streams: dict[int, int] = {}  # read end -> 1 (stdout) or 2 (stderr)
        self.write_ends: list[int] = []
        try:
            for stream in (1, 2):
                read, write = os.pipe()
                self._streams[read] = stream
                self.write_ends.append(write)
                os.set_blocking(read, False)
                loop.add_reader(read, self._readable, read)
        except BaseException:
            self.close_write_ends()
            self.close()
            raise

    def _readable(self, descriptor: int) -> None:
        try:
            data = os.read(descriptor, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        stream = self._streams[descriptor]
        if data:
            self._protocol.pipe_data_received(stream, data)
            return
        self._loop.remove_reader(descriptor)
        del self._streams[descriptor]
        os.close(descriptor)
        self._protocol.pipe_connection_lost(stream, None)

    def close_write_ends(self) -> None:
        """Close this process's copies of the write ends (the command has its own)."""
        for descriptor in self.write_ends:
            os.close(descriptor)
        self.write_ends = []

    def close(self) -> None:
        """Stop reading: output not read by now is not wanted."""
        for descriptor in self._streams:
            self._loop.remove_reader(descriptor)
            os.close(descriptor)
        self._streams = {}
