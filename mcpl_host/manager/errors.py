"""What the manager raises when a name does not lead to a working server."""

from __future__ import annotations

from typing import Literal, TypeAlias

from ..protocol.errors import ConnectionClosed, McplHostError
from ..protocol.redact import log_value

__all__ = [
    "NameKind",
    "ServerUnavailable",
    "UnknownName",
    "UnknownPrompt",
    "UnknownResource",
    "UnknownServer",
    "UnknownTool",
]

NameKind: TypeAlias = Literal["tool", "resource", "prompt"]


class ServerUnavailable(ConnectionClosed):
    """The server is configured but has no connection to use right now.

    ``state`` is its state (``connecting``, ``failed``, ``disabled``, ``closed``; and
    ``reconnecting`` in a catalogue listing, which skips servers between transports);
    ``reason`` is the same word, so that code catching :class:`ConnectionClosed` from a
    request treats both alike. Nothing was sent (``outcome_unknown`` is false). The
    server's last error, when there is one, is the ``__cause__``.
    """

    def __init__(self, server: str, state: str, error: McplHostError | None = None) -> None:
        text = f"the server is {state}"
        if error is not None:
            text += f": {error.message}"
        super().__init__(text, reason=state, server=server)
        self.state = state
        self.__cause__ = error


class UnknownServer(McplHostError):
    """No server of that name is configured."""

    def __init__(self, server: str) -> None:
        super().__init__("no server of that name is configured", server=server)


class UnknownName(McplHostError):
    """No item of that catalogue name (or, for a resource read on a named server, that
    URI) is in the catalogue: no usable server lists it, or its server's filter leaves
    it out. ``kind`` is ``tool``, ``resource`` or ``prompt``; ``name`` the name (or URI)
    asked for; ``server`` the server named, when the caller named one. Nothing was sent
    for the call itself."""

    kind: NameKind

    def __init__(self, name: str, *, server: str | None = None) -> None:
        where = f"on server {server!r}" if server is not None else "in the catalogue"
        shown = log_value(name, 200)  # the caller's text, but it may end up in a log
        super().__init__(f"no {self.kind} named {shown!r} {where}", server=server)
        self.name = name


class UnknownTool(UnknownName):
    """No tool of that catalogue name."""

    kind: NameKind = "tool"


class UnknownPrompt(UnknownName):
    """No prompt of that catalogue name."""

    kind: NameKind = "prompt"


class UnknownResource(UnknownName):
    """No resource of that catalogue name, or a URI the named server's filter leaves
    out."""

    kind: NameKind = "resource"
