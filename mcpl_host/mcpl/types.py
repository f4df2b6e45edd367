"""Typed params and results of the MCPL hooks, as msgspec structs (camelCase on the wire).

Params are what a server sends; decode them with :func:`decode_params` (decoders built
once per method). Results are what a handler returns; unset optional members are left
out when encoded. Where the spec leaves a shape open (content blocks, ``origin``,
``metadata``, ``preferences``, messages) the value is kept as plain JSON data, every
member included; unknown members of a typed struct are ignored, except in
``tools/observe``, where RFC-007 §6.6 requires an unknown member to fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "PARAMS_TYPES",
    "ChannelDescriptor",
    "ChannelResult",
    "ChannelsChanged",
    "ChannelsIncoming",
    "ChannelsIncomingResult",
    "ChannelsList",
    "ChannelsListResult",
    "ChannelsRegister",
    "ChannelsRegisterResult",
    "ContentBlock",
    "HostCommand",
    "IncomingMessage",
    "IncomingResult",
    "InferenceChunk",
    "InferenceRequest",
    "InferenceResult",
    "ManifestChanged",
    "ModelInfo",
    "ModelInfoResult",
    "ObserveMatch",
    "ObserveRule",
    "PushEvent",
    "PushEventResult",
    "StateRollback",
    "StateRollbackResult",
    "ToolsObserve",
    "decode_params",
]

ContentBlock = dict[str, Any]
"""An MCP content block (``{"type": "text", "text": ...}`` and the rest), kept whole."""


class _In(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    """Decoded from the peer."""


class _Out(msgspec.Struct, rename="camel", kw_only=True):
    """Built by the host and encoded."""


# ---- push/event (§9) ----------------------------------------------------------------


class PushEvent(_In, frozen=True):
    feature_set: str
    event_id: str
    timestamp: str
    payload: dict[str, Any]  # ``content`` required; other members kept
    origin: dict[str, Any] | None = None
    tags: list[str] | None = None
    coalesce: Any = None  # RFC-006; shape left to the coalescing layer

    def __post_init__(self) -> None:
        if not isinstance(self.payload.get("content"), list):
            raise TypeError("payload.content must be an array of content blocks")

    @property
    def content(self) -> list[ContentBlock]:
        content: list[ContentBlock] = self.payload["content"]
        return content


class PushEventResult(_Out):
    accepted: bool
    inference_id: str | UnsetType = UNSET
    reason: str | UnsetType = UNSET  # when not accepted


# ---- inference/request (§11) and model/info (§12) ------------------------------------


class InferenceRequest(_In, frozen=True):
    feature_set: str
    messages: list[dict[str, Any]]
    stream: bool = False
    preferences: dict[str, Any] | None = None  # maxTokens, temperature, host hints
    conversation_id: str | None = None


class InferenceResult(_Out):
    content: str
    model: str
    finish_reason: Literal["end_turn", "max_tokens", "stop_sequence"]
    usage: dict[str, Any] | UnsetType = UNSET  # inputTokens, outputTokens


class InferenceChunk(_Out):
    """``inference/chunk`` (host → server): sent before the final result."""

    request_id: str | int
    index: int
    delta: str


class ModelInfo(_In, frozen=True):
    """``model/info`` params: none defined."""


class ModelInfoResult(_Out):
    id: str
    vendor: str | UnsetType = UNSET
    context_window: int | UnsetType = UNSET
    capabilities: list[str] | UnsetType = UNSET


# ---- channels (§14) ------------------------------------------------------------------


class ChannelDescriptor(_In, frozen=True):
    id: str
    type: str
    label: str | None = None
    direction: Literal["outbound", "inbound", "bidirectional"] | None = None
    address: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


class ChannelsRegister(_In, frozen=True):
    channels: list[ChannelDescriptor]


class ChannelResult(_Out):
    id: str
    accepted: bool
    reason: str | UnsetType = UNSET


class ChannelsRegisterResult(_Out):
    registered: list[str]
    results: list[ChannelResult]


class ChannelsChanged(_In, frozen=True):
    added: list[ChannelDescriptor] = msgspec.field(default_factory=list)
    removed: list[str] = msgspec.field(default_factory=list)
    updated: list[ChannelDescriptor] = msgspec.field(default_factory=list)


class ChannelsList(_In, frozen=True):
    """``channels/list`` params: none defined."""


class ChannelsListResult(_Out):
    channels: list[ChannelDescriptor]


class IncomingMessage(_In, frozen=True):
    channel_id: str
    message_id: str
    content: str | list[ContentBlock]
    thread_id: str | None = None
    author: dict[str, Any] | None = None
    timestamp: str | None = None
    metadata: dict[str, Any] | None = None


class ChannelsIncoming(_In, frozen=True):
    messages: list[IncomingMessage]


class IncomingResult(_Out):
    message_id: str
    accepted: bool
    conversation_id: str | UnsetType = UNSET
    reason: str | UnsetType = UNSET


class ChannelsIncomingResult(_Out):
    results: list[IncomingResult]


# ---- state/rollback (§8.5) -----------------------------------------------------------


class StateRollback(_In, frozen=True):
    """``state/rollback`` params (host → server)."""

    feature_set: str
    checkpoint: str


class StateRollbackResult(_In, frozen=True):
    checkpoint: str
    success: bool
    reason: str | None = None


# ---- tools/observe (RFC-007 §6), host/command, mcpl/manifestChanged (§17.3) ----------


class ObserveMatch(_In, frozen=True, forbid_unknown_fields=True):
    tool: str | None = None
    server_tool: str | None = None
    server_id: str | None = None
    conversation_id: str | None = None
    class_: str | None = msgspec.field(default=None, name="class")


class ObserveRule(_In, frozen=True, forbid_unknown_fields=True):
    match: ObserveMatch
    report: bool = True
    input: bool | list[str] = False

    def __post_init__(self) -> None:
        if isinstance(self.input, list) and not all(self.input):
            raise ValueError("input field paths must be non-empty strings")


class ToolsObserve(_In, frozen=True, forbid_unknown_fields=True):
    """``rules`` None clears the filter; ``[]`` reports nothing. Result: ``{}``."""

    rules: list[ObserveRule] | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class HostCommand(_In, frozen=True):
    """``host/command`` (not in the spec; the agent-framework shape). Other members are
    the command's own: read them from the raw params."""

    command: str
    requester_id: str | None = None
    requester_name: str | None = None


class ManifestChanged(_In, frozen=True):
    revision: str | None = None
    domains: list[str] = msgspec.field(default_factory=list)


PARAMS_TYPES: Final[Mapping[str, type[msgspec.Struct]]] = MappingProxyType(
    {
        "push/event": PushEvent,
        "inference/request": InferenceRequest,
        "model/info": ModelInfo,
        "channels/register": ChannelsRegister,
        "channels/changed": ChannelsChanged,
        "channels/list": ChannelsList,
        "channels/incoming": ChannelsIncoming,
        "tools/observe": ToolsObserve,
        "host/command": HostCommand,
        "mcpl/manifestChanged": ManifestChanged,
    }
)
"""The params type of every inbound MCPL method."""

_DECODERS: Final[Mapping[str, msgspec.json.Decoder[Any]]] = MappingProxyType(
    {method: msgspec.json.Decoder(kind) for method, kind in PARAMS_TYPES.items()}
)


def decode_params(method: str, params: bytes | msgspec.Raw | None) -> msgspec.Struct:
    """The typed params of an inbound MCPL request or notification.

    Absent params read as ``{}``. Raises ``KeyError`` for a method not in
    :data:`PARAMS_TYPES`, and ``msgspec.ValidationError`` / ``msgspec.DecodeError`` for
    params that do not fit (answer -32602).
    """
    decoder = _DECODERS[method]
    result: msgspec.Struct = decoder.decode(params if params is not None else b"{}")
    return result
