"""What a model client holds on one event loop."""

from __future__ import annotations

from gradewire.http._endpoint_state import EndpointState
from gradewire.http._senders import Sender

__all__ = ["LoopResources"]


class LoopResources:
    """What a model holds on one event loop: its sender and the endpoint's shared state."""

    __slots__ = ("sender", "state")

    def __init__(self, sender: Sender, state: EndpointState) -> None:
        self.sender = sender
        self.state = state
