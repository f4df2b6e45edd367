"""Subscriptions on the stateless revision (MCP 2026-07-28): ``subscriptions/listen``.

There is no ``resources/subscribe`` and no standing stream on 2026-07-28: the client
opens one long-lived ``subscriptions/listen`` request naming what it wants
(``params.notifications``), the server first sends
``notifications/subscriptions/acknowledged`` with the subset it honours, then the
notifications, each carrying the listen request's id in
``_meta["io.modelcontextprotocol/subscriptionId"]``, and ends it gracefully with a result
(``resultType: "complete"``) or a ``notifications/cancelled`` naming the request.

The wire rules only, no I/O: what to ask for given the server's capabilities and the
embedder's URIs, what an acknowledgement means (never more than was asked: the server
cannot make the host hold URIs it never named), which subscription a notification names,
and whether the acknowledged set lets a notification through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from .errors import ProtocolError

__all__ = [
    "ACKNOWLEDGED",
    "CARRIED",
    "LISTEN",
    "SUBSCRIPTION_ID",
    "Carried",
    "Subscriptions",
    "cancelled_request",
    "decode_acknowledged",
    "decode_carried",
    "names",
    "wanted",
]

LISTEN: Final = "subscriptions/listen"
ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

# The notifications a listen carries, by the filter member that asks for each.
CARRIED: Final[dict[str, str]] = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
    "notifications/resources/updated": "resourceSubscriptions",
}
# Filter member -> the server capability whose ``listChanged`` says it can send it.
_LIST_CAPABILITY: Final = {
    "toolsListChanged": "tools",
    "promptsListChanged": "prompts",
    "resourcesListChanged": "resources",
}


@dataclass(frozen=True, slots=True)
class Subscriptions:
    """A listen filter: what the host asks for, or the part the server acknowledged."""

    tools_list_changed: bool = False
    prompts_list_changed: bool = False
    resources_list_changed: bool = False
    resources: tuple[str, ...] = ()  # URIs for notifications/resources/updated

    @property
    def empty(self) -> bool:
        return not (
            self.tools_list_changed
            or self.prompts_list_changed
            or self.resources_list_changed
            or self.resources
        )

    def to_wire(self) -> dict[str, Any]:
        """``params.notifications``: only what is asked for (an absent flag is false)."""
        wire: dict[str, Any] = {}
        if self.tools_list_changed:
            wire["toolsListChanged"] = True
        if self.prompts_list_changed:
            wire["promptsListChanged"] = True
        if self.resources_list_changed:
            wire["resourcesListChanged"] = True
        if self.resources:
            wire["resourceSubscriptions"] = list(self.resources)
        return wire

    def admits(self, method: str, uri: str | None, asked: Subscriptions) -> bool:
        """Whether this acknowledged set lets ``method`` through (``asked``: what the
        listen asked for). An update is let through once any URI was acknowledged,
        except for a URI asked for and left out: the spec lets a server report a change
        under a subscribed URI by the sub-resource's own URI."""
        member = CARRIED.get(method)
        if member == "resourceSubscriptions":
            declined = uri is not None and uri in asked.resources and uri not in self.resources
            return bool(self.resources) and not declined
        if member == "toolsListChanged":
            return self.tools_list_changed
        if member == "promptsListChanged":
            return self.prompts_list_changed
        if member == "resourcesListChanged":
            return self.resources_list_changed
        return False


def wanted(capabilities: Mapping[str, Any], uris: Iterable[str]) -> Subscriptions:
    """What to ask for: the list changes of each kind whose capability advertises
    ``listChanged: true`` (an absent or false flag says the server sends none), and every
    URI the embedder subscribed (whether the server takes them is the acknowledgement's
    to say, as ``resources/subscribe``'s answer says it in the handshake era)."""
    flags = {
        member: _flag(capabilities.get(kind), "listChanged")
        for member, kind in _LIST_CAPABILITY.items()
    }
    return Subscriptions(
        tools_list_changed=flags["toolsListChanged"],
        prompts_list_changed=flags["promptsListChanged"],
        resources_list_changed=flags["resourcesListChanged"],
        resources=tuple(dict.fromkeys(uris)),
    )


def _flag(capability: Any, name: str) -> bool:
    return isinstance(capability, Mapping) and capability.get(name) is True


class _Filter(msgspec.Struct):
    toolsListChanged: Any = None
    promptsListChanged: Any = None
    resourcesListChanged: Any = None
    resourceSubscriptions: Any = None


class _Meta(msgspec.Struct):
    subscription_id: Any = msgspec.field(default=None, name=SUBSCRIPTION_ID)


class _Acknowledged(msgspec.Struct):
    notifications: _Filter
    meta: _Meta | None = msgspec.field(default=None, name="_meta")


class _Carried(msgspec.Struct):
    meta: _Meta | None = msgspec.field(default=None, name="_meta")
    uri: Any = None


_ACKNOWLEDGED: Final = msgspec.json.Decoder(_Acknowledged)
_CARRIED: Final = msgspec.json.Decoder(_Carried)


def decode_acknowledged(params: bytes | None, asked: Subscriptions) -> tuple[Any, Subscriptions]:
    """The subscription id an acknowledgement names, and what it acknowledges of
    ``asked`` (a flag only when asked and ``true``; a URI only when asked).

    Raises :class:`~mcpl_host.ProtocolError` for params that are not an
    acknowledgement (no ``notifications`` object)."""
    try:
        ack = _ACKNOWLEDGED.decode(params or b"{}")
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"not a subscriptions acknowledgement: {exc}") from None
    got = ack.notifications
    uris = got.resourceSubscriptions
    honoured = set(uris) & set(asked.resources) if _strings(uris) else set()
    subscriptions = Subscriptions(
        tools_list_changed=asked.tools_list_changed and got.toolsListChanged is True,
        prompts_list_changed=asked.prompts_list_changed and got.promptsListChanged is True,
        resources_list_changed=asked.resources_list_changed and got.resourcesListChanged is True,
        resources=tuple(uri for uri in asked.resources if uri in honoured),
    )
    return (ack.meta.subscription_id if ack.meta else None), subscriptions


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


@dataclass(frozen=True, slots=True)
class Carried:
    """What the host reads of a notification a listen carries."""

    subscription_id: Any  # None when the notification names none
    uri: str | None  # notifications/resources/updated only


def decode_carried(params: bytes | None) -> Carried | None:
    """The subscription a carried notification names (and its URI); None for params that
    are not an object."""
    try:
        carried = _CARRIED.decode(params or b"{}")
    except msgspec.DecodeError:
        return None
    uri = carried.uri if isinstance(carried.uri, str) else None
    return Carried(carried.meta.subscription_id if carried.meta else None, uri)


def names(subscription_id: Any, request_id: int) -> bool:
    """Whether ``subscription_id`` (from the wire) is the listen request ``request_id``
    as sent: the same integer (``true`` is not ``1``, nor is ``"1"``)."""
    return type(subscription_id) is int and subscription_id == request_id


class _Cancelled(msgspec.Struct):
    requestId: Any = None


_CANCELLED: Final = msgspec.json.Decoder(_Cancelled)


def cancelled_request(params: bytes | None) -> Any:
    """The request a ``notifications/cancelled`` names, None when unreadable."""
    try:
        return _CANCELLED.decode(params or b"{}").requestId
    except msgspec.DecodeError:
        return None
