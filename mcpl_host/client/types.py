"""MCP's client-facing types, as msgspec Structs.

One type serves every revision from 2024-11-05 to 2025-11-25: a member a later revision
added is optional (the comment names the revision). Field names are snake_case; on the
wire they are MCP's camelCase (``input_schema`` is ``inputSchema``) and ``meta`` is
``_meta``.

Members this library does not know are not lost. A value decoded from the wire keeps
the JSON it came from: ``.raw`` is that JSON (``msgspec.Raw``) and ``.extra`` the
members no field took (a server's own additions next to ``_meta``). Results, and each
item of a listed tool, resource, template or prompt, keep theirs.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias, TypeVar

import msgspec
from msgspec import Raw

from ..protocol.errors import ProtocolError
from ..protocol.redact import log_value

__all__ = [
    "Annotations",
    "AudioContent",
    "CallToolResult",
    "Completion",
    "ContentBlock",
    "CreateMessageParams",
    "CreateMessageResult",
    "ElicitParams",
    "ElicitResult",
    "EmbeddedResource",
    "GetPromptResult",
    "Icon",
    "ImageContent",
    "LoggingLevel",
    "ModelHint",
    "ModelPreferences",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptRef",
    "ReadResourceResult",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceTemplate",
    "ResourceTemplateRef",
    "Root",
    "SamplingMessage",
    "TextContent",
    "Tool",
    "ToolAnnotations",
    "UnknownContent",
    "WireType",
]

T = TypeVar("T", bound="WireType")

LoggingLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]


class _KeepsRaw:
    """One slot for the JSON a value was decoded from. A slot, not a field (it is never
    encoded, compared or shown) and not a ``__dict__``: a dict per value cost 184 bytes
    for each item of a listing, more than most items' own JSON."""

    __slots__ = ("_raw",)
    _raw: Raw


class WireType(_KeepsRaw, msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """Base of every MCP type here."""

    @property
    def raw(self) -> Raw | None:
        """The JSON this value was decoded from; None when built in Python."""
        return getattr(self, "_raw", None)

    @property
    def extra(self) -> dict[str, Any]:
        """Members of the decoded JSON object that no field took (empty when none)."""
        raw = self.raw
        if raw is None:
            return {}
        members = msgspec.json.decode(raw)
        if not isinstance(members, dict):
            return {}
        known = {field.encode_name for field in msgspec.structs.fields(type(self))}
        return {key: value for key, value in members.items() if key not in known}


def keep_raw(value: T, raw: Raw) -> T:
    """Attach the JSON ``value`` was decoded from (see :attr:`WireType.raw`)."""
    value._raw = raw
    return value


# -- shared pieces -------------------------------------------------------------------


class Icon(WireType):
    """2025-11-25."""

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: str | None = None


class Annotations(WireType):
    """Hints on a content block or resource: who it is for and how much it matters."""

    audience: list[str] | None = None
    priority: float | None = None
    last_modified: str | None = None  # 2025-06-18


# -- content -------------------------------------------------------------------------


class ResourceContents(WireType):
    """What ``resources/read`` returns per resource: ``text`` or base64 ``blob``."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class TextContent(WireType, tag_field="type", tag="text"):
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ImageContent(WireType, tag_field="type", tag="image"):
    data: str  # base64
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class AudioContent(WireType, tag_field="type", tag="audio"):
    """2025-03-26."""

    data: str  # base64
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ResourceLink(WireType, tag_field="type", tag="resource_link"):
    """2025-06-18: a resource named, not embedded."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    icons: list[Icon] | None = None  # 2025-11-25
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class EmbeddedResource(WireType, tag_field="type", tag="resource"):
    resource: ResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class UnknownContent(WireType, tag_field="type", tag="mcpl_host/unknown"):
    """A content block of a type this library does not know (a later revision's, or a
    server's mistake), kept whole rather than failing the result it came in. ``data``
    is the block as sent; :attr:`kind` its ``type``. (The tag only lets the block sit
    in the same union as the known ones; it never comes from the wire.)"""

    data: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def kind(self) -> str:
        kind = self.data.get("type")
        return kind if isinstance(kind, str) else ""


ContentBlock: TypeAlias = (
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource | UnknownContent
)
# What the wire's tag can name; UnknownContent is made by the lenient decoder only.
KnownContent: TypeAlias = (
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource
)


# -- tools ---------------------------------------------------------------------------


class ToolAnnotations(WireType):
    """2025-03-26: hints about a tool's behaviour (never to be trusted for security)."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


_OBJECT_SCHEMA: Final = Raw(b'{"type":"object"}')
_ABSENT: Final = Raw()


class Tool(WireType):
    """A tool. ``input_schema``, ``output_schema``, ``execution`` and ``meta`` are any
    JSON a server chose: they are kept as their JSON (the ``*_json`` fields) and decoded
    anew on each use. Decoded up front, a server's schemas could cost thirty times their
    bytes (a schema of empty arrays) for as long as the list is cached; kept, a list
    costs about its bytes. Each must be a JSON object (or null, where optional), as the
    revisions say: anything else makes the list a :class:`ResultDecodeError`."""

    name: str
    input_schema_json: Raw = msgspec.field(default=_OBJECT_SCHEMA, name="inputSchema")
    description: str | None = None
    title: str | None = None  # 2025-06-18
    annotations: ToolAnnotations | None = None  # 2025-03-26
    output_schema_json: Raw = msgspec.field(default=_ABSENT, name="outputSchema")  # 2025-06-18
    icons: list[Icon] | None = None  # 2025-11-25
    execution_json: Raw = msgspec.field(default=_ABSENT, name="execution")  # 2025-11-25
    meta_json: Raw = msgspec.field(default=_ABSENT, name="_meta")

    def __post_init__(self) -> None:
        # Only the first byte is read: the members stay undecoded until used.
        if _first(self.input_schema_json) != b"{":
            raise ValueError("Expected `object` - at `$.inputSchema`")
        for member, raw in (
            ("outputSchema", self.output_schema_json),
            ("execution", self.execution_json),
            ("_meta", self.meta_json),
        ):
            if _first(raw) not in (b"", b"{", b"n"):
                raise ValueError(f"Expected `object | null` - at `$.{member}`")

    @property
    def input_schema(self) -> dict[str, Any]:
        value: dict[str, Any] = _object_or_none(self.input_schema_json) or {}
        return value

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return _object_or_none(self.output_schema_json)

    @property
    def execution(self) -> dict[str, Any] | None:
        return _object_or_none(self.execution_json)

    @property
    def meta(self) -> dict[str, Any] | None:
        return _object_or_none(self.meta_json)


def _first(raw: Raw) -> bytes:
    return bytes(memoryview(raw)[:1])


def _object_or_none(raw: Raw) -> dict[str, Any] | None:
    """A member kept as JSON, decoded: None when absent or null. A string in it that is
    not UTF-8 (never checked while it was skipped) is a :class:`ProtocolError`."""
    if not raw:
        return None
    try:
        value: dict[str, Any] | None = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise ProtocolError(f"a tool's member is not JSON: {log_value(str(exc))}") from None
    return value


class CallToolResult(WireType):
    """A tool's answer. ``is_error`` means the tool failed (its content says why); the
    request itself succeeded."""

    content: list[ContentBlock] = msgspec.field(default_factory=list)
    structured_content: Any = None  # 2025-06-18
    is_error: bool = False
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")

    @property
    def text(self) -> str:
        """The text blocks of ``content``, joined by newlines."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))


# -- resources -----------------------------------------------------------------------


class Resource(WireType):
    uri: str
    name: str
    title: str | None = None  # 2025-06-18
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None  # 2025-11-25
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ResourceTemplate(WireType):
    uri_template: str
    name: str
    title: str | None = None  # 2025-06-18
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None  # 2025-11-25
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ReadResourceResult(WireType):
    contents: list[ResourceContents]
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


# -- prompts -------------------------------------------------------------------------


class PromptArgument(WireType):
    name: str
    title: str | None = None  # 2025-06-18
    description: str | None = None
    required: bool | None = None


class Prompt(WireType):
    name: str
    title: str | None = None  # 2025-06-18
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None  # 2025-11-25
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class PromptMessage(WireType):
    role: str
    content: ContentBlock


class GetPromptResult(WireType):
    messages: list[PromptMessage]
    description: str | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


# -- completion ----------------------------------------------------------------------


class PromptRef(WireType, tag_field="type", tag="ref/prompt"):
    name: str


class ResourceTemplateRef(WireType, tag_field="type", tag="ref/resource"):
    uri: str


class Completion(WireType):
    """Suggested values for an argument (at most 100 per answer)."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


# -- what the server asks of the host ------------------------------------------------


class Root(WireType):
    """A directory or file the host lets the server work in (``file://`` URI)."""

    uri: str
    name: str | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ModelHint(WireType):
    name: str | None = None


class ModelPreferences(WireType):
    hints: list[ModelHint] | None = None
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None


class SamplingMessage(WireType):
    role: str
    content: TextContent | ImageContent | AudioContent


class CreateMessageParams(WireType):
    """``sampling/createMessage``: the server asks the host's model for a message."""

    messages: list[SamplingMessage]
    max_tokens: int
    model_preferences: ModelPreferences | None = None
    system_prompt: str | None = None
    include_context: str | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    metadata: dict[str, Any] | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class CreateMessageResult(WireType):
    role: str
    content: TextContent | ImageContent | AudioContent
    model: str
    stop_reason: str | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ElicitParams(WireType):
    """``elicitation/create`` (2025-06-18). ``mode`` is ``form`` (a flat
    ``requested_schema`` to fill) or, from 2025-11-25, ``url`` (send the user to ``url``;
    ``elicitation_id`` names the interaction)."""

    message: str
    mode: Literal["form", "url"] = "form"
    requested_schema: dict[str, Any] | None = None
    url: str | None = None
    elicitation_id: str | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ElicitResult(WireType):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")
