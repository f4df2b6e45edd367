"""The servers' own requests to the host (``sampling/createMessage``,
``elicitation/create``, ``roots/list``), answered by the person at the prompt, or
from the flags given at start (``--sampling-reply``, ``--elicitation-reply``,
``--root``).

A request waits in a short queue until the prompt loop asks it (:meth:`Questions.answer`);
one the server withdraws meanwhile (it cancelled, or its transport ended) is dropped,
and if it is being asked the question's prompt is closed.
"""

from __future__ import annotations

import asyncio
import shlex
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec

from ...client.hooks import HookContext
from ...client.types import (
    CreateMessageParams,
    CreateMessageResult,
    ElicitParams,
    ElicitResult,
    Root,
    TextContent,
)
from ...driver.responder import ServerRequest
from ...protocol.errors import INTERNAL_ERROR, RequestError
from ..args import ShellFlags
from .screen import Screen

__all__ = ["MODEL", "Ask", "Question", "Questions"]

# The model named in a sampling answer the person typed (or --sampling-reply gave).
MODEL: Final = "mcpl-host-shell"
# Requests waiting for the person at most; more are refused at once. (The connection
# bounds the requests a server has in flight; this bounds what one person faces.)
MAX_WAITING: Final = 8
# A sampling request's last messages shown (a server may send thousands).
MAX_SHOWN: Final = 20
# The error a refused request gets: MCP's convention for "the user said no".
DECLINED: Final = -1

Ask = Callable[[str], Awaitable[str]]
"""Reads one line at a question's prompt (the message may span lines: the request is
shown in it, so that it is on the screen exactly while it is asked); raises EOFError
(Ctrl-D) or KeyboardInterrupt (Ctrl-C)."""


@dataclass(eq=False, slots=True)
class Question:
    """One request waiting for the person."""

    kind: str  # "sampling", "elicitation" or "roots"
    server: str | None
    params: Any
    future: asyncio.Future[Any]
    withdrawn: bool = False


class Questions:
    """The queue of requests, and the hooks that fill it. ``wake()`` is called when one
    arrives; ``abort()`` when the one being asked is withdrawn."""

    def __init__(self, screen: Screen, flags: ShellFlags) -> None:
        self.screen = screen
        self.flags = flags
        self.waiting: deque[Question] = deque()
        self.current: Question | None = None
        self.wake: Callable[[], None] = lambda: None
        self.abort: Callable[[], None] = lambda: None
        self._say: Callable[[str], None] = lambda _text: None

    def options(self) -> dict[str, Any]:
        """The manager's options that answer the servers' requests."""
        roots = self.flags.roots
        options: dict[str, Any] = {
            "sampling": self._sampling,
            "elicitation": self._elicitation,
        }
        if roots is not None:
            options["roots"] = [_uri(root) for root in roots]
        else:
            # Offered (the capability advertised), each request asked at the prompt.
            options["roots"] = []
            options["handlers"] = {"roots/list": self._roots}
        return options

    # -- the hooks (asyncio coroutines: the manager runs under mcpl_host.aio) -----------

    async def _sampling(self, params: CreateMessageParams, context: HookContext) -> Any:
        reply = self.flags.sampling_reply
        if reply is not None:
            said = "sampling request answered from --sampling-reply"
            self.screen.limited(context.server, "answered", said)
            return _sampled(reply)
        return await self._wait("sampling", context.server, params)

    async def _elicitation(self, params: ElicitParams, context: HookContext) -> Any:
        given = self.flags.elicitation_reply
        if given is not None:
            action, content = given
            said = f"elicitation request answered from --elicitation-reply: {action}"
            self.screen.limited(context.server, "answered", said)
            if params.mode == "url":
                content = None  # the person acts at the URL; no form is filled in
            return ElicitResult(action=action, content=content)  # type: ignore[arg-type]
        return await self._wait("elicitation", context.server, params)

    async def _roots(self, request: ServerRequest) -> Any:
        # Asked of the person: the params carry nothing, the request its server's name.
        return await self._wait("roots", request.server, None)

    async def _wait(self, kind: str, server: str | None, params: Any) -> Any:
        if len(self.waiting) >= MAX_WAITING:
            said = self.screen.style.bad(f"{kind} request refused: too many waiting")
            self.screen.limited(server, "refused", said)
            raise RequestError(INTERNAL_ERROR, "too many requests are waiting for the user")
        question = Question(kind, server, params, asyncio.get_running_loop().create_future())
        self.waiting.append(question)
        self.wake()
        try:
            return await question.future
        except asyncio.CancelledError:
            question.withdrawn = True
            if question in self.waiting:
                self.waiting.remove(question)
            said = self.screen.style.dim(f"the {kind} request was withdrawn")
            self.screen.limited(server, "withdrawn", said)
            if self.current is question:
                self.abort()
            raise

    # -- asking ------------------------------------------------------------------------

    def next(self) -> Question | None:
        while self.waiting:
            question = self.waiting.popleft()
            if not question.withdrawn:
                return question
        return None

    async def answer(self, question: Question, read: Ask) -> None:
        """Ask ``question`` at the prompt and settle it. Ctrl-C or Ctrl-D refuses it
        (an elicitation: cancels it)."""
        shown: list[str] = []

        def say(text: str) -> None:
            shown.append(text)

        async def asked(message: str) -> str:
            if question.withdrawn:
                # Withdrawn between two prompts (abort() had no prompt to close).
                raise EOFError
            # What the request says opens its first prompt.
            told = "".join(f"{line}\n" for line in shown)
            shown.clear()
            return await read(told + message)

        self._say = say
        ask: Ask = asked
        self.current = question
        try:
            if question.kind == "sampling":
                outcome: Any = await self._ask_sampling(question, ask)
            elif question.kind == "elicitation":
                outcome = await self._ask_elicitation(question, ask)
            else:
                outcome = await self._ask_roots(question, ask)
        except (EOFError, KeyboardInterrupt):
            if question.kind == "elicitation":
                outcome = ElicitResult(action="cancel")
            else:
                outcome = RequestError(DECLINED, "the user declined the request")
        finally:
            self.current = None
        if question.future.done():
            return  # withdrawn while it was asked
        if isinstance(outcome, RequestError):
            question.future.set_exception(outcome)
        else:
            question.future.set_result(outcome)
        self.screen.note(question.server, self.screen.style.dim(f"{question.kind} answered"))

    async def _ask_sampling(self, question: Question, ask: Ask) -> Any:
        s, params, say = self.screen, question.params, self._say
        assert isinstance(params, CreateMessageParams)
        asked = f" (maxTokens {params.max_tokens})"
        say(self._head(question) + s.style.bold("sampling request") + asked)
        if params.system_prompt:
            say(f"  system: {s.safe(params.system_prompt)}")
        if len(params.messages) > MAX_SHOWN:
            say(s.style.dim(f"  ({len(params.messages) - MAX_SHOWN} earlier messages not shown)"))
        for message in params.messages[-MAX_SHOWN:]:
            content = message.content
            said = (
                s.safe(content.text)
                if isinstance(content, TextContent)
                else s.style.dim(f"[{type(content).__name__}]")
            )
            say(f"  {s.safe(message.role, 32)}: {said}")
        reply = await ask("reply (empty: decline)> ")
        if not reply.strip():
            return RequestError(DECLINED, "the user declined the request")
        return _sampled(reply)

    async def _ask_elicitation(self, question: Question, ask: Ask) -> Any:
        s, params, say = self.screen, question.params, self._say
        assert isinstance(params, ElicitParams)
        said = f": {s.safe(params.message)}"
        say(self._head(question) + s.style.bold("elicitation request") + said)
        if params.mode == "url":
            say(f"  open: {s.safe(params.url or '')}")
        choice = await _choose(ask, s, say)
        if choice != "accept":
            return ElicitResult(action=choice)  # type: ignore[arg-type]
        if params.mode == "url":
            return ElicitResult(action="accept")
        schema = params.requested_schema or {}
        properties = schema.get("properties")
        required = schema.get("required")
        required = required if isinstance(required, list) else []
        content: dict[str, Any] = {}
        for key, field in (properties if isinstance(properties, dict) else {}).items():
            spec = field if isinstance(field, Mapping) else {}
            asked = f"{s.safe(key, 200)} ({_describe(spec, key in required, s.safe)})> "
            while True:
                text = await ask(asked)
                if not text.strip():
                    if "default" in spec:
                        content[key] = spec["default"]
                    elif key in required:
                        say(s.style.bad("a value is required"))
                        continue
                    break
                try:
                    content[key] = _convert(text, spec)
                except ValueError as exc:
                    say(s.style.bad(s.safe(str(exc))))
                    continue
                break
        return ElicitResult(action="accept", content=content)

    async def _ask_roots(self, question: Question, ask: Ask) -> Any:
        s, say = self.screen, self._say
        who = "" if question.server else " (a server)"
        say(self._head(question) + s.style.bold("roots request") + who)
        text = await ask("roots: URIs or paths, space-separated (empty: none)> ")
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        return {"roots": [Root(uri=_uri(word)) for word in words]}

    def _head(self, question: Question) -> str:
        server = question.server
        return self.screen.style.dim(f"[{self.screen.safe(server, 64)}] ") if server else ""


async def _choose(ask: Ask, s: Screen, say: Callable[[str], None]) -> str:
    while True:
        said = (await ask("accept, decline or cancel? [a/d/c] (a)> ")).strip().lower()
        for action in ("accept", "decline", "cancel"):
            if said in (action, action[0]) or (not said and action == "accept"):
                return action
        say(s.style.bad("type a, d or c"))


def _sampled(text: str) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text=text), model=MODEL)


def _uri(root: str) -> str:
    """A root as given: a URI (it has a scheme), else a path made a file:// URI."""
    scheme, sep, _ = root.partition("://")
    if sep and scheme.isalpha():
        return root
    return Path(root).expanduser().resolve().as_uri()


def _choices(spec: Mapping[str, Any]) -> list[tuple[Any, str | None]]:
    """A field's choices and their titles: ``enum`` (titled by the legacy
    ``enumNames``), or ``oneOf``/``anyOf`` of ``{const, title}`` (2025-11-25)."""
    enum = spec.get("enum")
    if isinstance(enum, list):
        names = spec.get("enumNames")
        titles = names if isinstance(names, list) and len(names) == len(enum) else []
        return [(v, str(titles[i]) if titles else None) for i, v in enumerate(enum)]
    for key in ("oneOf", "anyOf"):
        options = spec.get(key)
        if isinstance(options, list):
            found = [o for o in options if isinstance(o, Mapping) and "const" in o]
            if found:
                return [(o["const"], _title(o)) for o in found]
    return []


def _title(spec: Mapping[str, Any]) -> str | None:
    title = spec.get("title")
    return title if isinstance(title, str) and title else None


def _items(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    items = spec.get("items")
    return items if isinstance(items, Mapping) else {}


def _describe(spec: Mapping[str, Any], required: bool, safe: Callable[[Any], str]) -> str:
    """What a field's prompt says of it; every server value through ``safe``."""
    parts: list[str] = []
    title = spec.get("description") or spec.get("title")
    if isinstance(title, str) and title:
        parts.append(safe(title))
    many = spec.get("type") == "array"
    choices = _choices(_items(spec) if many else spec)
    if choices:
        shown = "|".join(safe(v) + (f" ({safe(t)})" if t else "") for v, t in choices)
        parts.append(("some of " if many else "one of ") + shown)
        if many:
            parts.append("comma-separated")
    else:
        parts.append(safe(spec.get("type", "string")))
    parts.extend(safe(bound) for bound in _bounds(spec))
    if "default" in spec:
        parts.append(f"empty: {safe(spec['default'])}")
    elif required:
        parts.append("required")
    else:
        parts.append("empty: leave out")
    return ", ".join(parts)[:2000]  # a server may offer thousands of choices


def _bounds(spec: Mapping[str, Any]) -> list[str]:
    words = {
        "minimum": "at least {}",
        "exclusiveMinimum": "more than {}",
        "maximum": "at most {}",
        "exclusiveMaximum": "less than {}",
        "minLength": "at least {} characters",
        "maxLength": "at most {} characters",
        "minItems": "at least {} choices",
        "maxItems": "at most {} choices",
        "format": "format {}",
    }
    return [word.format(spec[key]) for key, word in words.items() if key in spec]


def _convert(text: str, spec: Mapping[str, Any]) -> Any:
    """The typed value of a field: its schema's type, choices and bounds. Raises
    ``ValueError`` saying what was expected (server values in it, to be escaped)."""
    if spec.get("type") == "array":
        items = _items(spec)
        values: list[Any] = []
        for word in text.split(","):
            if word.strip() and not _among(value := _one(word.strip(), items), values):
                values.append(value)  # a choice typed twice counts once
        _check(len(values), spec, "minItems", "maxItems", "choices")
        return values
    return _one(text, spec)


def _among(value: Any, values: list[Any]) -> bool:
    # By type too: JSON's true is not its 1.
    return any(type(v) is type(value) and v == value for v in values)


def _one(text: str, spec: Mapping[str, Any]) -> Any:
    choices = _choices(spec)
    if choices:
        for value, _ in choices:
            if text == str(value):
                return value
        wanted = text.strip().casefold()
        for value, title in choices:
            if title is not None and title.casefold() == wanted:
                return value
        raise ValueError("one of: " + ", ".join(str(v) for v, _ in choices))
    kind = spec.get("type")
    if kind == "boolean":
        lowered = text.strip().lower()
        if lowered in ("y", "yes", "true"):
            return True
        if lowered in ("n", "no", "false"):
            return False
        raise ValueError("yes or no")
    if kind in ("number", "integer"):
        try:
            value = msgspec.json.decode(text.strip())
        except msgspec.DecodeError:
            value = None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"a number{' (integer)' if kind == 'integer' else ''}")
        if kind == "integer" and not float(value).is_integer():
            raise ValueError("an integer")
        number = int(value) if kind == "integer" else value
        _check(number, spec, "minimum", "maximum", "")
        above, below = spec.get("exclusiveMinimum"), spec.get("exclusiveMaximum")
        if isinstance(above, (int, float)) and not number > above:
            raise ValueError(f"more than {above}")
        if isinstance(below, (int, float)) and not number < below:
            raise ValueError(f"less than {below}")
        return number
    _check(len(text), spec, "minLength", "maxLength", "characters")
    return text


def _check(value: float, spec: Mapping[str, Any], low: str, high: str, unit: str) -> None:
    least, most = spec.get(low), spec.get(high)
    unit = f" {unit}" if unit else ""
    if isinstance(least, (int, float)) and value < least:
        raise ValueError(f"at least {least}{unit}")
    if isinstance(most, (int, float)) and value > most:
        raise ValueError(f"at most {most}{unit}")
