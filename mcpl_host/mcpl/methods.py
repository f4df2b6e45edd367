"""The MCPL methods, in two tables, and the decision for every inbound one.

:data:`INBOUND` lists what a server may send the host: whether it is a request, a
notification or either, the capability it needs, and its plane. :data:`OUTBOUND` lists
what the host sends and the capability that must be granted first. :func:`admit` is the
one decision for an inbound MCPL message: admit it, refuse it with ``-32002``, answer
``-32601`` for a method removed in 0.5, or leave it to MCP's handling.

Rules where the spec is silent:

- A request-only method sent as a notification, or a notification-only method sent as
  a request, is refused with ``-32600`` (checked before the grant): a request always
  gets one answer, and a notification never does, so the refusal of a notification is
  only logged.
- ``inference/request`` with any ``stream`` value other than absent, ``null`` or
  ``false`` needs ``inferenceRequest.streaming`` too: a malformed flag fails closed.
- ``host/command`` needs ``hostCommand``, a path only the host's configuration grants.
- ``push/render`` (RFC-006) is part of push coalescing and needs ``pushEvents``;
  ``context/beforeInference`` goes to a server granted any of its leaves (§10.1: a
  server granted an ``inject.*`` leaf without ``observe`` still gets the hook).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Set
from types import MappingProxyType
from typing import Any, Final, Protocol

import msgspec

from mcpl_host.protocol.errors import INVALID_REQUEST, METHOD_NOT_FOUND

__all__ = [
    "CAPABILITY_DENIED",
    "CHANNEL_NOT_PERMITTED",
    "CHANNEL_OPEN_FAILED",
    "CHECKPOINT_NOT_FOUND",
    "FEATURE_SET_NOT_ENABLED",
    "INBOUND",
    "OUTBOUND",
    "REMOVED",
    "UNKNOWN_CHANNEL",
    "UNKNOWN_FEATURE_SET",
    "Admit",
    "Decision",
    "GrantView",
    "InboundMethod",
    "Kind",
    "OutboundMethod",
    "Plane",
    "Refuse",
    "Removed",
    "Unknown",
    "admit",
    "may_send",
    "required_capabilities",
]

# MCPL Appendix A (and §14.6).
FEATURE_SET_NOT_ENABLED: Final = -32001
CAPABILITY_DENIED: Final = -32002  # data: {"capability": path}
UNKNOWN_FEATURE_SET: Final = -32003
CHECKPOINT_NOT_FOUND: Final = -32005
CHANNEL_NOT_PERMITTED: Final = -32017
UNKNOWN_CHANNEL: Final = -32023
CHANNEL_OPEN_FAILED: Final = -32024


class Kind(enum.Enum):
    REQUEST = "request"
    NOTIFICATION = "notification"
    EITHER = "either"


class Plane(enum.StrEnum):
    CONTROL = "control"  # registration, filters, commands: the connection's setup
    DATA = "data"  # pushes, inference, incoming messages: work for the agent


class InboundMethod(msgspec.Struct, frozen=True, gc=False):
    """A method a server may send the host. ``capability`` None: ungated."""

    kind: Kind
    capability: str | None
    plane: Plane


class OutboundMethod(msgspec.Struct, frozen=True, gc=False):
    """A method the host sends. It may be sent only when the grant holds one of
    ``any_of`` (empty: always)."""

    kind: Kind
    any_of: tuple[str, ...]


_R, _N, _E = Kind.REQUEST, Kind.NOTIFICATION, Kind.EITHER
_C, _D = Plane.CONTROL, Plane.DATA

INBOUND: Final[Mapping[str, InboundMethod]] = MappingProxyType(
    {
        "push/event": InboundMethod(_R, "pushEvents", _D),
        "inference/request": InboundMethod(_R, "inferenceRequest", _D),
        "model/info": InboundMethod(_R, "modelInfo", _D),  # §12: always answered
        "channels/register": InboundMethod(_R, "channels.register", _C),
        "channels/changed": InboundMethod(_E, "channels.register", _C),
        "channels/list": InboundMethod(_R, "channels.register", _C),
        "channels/incoming": InboundMethod(_R, "channels.incoming", _D),
        "tools/observe": InboundMethod(_R, "toolLifecycle.observe", _C),
        "host/command": InboundMethod(_R, "hostCommand", _C),
        # §17.3: announcing conveys no authority, so nothing gates it.
        "mcpl/manifestChanged": InboundMethod(_N, None, _C),
    }
)

_BEFORE_INFERENCE: Final = (
    "contextHooks.beforeInference.observe",
    "contextHooks.beforeInference.inject.system",
    "contextHooks.beforeInference.inject.beforeUser",
    "contextHooks.beforeInference.inject.afterUser",
)

OUTBOUND: Final[Mapping[str, OutboundMethod]] = MappingProxyType(
    {
        "featureSets/update": OutboundMethod(_E, ()),
        "mcpl/manifest": OutboundMethod(_R, ()),
        "state/rollback": OutboundMethod(_R, ()),
        "context/beforeInference": OutboundMethod(_R, _BEFORE_INFERENCE),
        "inference/lifecycle": OutboundMethod(_N, ("inferenceLifecycle",)),
        "inference/chunk": OutboundMethod(_N, ("inferenceRequest.streaming",)),
        "channels/list": OutboundMethod(_R, ("channels.register",)),
        "channels/open": OutboundMethod(_R, ("channels.lifecycle",)),
        "channels/close": OutboundMethod(_R, ("channels.lifecycle",)),
        "channels/publish": OutboundMethod(_E, ("channels.publish",)),
        "channels/outgoing/chunk": OutboundMethod(_N, ("channels.streaming",)),
        "channels/outgoing/complete": OutboundMethod(_N, ("channels.streaming",)),
        "channels/acknowledge": OutboundMethod(_E, ("channels.acknowledge",)),
        "channels/typing": OutboundMethod(_N, ("channels.typing",)),
        "push/render": OutboundMethod(_R, ("pushEvents",)),
        "tools/lifecycle": OutboundMethod(_N, ("toolLifecycle.observe",)),
    }
)

REMOVED: Final[Mapping[str, str]] = MappingProxyType(
    {
        "scope/elevate": "scope/elevate was removed in MCPL 0.5",
        "featureSets/changed": "featureSets/changed was removed in MCPL 0.5",
    }
)
"""Server→host methods removed in 0.5: a request for one is answered -32601."""


class GrantView(Protocol):
    def allows(self, path: str) -> bool: ...


class Admit(msgspec.Struct, frozen=True, gc=False):
    """Dispatch it: the grant holds every path in ``capabilities``."""

    method: str
    spec: InboundMethod
    capabilities: tuple[str, ...]


class Refuse(msgspec.Struct, frozen=True, gc=False):
    """Answer a request with this error (a notification is only logged)."""

    code: int
    message: str
    data: dict[str, Any] | None = None


class Removed(msgspec.Struct, frozen=True, gc=False):
    """A method removed in 0.5: answer a request -32601; a notification is only logged."""

    message: str
    code: int = METHOD_NOT_FOUND


class Unknown(msgspec.Struct, frozen=True, gc=False):
    """Not an inbound MCPL method: leave it to MCP's handling."""


Decision = Admit | Refuse | Removed | Unknown

_STREAM_FLAG: Final = msgspec.json.Decoder(dict[str, Any])


def required_capabilities(method: str, params: object = None) -> tuple[str, ...]:
    """Every path ``method`` needs with these ``params`` (decoded, or JSON text as
    ``bytes``/``msgspec.Raw``). Empty for an ungated or unknown method."""
    spec = INBOUND.get(method)
    if spec is None or spec.capability is None:
        return ()
    if method == "inference/request" and _streams(params):
        return (spec.capability, "inferenceRequest.streaming")
    return (spec.capability,)


def _streams(params: object) -> bool:
    if isinstance(params, bytes | bytearray | msgspec.Raw):
        try:
            params = _STREAM_FLAG.decode(params)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return False  # not an object: the handler's decode refuses it with -32602
    if not isinstance(params, Mapping):
        return False
    flag = params.get("stream")
    return flag is not None and flag is not False


def _allows(grant: GrantView | Set[str], path: str) -> bool:
    if isinstance(grant, Set):
        return path in grant
    return grant.allows(path)


def admit(
    method: str, params: object, grant: GrantView | Set[str], *, request: bool = True
) -> Decision:
    """Decide an inbound message: ``request`` is false for a notification (no ``id``).

    ``grant`` is the grant in force now (a :class:`~.grant.Grant`, or a set of paths).
    """
    if method in REMOVED:
        return Removed(REMOVED[method])
    spec = INBOUND.get(method)
    if spec is None:
        return Unknown()
    if request and spec.kind is Kind.NOTIFICATION:
        return Refuse(INVALID_REQUEST, f"Invalid Request: {method} is a notification")
    if not request and spec.kind is Kind.REQUEST:
        return Refuse(INVALID_REQUEST, f"Invalid Request: {method} must be a request")
    needed = required_capabilities(method, params)
    for path in needed:
        if not _allows(grant, path):
            return Refuse(CAPABILITY_DENIED, "Capability denied", {"capability": path})
    return Admit(method, spec, needed)


def may_send(method: str, grant: GrantView | Set[str]) -> bool:
    """Whether the host may send ``method`` now. An unknown method is not MCPL's to
    gate (plain MCP): true."""
    spec = OUTBOUND.get(method)
    if spec is None or not spec.any_of:
        return True
    return any(_allows(grant, path) for path in spec.any_of)
