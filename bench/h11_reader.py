"""h11 as the answer reader of gradewire's keep-alive client, for `judge_throughput.py`.

The same shape as `gradewire.http._framing.AnswerReader`, with h11 (the sans-I/O parser under
httpx and httpcore) reading and framing each answer; the client keeps its pool, its protocol
and its write path. One h11 connection state per TCP connection, moved on to the next cycle
after each answer, as httpcore does.

h11 reads an answer by the state the request put it in (its method, whether it asked to
close), so each request is declared to h11 as sent: a POST with an empty body, whose bytes are
dropped (the client writes its own). The declared request is built once, so h11's validation
of it is not paid per call.
"""

from __future__ import annotations

import h11

from gradewire.http._framing import MAX_HEAD, Answer, MalformedAnswer, ResponseTooLarge

__all__ = ["H11Reader"]

_REQUEST = h11.Request(method="POST", target="/", headers=[("Host", "h"), ("Content-Length", "0")])
_END = h11.EndOfMessage()


class H11Reader:
    """Reads the answer to each request sent on one connection, with h11."""

    def __init__(self) -> None:
        self._connection = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
        self._max_bytes = 0
        self._status = 0
        self._headers: dict[str, str] = {}
        self._body = bytearray()

    def start(self, max_bytes: int) -> None:
        connection = self._connection
        if connection.our_state is h11.DONE and connection.their_state is h11.DONE:
            connection.start_next_cycle()
        connection.send(_REQUEST)
        connection.send(_END)
        self._max_bytes = max_bytes
        self._status = 0
        self._headers = {}
        self._body = bytearray()

    def feed(self, data: bytes) -> Answer | None:
        self._connection.receive_data(data)
        try:
            return self._next()
        except h11.RemoteProtocolError as exc:
            raise MalformedAnswer(str(exc)) from exc

    def feed_eof(self) -> Answer | None:
        self._connection.receive_data(b"")
        try:
            return self._next()
        except h11.RemoteProtocolError:
            return None  # cut short

    def _next(self) -> Answer | None:
        connection = self._connection
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
                return None
            if isinstance(event, h11.Data):
                self._body += event.data
                if len(self._body) > self._max_bytes:
                    raise ResponseTooLarge(
                        f"more than {self._max_bytes} bytes arrived", status=self._status
                    )
            elif isinstance(event, h11.Response):
                self._status = event.status_code
                headers: dict[str, str] = {}
                for raw_name, raw_value in event.headers:
                    name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
                    headers[name] = f"{headers[name]}, {value}" if name in headers else value
                self._headers = headers
                length = headers.get("content-length")
                if length is not None and int(length) > self._max_bytes:
                    raise ResponseTooLarge(
                        f"its Content-Length is {length} bytes", status=self._status
                    )
            elif isinstance(event, h11.EndOfMessage):
                reusable = connection.their_state is h11.DONE and not connection.trailing_data[0]
                return Answer(self._status, self._headers, bytes(self._body), reusable)
            # InformationalResponse: the answer follows
