"""What the manager raises when a name does not lead to a working server."""

from __future__ import annotations

from ..protocol.errors import ConnectionClosed, McplHostError

__all__ = ["ServerUnavailable", "UnknownServer", "UnknownTool"]


class ServerUnavailable(ConnectionClosed):
    """The server is configured but has no connection to use right now.

    ``state`` is its state (``connecting``, ``failed``, ``disabled``, ``closed``; and
    ``reconnecting`` in a tool listing, which skips servers between transports);
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


class UnknownTool(McplHostError):
    """No tool of that aggregated name is listed by a connected server. ``name`` is the
    name asked for."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no tool named {name!r} among the connected servers")
        self.name = name
