"""A small, fast MCP server over stdio, bundled for demos, tests and benchmarks.

Run it as ``python -m mcpl_host.demo``. It speaks newline-delimited JSON-RPC on
stdin/stdout and implements initialize, ping, and:

- tools: ``echo``, ``add`` (with ``structuredContent`` ``{"sum": ...}`` matching its
  ``outputSchema``), ``sleep`` (answers after the seconds it is given), ``countdown``
  (counts ``steps`` down, ``delay`` seconds apart, sending ``notifications/progress``
  when the request carries ``_meta.progressToken``, and stopping without an answer when
  the host cancels it or closes stdin), ``wrong_shape`` (``structuredContent`` that does
  not match its ``outputSchema``), ``log`` (sends ``notifications/message`` at ``level``
  unless ``logging/setLevel`` filters it), ``touch`` (sends
  ``notifications/resources/updated`` for a subscribed ``uri``) and ``ask`` (sends the
  client ``roots/list``, ``sampling/createMessage`` or ``elicitation/create``, if the
  client advertised the capability, and answers with what came back);
- resources: ``demo://readme`` (text), and the template ``demo://echo/{text}``; both
  can be subscribed to (``resources/subscribe``, ``resources/unsubscribe``);
- prompts: ``greet`` (argument ``name``);
- logging: ``logging/setLevel`` (default ``info``);
- completions: ``completion/complete`` for ``greet``'s ``name`` and the template's
  ``text``.

Anything else is answered as a careful server would: a broken envelope (an id that
is not a string or an integer, a method that is not a string, ``"jsonrpc"`` other than
``"2.0"``, params that are not an object) with -32600 or -32602, a line that is not JSON
with -32700, a request other than ping before initialize with -32600, and a batch with
-32600 unless the revision takes batches (2024-11-05, 2025-03-26); blank lines are
skipped. ``mcpl-host check`` finds nothing to fault in it. It is synchronous on purpose: one
line in, one line out, so a client's speed is what a benchmark against it measures.
While ``ask`` waits for the client's response, other lines wait their turn.

This module answers one line (:func:`answer_line`) or message (:func:`handle`);
:mod:`.catalogue` holds what the server offers, :mod:`.stdio` runs it on stdin and
stdout.
"""

from __future__ import annotations

import time
from typing import Any, Final
from urllib.parse import unquote

import msgspec

from .catalogue import (
    _ASKS,
    _ECHO_PREFIX,
    _MAX_DELAY,
    _MAX_STEPS,
    COMPLETIONS,
    LOG_LEVELS,
    PROMPTS,
    README_TEXT,
    README_URI,
    RESOURCE_NOT_FOUND,
    RESOURCE_TEMPLATES,
    RESOURCES,
    SUPPORTED,
    TOOLS,
)

__all__ = [
    "COMPLETIONS",
    "LOG_LEVELS",
    "PROMPTS",
    "README_TEXT",
    "README_URI",
    "RESOURCES",
    "RESOURCE_NOT_FOUND",
    "RESOURCE_TEMPLATES",
    "SUPPORTED",
    "TOOLS",
    "Session",
    "answer_line",
    "handle",
]


class Session:
    """What a request can do besides answering: notify, pause watching for a cancel, and
    ask the client; and what the server remembers of its client between messages.

    This plain one, used when :func:`handle` is called alone (behind a test's socket),
    sends nothing, sleeps for real and has nobody to ask; :func:`main` passes one wired
    to stdin/stdout. A subclass that is asked to remember calls ``super().__init__()``.
    """

    has_client = False  # whether ask() reaches anyone

    def __init__(self) -> None:
        self.client_capabilities: dict[str, Any] = {}
        self.version: str | None = None  # the revision initialize answered
        self.log_level = "info"
        self.subscriptions: set[str] = set()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification (here: dropped)."""

    def pause(self, seconds: float, request_id: Any) -> bool:
        """Wait ``seconds``; False if the request was cancelled (or input ended) meanwhile."""
        del request_id  # nothing can cancel it here: there is no input to watch
        time.sleep(seconds)
        return True

    def ask(
        self, method: str, params: dict[str, Any] | None, request_id: Any
    ) -> dict[str, Any] | None:
        """Send the client a request and return its response (the JSON-RPC message, with
        ``result`` or ``error``); None if ``request_id`` was cancelled (or input ended)
        meanwhile. Only called when ``has_client``: here there is nobody to ask."""
        del params, request_id
        raise RuntimeError(f"no client to send {method} to")


# Called alone, handle() remembers in this one (one client per process, as over stdio).
_ALONE = Session()


def _result(id_: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def _error(id_: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def _text(text: str, *, is_error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


def _invalid(message: Any) -> dict[str, Any] | None:
    """The error answering what is not a valid MCP request or notification (JSON-RPC
    2.0 with MCP's ids: a string or an integer), or None: it is valid, or a response.
    The answer carries the message's id where that is one a client can match, else null."""
    if not isinstance(message, dict):
        return _error(None, -32600, "Invalid Request: not an object")
    id_ = message.get("id")
    valid_id = isinstance(id_, str) or (isinstance(id_, int) and not isinstance(id_, bool))
    echo = id_ if valid_id else None
    method = message.get("method")
    if method is None:
        if "result" in message or "error" in message:
            return None  # a response (late, or to nothing): never answered
        return _error(echo, -32600, "Invalid Request: no method")
    if not isinstance(method, str):
        return _error(echo, -32600, "Invalid Request: the method must be a string")
    if message.get("jsonrpc") != "2.0":
        return _error(echo, -32600, 'Invalid Request: "jsonrpc" must be "2.0"')
    if "id" in message and not valid_id:
        return _error(None, -32600, "Invalid Request: the id must be a string or an integer")
    params = message.get("params")
    if params is not None and not isinstance(params, dict) and "id" in message:
        # JSON-RPC allows params by position (an array), MCP does not; anything else is
        # not JSON-RPC at all. A notification is never answered, however wrong its
        # params (JSON-RPC 2.0: "The Server MUST NOT reply to a Notification").
        if isinstance(params, list):
            return _error(echo, -32602, "Invalid params: params must be an object")
        return _error(echo, -32600, "Invalid Request: params must be an object")
    return None


def handle(message: Any, session: Session | None = None) -> dict[str, Any] | None:
    """The answer to one message, or None for a notification, a response, or a request
    the host cancelled while it ran (``countdown``). It answers whatever state the
    session is in (tests call it alone); :func:`answer_line` is the server's own entry."""
    invalid = _invalid(message)
    if invalid is not None or "method" not in message:
        return invalid
    if "id" not in message:
        return None  # notifications (cancelled, initialized, roots/list_changed) need nothing
    return _dispatch(message, session or _ALONE)


def _dispatch(message: dict[str, Any], session: Session) -> dict[str, Any] | None:
    id_, method = message["id"], message["method"]
    params = message.get("params") or {}
    if method == "initialize":
        return _initialize(id_, params, session)
    if method == "ping":
        return _result(id_, {})
    if method == "tools/list":
        return _listed(id_, params, "tools", TOOLS)
    if method == "tools/call":
        try:
            result = _call_tool(id_, params, session)
        except _Refusal as refusal:
            return _error(id_, refusal.code, refusal.message)
        return None if result is None else _result(id_, result)
    if method == "resources/list":
        return _listed(id_, params, "resources", RESOURCES)
    if method == "resources/templates/list":
        return _listed(id_, params, "resourceTemplates", RESOURCE_TEMPLATES)
    if method == "resources/read":
        return _read_resource(id_, params.get("uri"))
    if method in ("resources/subscribe", "resources/unsubscribe"):
        return _subscribe(id_, params.get("uri"), session, on=method == "resources/subscribe")
    if method == "prompts/list":
        return _listed(id_, params, "prompts", PROMPTS)
    if method == "prompts/get":
        return _get_prompt(id_, params)
    if method == "logging/setLevel":
        return _set_level(id_, params.get("level"), session)
    if method == "completion/complete":
        return _complete(id_, params)
    return _error(id_, -32601, f"Method not found: {method}")


def _initialize(id_: Any, params: dict[str, Any], session: Session) -> dict[str, Any]:
    # Remembered so that ``ask`` only sends what the client said it can answer.
    capabilities = params.get("capabilities")
    session.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
    asked = params.get("protocolVersion")
    session.version = asked if asked in SUPPORTED else SUPPORTED[0]
    return _result(
        id_,
        {
            "protocolVersion": session.version,
            "capabilities": {
                "tools": {},
                "resources": {"subscribe": True},
                "prompts": {},
                "logging": {},
                "completions": {},
            },
            "serverInfo": {"name": "mcpl-host-demo", "version": "1.0.0"},
            "instructions": (
                "A demo server: tools echo, add, sleep, countdown, wrong_shape, log, touch "
                "and ask (roots, sampling, elicitation), the resource demo://readme and "
                "the template demo://echo/{text} (both subscribable), the prompt greet, "
                "logging, and completions for greet and the template."
            ),
        },
    )


def _call_tool(id_: Any, params: dict[str, Any], session: Session) -> dict[str, Any] | None:
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "echo":
        return _text(str(args.get("text", "")))
    if name == "add":
        try:
            total = args["a"] + args["b"]
        except (KeyError, TypeError):
            return _text("a and b must be numbers", is_error=True)
        result = _text(str(total))
        result["structuredContent"] = {"sum": total}
        return result
    if name == "sleep":
        seconds = args.get("seconds")
        if not isinstance(seconds, (int, float)) or not 0 <= seconds <= 60:
            return _text("seconds: 0 to 60", is_error=True)
        time.sleep(seconds)
        return _text(f"slept {seconds}")
    if name == "countdown":
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        return _countdown(id_, args, token, session)
    if name == "wrong_shape":
        # "many" where the outputSchema says integer: a validating client must notice.
        result = _text('{"count": "many"}')
        result["structuredContent"] = {"count": "many"}
        return result
    if name == "log":
        return _log(args, session)
    if name == "touch":
        return _touch(args, session)
    if name == "ask":
        return _ask(id_, args, session)
    raise _Refusal(-32602, f"Unknown tool: {name}")


def _countdown(
    id_: Any, args: dict[str, Any], token: Any, session: Session
) -> dict[str, Any] | None:
    steps, delay = args.get("steps"), args.get("delay", 0.1)
    if isinstance(steps, bool) or not isinstance(steps, int) or not 0 <= steps <= _MAX_STEPS:
        return _text(f"steps: an integer from 0 to {_MAX_STEPS}", is_error=True)
    if (
        isinstance(delay, bool)
        or not isinstance(delay, (int, float))
        or not 0 <= delay <= _MAX_DELAY
    ):
        return _text(f"delay: 0 to {_MAX_DELAY:g} seconds", is_error=True)
    for done in range(1, steps + 1):
        if not session.pause(delay, id_):
            return None  # cancelled: MCP says a cancelled request gets no answer
        if token is not None:
            session.notify(
                "notifications/progress",
                {
                    "progressToken": token,
                    "progress": done,
                    "total": steps,
                    "message": f"{steps - done} to go",
                },
            )
    return _text(f"liftoff after {steps} steps")


def _log(args: dict[str, Any], session: Session) -> dict[str, Any]:
    level, text = args.get("level"), args.get("text")
    if level not in LOG_LEVELS:
        return _text(f"level: one of {', '.join(LOG_LEVELS)}", is_error=True)
    if not isinstance(text, str):
        return _text("text must be a string", is_error=True)
    if LOG_LEVELS.index(level) < LOG_LEVELS.index(session.log_level):
        return _text("filtered")
    session.notify("notifications/message", {"level": level, "logger": "demo", "data": text})
    return _text("logged")


def _touch(args: dict[str, Any], session: Session) -> dict[str, Any]:
    uri = args.get("uri")
    if not isinstance(uri, str):
        return _text("uri must be a string", is_error=True)
    if uri not in session.subscriptions:
        return _text("not subscribed")
    session.notify("notifications/resources/updated", {"uri": uri})
    return _text("updated")


def _ask(id_: Any, args: dict[str, Any], session: Session) -> dict[str, Any] | None:
    what = args.get("what")
    if what not in _ASKS:
        return _text(f"what: one of {', '.join(_ASKS)}", is_error=True)
    capability, method, params = _ASKS[what]
    if not session.has_client:
        return _text("no client to ask", is_error=True)
    if capability not in session.client_capabilities:
        return _text(f"the client did not advertise {capability}", is_error=True)
    response = session.ask(method, params, id_)
    if response is None:
        return None  # cancelled, or the client is gone: nobody waits for the answer
    error = response.get("error")
    if error is not None:
        message = error.get("message") if isinstance(error, dict) else error
        return _text(f"the client refused: {message}", is_error=True)
    try:
        return _text(_what_came_back(what, response.get("result")))
    except (AttributeError, KeyError, TypeError):
        # A malformed answer is the client's fault; say so rather than crash the server.
        return _text(f"the client's answer to {method} did not fit it", is_error=True)


def _what_came_back(what: str, result: Any) -> str:
    if what == "roots":
        uris = [str(root["uri"]) for root in result["roots"]]
        return "roots: " + (", ".join(uris) or "(none)")
    if what == "sample":
        content = result["content"]  # since 2025-11-25 it may be a list of blocks
        blocks = content if isinstance(content, list) else [content]
        said = " ".join(str(b["text"]) for b in blocks if b.get("type") == "text")
        return f"model {result['model']} said: {said}"
    action = result["action"]
    return f"hello, {result['content']['name']}" if action == "accept" else f"elicitation {action}"


def _within(value: float, low: float, high: float) -> bool:
    # JSON true is not a number, though Python's bool is an int.
    return not isinstance(value, bool) and low <= value <= high


def _is_resource(uri: Any) -> bool:
    return uri == README_URI or (isinstance(uri, str) and uri.startswith(_ECHO_PREFIX))


def _subscribe(id_: Any, uri: Any, session: Session, *, on: bool) -> dict[str, Any]:
    if not _is_resource(uri):
        return _error(id_, RESOURCE_NOT_FOUND, f"Resource not found: {uri}")
    if on:
        session.subscriptions.add(uri)
    else:
        session.subscriptions.discard(uri)
    return _result(id_, {})


def _listed(id_: Any, params: Any, key: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    # Every list fits one page, so no cursor was ever handed out: any cursor is invalid.
    if isinstance(params, dict) and "cursor" in params:
        return _error(id_, -32602, "Invalid cursor")
    return _result(id_, {key: items})


def _set_level(id_: Any, level: Any, session: Session) -> dict[str, Any]:
    if level not in LOG_LEVELS:
        return _error(id_, -32602, f"Unknown log level: {level}")
    session.log_level = level
    return _result(id_, {})


def _complete(id_: Any, params: dict[str, Any]) -> dict[str, Any]:
    ref, argument = params.get("ref"), params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        return _error(id_, -32602, "completion/complete needs ref and argument")
    kind = ref.get("type")
    target = ref.get("name") if kind == "ref/prompt" else ref.get("uri")
    key: tuple[Any, Any, Any] = (kind, target, argument.get("name"))  # not all strings
    candidates = COMPLETIONS.get(key)
    if candidates is None:
        return _error(id_, -32602, f"No completions for {kind} {target} {argument.get('name')}")
    typed = str(argument.get("value", "")).lower()
    values = [value for value in candidates if value.lower().startswith(typed)]
    return _result(id_, {"completion": {"values": values, "total": len(values), "hasMore": False}})


def _read_resource(id_: Any, uri: Any) -> dict[str, Any]:
    if uri == README_URI:
        return _result(
            id_, {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": README_TEXT}]}
        )
    if isinstance(uri, str) and uri.startswith(_ECHO_PREFIX):
        text = unquote(uri[len(_ECHO_PREFIX) :])
        return _result(id_, {"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]})
    return _error(id_, RESOURCE_NOT_FOUND, f"Resource not found: {uri}")


def _get_prompt(id_: Any, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    if name != "greet":
        return _error(id_, -32602, f"Unknown prompt: {name}")
    arguments = params.get("arguments") or {}
    who = arguments.get("name") if isinstance(arguments, dict) else None
    if not isinstance(who, str) or not who:
        return _error(id_, -32602, "Missing required argument: name")
    return _result(
        id_,
        {
            "description": f"Greet {who}",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": f"Please greet {who}."}}
            ],
        },
    )


class _Refusal(Exception):
    """A request answered with a JSON-RPC error from deep inside a handler."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def answer_line(line: bytes, session: Session | None = None) -> Any:
    """What to write back for one line of input: a message, a batch's array of answers,
    or None (nothing). Besides :func:`handle`'s answers it refuses every request but
    ping before initialize, and batches on a revision without them."""
    session = session or _ALONE
    if not line or line.isspace():  # isspace: no copy of a long line
        return None  # a blank line is no message: nothing to answer
    try:
        message = _DECODER.decode(line)
    except msgspec.DecodeError:
        return _error(None, -32700, "Parse error")
    if isinstance(message, list):
        if session.version not in _BATCHING:
            return _error(None, -32600, f"Invalid Request: no batches on {session.version}")
        if not message:
            return _error(None, -32600, "Invalid Request: an empty batch")
        answers = [a for a in (_answer(m, session) for m in message) if a is not None]
        return answers or None
    return _answer(message, session)


# The revisions that take JSON-RPC batches (2025-06-18 removed them).
_BATCHING: Final = ("2024-11-05", "2025-03-26")
_BEFORE_INITIALIZE: Final = ("initialize", "ping")


def _answer(message: Any, session: Session) -> dict[str, Any] | None:
    invalid = _invalid(message)
    if invalid is not None or "method" not in message or "id" not in message:
        return invalid
    if session.version is None and message["method"] not in _BEFORE_INITIALIZE:
        return _error(message["id"], -32600, "Invalid Request: initialize first")
    return _dispatch(message, session)


_DECODER: Final = msgspec.json.Decoder()
