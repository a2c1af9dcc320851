"""Which names are this machine: a bind address, and the ``Host`` and ``Origin`` headers.

A reward server without a token binds a non-loopback address (`is_loopback`) only when told
to, and answers only requests that a page on another site cannot make.

A web page the user visits can point its own DNS name at 127.0.0.1 (DNS rebinding: the
browser then talks to the server as that name, and sends it as ``Host``), or post to the
server from the page (the browser then sends the page's ``Origin``). A server without a token
answers neither: only ``localhost``, loopback IP literals, and the names its operator listed.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection, Iterable

from gradewire.core._errors import InvalidInputError, InvalidTypeError

__all__ = [
    "allowed_host_names",
    "host_name",
    "is_loopback",
    "is_loopback_host",
    "is_loopback_origin",
]

# Host / Origin as browsers send them: a name (or a bracketed IPv6 literal), then maybe a port.
_HOST_HEADER = re.compile(r"(\[[0-9a-fA-F:.]+\]|[^:\[\]/\s]+)(?::\d{1,5})?")
_ORIGIN_HEADER = re.compile(r"https?://(.+)", re.IGNORECASE)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(value: str) -> str | None:
    """The name a ``Host`` header holds, lowercased, port dropped; None when malformed."""
    match = _HOST_HEADER.fullmatch(value.strip())
    return None if match is None else match.group(1).lower()


def is_loopback_host(value: str, allowed: Collection[str] = ()) -> bool:
    """Whether a ``Host`` header addresses this machine (or a name in ``allowed``).

    This machine is ``localhost`` or a loopback IP literal (``127.0.0.1``, ``[::1]``), with
    or without a port. Any other name is refused even when it resolves to 127.0.0.1: a site
    can point its own DNS name there, so the name proves nothing; a literal cannot be rebound.

    Args:
        value: The header.
        allowed: More names to accept, as `allowed_host_names` returns them.
    """
    name = host_name(value)
    if name is None:
        return False
    if name == "localhost" or name in allowed:
        return True
    try:
        if name.startswith("["):
            return ipaddress.IPv6Address(name[1:-1]).is_loopback
        return ipaddress.IPv4Address(name).is_loopback
    except ValueError:
        return False


def is_loopback_origin(value: str) -> bool:
    """Whether an ``Origin`` header is a page served from this machine.

    ``http(s)://`` and a host `is_loopback_host` accepts; ``null`` (sandboxed frames, local
    files) is not.
    """
    match = _ORIGIN_HEADER.fullmatch(value.strip())
    return match is not None and is_loopback_host(match.group(1))


def allowed_host_names(names: Iterable[str]) -> frozenset[str]:
    """Check host names to answer without a token; lowercased, IPv6 literals bracketed."""
    if isinstance(names, str):
        names = [names]
    checked: set[str] = set()
    for raw in names:
        if not isinstance(raw, str):
            raise InvalidTypeError(f"allowed_hosts holds host names, not {type(raw).__name__}")
        name = raw.strip().lower()
        if ":" in name and not name.startswith("["):
            name = f"[{name}]"  # an IPv6 literal, as a Host header carries it
        if host_name(name) != name:
            raise InvalidInputError(
                f"allowed_hosts takes host names as clients put them in the URL, without "
                f"scheme or port (e.g. 'rm-node-1' or '10.0.0.5'), not {raw!r}"
            )
        checked.add(name)
    return frozenset(checked)
