"""What the demo server offers: the revisions it speaks, its tools, resources,
templates, prompts and completions, and the limits its tools keep."""

from __future__ import annotations

from typing import Any, Final

SUPPORTED = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

# MCP's own code for a resource that does not exist.
RESOURCE_NOT_FOUND: Final = -32002
_MAX_STEPS: Final = 100
_MAX_DELAY: Final = 10.0
# MCP's logging levels (syslog's), least severe first: a level lets through itself and
# everything after it.
LOG_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
# What ``ask`` can ask for: the client capability it needs, the method, its params.
_ASKS: Final[dict[str, tuple[str, str, dict[str, Any] | None]]] = {
    "roots": ("roots", "roots/list", None),
    "sample": (
        "sampling",
        "sampling/createMessage",
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello"}}],
            "maxTokens": 50,
        },
    ),
    "elicit": (
        "elicitation",
        "elicitation/create",
        {
            "message": "What is your name?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        },
    ),
}

TOOLS = [
    {
        "name": "echo",
        "description": "Return the text it is given.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "add",
        "description": "Add two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"sum": {"type": "number"}},
            "required": ["sum"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "sleep",
        "description": "Answer after the given number of seconds (at most 60).",
        "inputSchema": {
            "type": "object",
            "properties": {"seconds": {"type": "number"}},
            "required": ["seconds"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "countdown",
        "description": (
            "Count down from steps to zero, delay seconds apart, reporting progress; "
            "stops when cancelled."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "steps": {"type": "integer", "minimum": 0, "maximum": _MAX_STEPS},
                "delay": {"type": "number", "minimum": 0, "maximum": _MAX_DELAY},
            },
            "required": ["steps"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "wrong_shape",
        "description": (
            "Returns structuredContent that does not match its outputSchema, "
            "for testing clients' output validation."
        ),
        "inputSchema": {"type": "object", "properties": {}},
        "outputSchema": {
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "log",
        "description": (
            "Send text as a log message (notifications/message) at the given level, "
            "unless the level set with logging/setLevel filters it out."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "level": {"type": "string", "enum": list(LOG_LEVELS)},
                "text": {"type": "string"},
            },
            "required": ["level", "text"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "touch",
        "description": (
            "Send notifications/resources/updated for a resource, if the client subscribed to it."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {"uri": {"type": "string"}},
            "required": ["uri"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "ask",
        "description": (
            "Ask the client for its roots, a sampled message, or (elicitation) the "
            "user's name, and answer with what it said."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {"what": {"type": "string", "enum": list(_ASKS)}},
            "required": ["what"],
        },
        "annotations": {"readOnlyHint": True},
    },
]

README_URI: Final = "demo://readme"
README_TEXT: Final = (
    "# mcpl-host demo server\n\n"
    "Tools: echo, add, sleep, countdown, wrong_shape, log, touch, ask. "
    "Resources: demo://readme and demo://echo/{text}, both subscribable. "
    "Prompts: greet.\n\n"
    "Logging: logging/setLevel, and the log tool's notifications/message. "
    "Completions: greet's name, and demo://echo/{text}'s text. "
    "The ask tool asks the client for roots, sampling or elicitation.\n"
)
RESOURCES = [
    {
        "uri": README_URI,
        "name": "readme",
        "title": "About the demo server",
        "description": "What this server offers.",
        "mimeType": "text/markdown",
    },
]
_ECHO_PREFIX: Final = "demo://echo/"
RESOURCE_TEMPLATES = [
    {
        "uriTemplate": _ECHO_PREFIX + "{text}",
        "name": "echo",
        "description": "A resource whose text is the (percent-decoded) end of its URI.",
        "mimeType": "text/plain",
    },
]
PROMPTS = [
    {
        "name": "greet",
        "description": "Ask the model to greet someone.",
        "arguments": [{"name": "name", "description": "Who to greet.", "required": True}],
    },
]
# What completion/complete offers, by (reference type, prompt name or URI template,
# argument name).
COMPLETIONS: Final[dict[tuple[str, str, str], tuple[str, ...]]] = {
    ("ref/prompt", "greet", "name"): ("Ada", "Alan", "Grace", "Linus"),
    ("ref/resource", _ECHO_PREFIX + "{text}", "text"): ("hello", "hi", "howdy"),
}
