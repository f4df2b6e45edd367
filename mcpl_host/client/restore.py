"""What a server keeps for its client and forgets with the transport: the resource
subscriptions and the logging level the embedder set.

Plain bookkeeping, no I/O: the typed calls record here what the server accepted, and
after a reconnect the connection asks the new transport for :meth:`SessionState.restore`
(the level first, then each subscription in the order it was made), before the rebound
requests. The rules:

- A subscription is recorded when the server accepts ``resources/subscribe``; one the
  server refused, or whose answer never came, is not (the caller saw the error).
- ``unsubscribe_resource`` forgets the URI at once, whatever its answer: the embedder no
  longer wants the updates, and a subscribe still waiting for its answer is not
  recorded when the answer comes.
- The level is the last one ``logging/setLevel`` got a success answer for.
- When the new transport refuses a restore (an error answer) it is forgotten, unless
  the embedder set it again meanwhile; any other failure keeps it for the next
  transport.
- At most ``max_subscriptions`` URIs, recorded and waiting for their answer together:
  one more is refused before anything is written (:class:`~mcpl_host.LimitExceeded`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Final

from ..protocol.errors import ConfigurationError, LimitExceeded

__all__ = ["DEFAULT_MAX_SUBSCRIPTIONS", "Restore", "SessionState"]

DEFAULT_MAX_SUBSCRIPTIONS: Final = 1024


@dataclass(frozen=True, slots=True)
class Restore:
    """One request that re-establishes recorded state; ``token`` says which record, so
    that a refusal forgets only that one."""

    method: str
    params: dict[str, Any]
    token: int


class SessionState:
    """The subscriptions and the logging level one connection's server should have."""

    def __init__(self, *, max_subscriptions: int, server: str | None = None) -> None:
        """Raises :class:`~mcpl_host.ConfigurationError` when ``max_subscriptions`` is
        below 1."""
        if max_subscriptions < 1:
            raise ConfigurationError("max_subscriptions must be at least 1")
        self.max_subscriptions = max_subscriptions
        self._server = server
        self._tokens = itertools.count(1)
        self._subscriptions: dict[str, int] = {}  # URI -> token, in the order made
        self._waiting: dict[str, int] = {}  # URI -> token of the newest unanswered subscribe
        self._level: tuple[str, int] | None = None

    @property
    def subscriptions(self) -> tuple[str, ...]:
        return tuple(self._subscriptions)

    @property
    def wanted(self) -> tuple[str, ...]:
        """The URIs recorded and those waiting for their answer, in the order made: what a
        2026-07-28 ``subscriptions/listen`` asks for."""
        return tuple(dict.fromkeys([*self._subscriptions, *self._waiting]))

    @property
    def level(self) -> str | None:
        return None if self._level is None else self._level[0]

    def subscribing(self, uri: str) -> int:
        """A ``resources/subscribe`` for ``uri`` is about to be sent; pass the token
        returned to :meth:`subscribe_answered`.

        Raises :class:`~mcpl_host.LimitExceeded` when ``uri`` would be one more than
        ``max_subscriptions``.
        """
        known = uri in self._subscriptions or uri in self._waiting
        if not known and len(self._subscriptions.keys() | self._waiting.keys()) >= (
            self.max_subscriptions
        ):
            raise LimitExceeded(
                f"already {self.max_subscriptions} resource subscriptions "
                "(max_subscriptions): unsubscribe one first",
                limit="max_subscriptions",
                value=self.max_subscriptions,
                server=self._server,
            )
        token = next(self._tokens)
        self._waiting[uri] = token
        return token

    def subscribe_answered(self, uri: str, token: int, *, accepted: bool) -> None:
        """The subscribe :meth:`subscribing` announced ended: ``accepted`` by the server,
        or not (an error, or no answer)."""
        if self._waiting.get(uri) != token:
            return  # unsubscribed, or subscribed again, since: the newer call decides
        del self._waiting[uri]
        if accepted:
            self._subscriptions[uri] = token  # a URI already recorded keeps its place

    def unsubscribing(self, uri: str) -> None:
        self._subscriptions.pop(uri, None)
        self._waiting.pop(uri, None)

    def level_set(self, level: str) -> None:
        """``logging/setLevel`` with ``level`` got a success answer."""
        self._level = (level, next(self._tokens))

    def restore(self) -> list[Restore]:
        """What to ask a new transport for: the level, then each subscription."""
        items: list[Restore] = []
        if self._level is not None:
            level, token = self._level
            items.append(Restore("logging/setLevel", {"level": level}, token))
        items += [
            Restore("resources/subscribe", {"uri": uri}, token)
            for uri, token in self._subscriptions.items()
        ]
        return items

    def refused(self, item: Restore) -> None:
        """The new transport answered ``item`` with an error: forget it, unless it has
        been set again since."""
        if item.method == "logging/setLevel":
            if self._level is not None and self._level[1] == item.token:
                self._level = None
            return
        uri = item.params["uri"]
        if self._subscriptions.get(uri) == item.token:
            del self._subscriptions[uri]
