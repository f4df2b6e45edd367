"""Typed MCP calls, as methods of :class:`~mcpl_host.Connection`.

Each method sends one MCP request (a list method: one per page) through the
connection's request machinery (timeouts, cancellation, progress, rebinding) and decodes
the answer into :mod:`mcpl_host.client.types`. Lists are cached until the server says
they changed; ``tools/call`` results are checked against the tool's ``outputSchema``.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar

from msgspec import UNSET, Raw

from .._log import get_logger
from ..driver.foreign import in_trio
from ..driver.pending import ProgressCallback
from ..protocol.errors import (
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    McplHostError,
    OutputSchemaError,
    RequestError,
    ResourceNotFound,
)
from ..protocol.profiles import Profile
from ..protocol.redact import Redactor
from ..protocol.results import fresh_for
from .cache import ListCache, ListKind
from .decode import decode_result
from .hooks import HookContext, InputHooks
from .listen import Listener
from .lists import LISTS, has_none
from .mrtr import InputLimits, resolve
from .pagination import DEFAULT_MAX_PAGES, ListLimits, collect_raw
from .restore import SessionState
from .schema import SchemaViolation, UnsupportedSchema
from .types import (
    CallToolResult,
    Completion,
    GetPromptResult,
    LoggingLevel,
    Prompt,
    PromptRef,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ResourceTemplateRef,
    Tool,
    WireType,
)

__all__ = ["ClientCalls", "OutputCheck"]

_log = get_logger("mcpl_host.client")
T = TypeVar("T", bound=WireType)


class _CompleteResult(WireType):
    completion: Completion


# The cache slot of each typed list (its method and member: .lists.LISTS).
_KINDS: Final[dict[type[Any], ListKind]] = {
    Tool: "tools",
    Resource: "resources",
    ResourceTemplate: "resource_templates",
    Prompt: "prompts",
}


@dataclass(frozen=True, slots=True)
class OutputCheck:
    """A tool result's ``structuredContent`` against the ``outputSchema`` the tool's
    listing declared (:meth:`ClientCalls.check_output`). ``status`` is ``"matched"``;
    ``"mismatched"``, with the ``violations`` (none: the result has no
    ``structuredContent``); or ``"unchecked"``, with the ``reason`` (the tool list could
    not be read, or the schema is one the validator cannot check)."""

    status: Literal["matched", "mismatched", "unchecked"]
    violations: list[SchemaViolation] = field(default_factory=list)
    reason: str | None = None


class ClientCalls(abc.ABC):
    """The typed calls. Every method raises what :meth:`Connection.request
    <mcpl_host.Connection.request>` raises (:class:`~mcpl_host.RequestError`,
    :class:`~mcpl_host.RequestTimeout`, :class:`~mcpl_host.ConnectionClosed`), and a
    :class:`~mcpl_host.ProtocolError` for an answer that does not fit its type (its
    ``raw`` is the answer)."""

    name: str
    redactor: Redactor
    list_limits: ListLimits  # the most one listing collects, across its pages
    _lists: ListCache
    _session_state: SessionState  # what a new transport is asked for again
    _listener: Listener  # 2026-07-28: the subscriptions/listen kept open
    request_timeout: float
    _hooks: InputHooks  # answer a 2026-07-28 result's inputRequests
    input_limits: InputLimits  # the most rounds and inputs one such call takes

    @abc.abstractmethod
    async def _request_raw(
        self,
        method: str,
        params: Any,
        *,
        timeout: float | None,
        on_progress: ProgressCallback | None = None,
        progress_resets_timeout: bool = False,
        max_timeout: float | None = None,
        rebind: bool | None = None,
    ) -> Raw:
        """One request; its result as raw JSON."""

    @abc.abstractmethod
    def _tool_rejected(self, name: str) -> str | None:
        """Why the last listing rejected tool ``name`` (malformed ``x-mcp-header``
        annotations, 2026-07-28), or None."""

    @abc.abstractmethod
    def _use_log_level(self, level: str) -> None:
        """2026-07-28: name ``level`` in every later request's ``_meta``."""

    @abc.abstractmethod
    def _result_profile(self) -> Profile | None:
        """The profile of the transport the last answer came on."""

    async def _request_result(self, method: str, params: Any, **options: Any) -> Raw:
        """A request that may be answered ``input_required`` (2026-07-28): the rounds
        are run (``client/mrtr.py``) and the complete result returned."""
        raw = await self._request_raw(method, params, **options)
        profile = self._result_profile()
        if profile is None or not profile.stateless:
            return raw

        async def send(again: Any) -> Raw:
            return await self._request_raw(method, again, **options)

        async def rounds() -> Raw:
            return await resolve(
                raw,
                method,
                params,
                send,
                hooks=self._hooks,
                allowed=profile.input_requests,
                context=HookContext(self.name, None, profile.revision),
                limits=self.input_limits,
                safe=self._safe,
            )

        return await in_trio(rounds)  # the hooks and the backoff between rounds wait in trio

    def listed(self, kind: ListKind, key: str) -> Any | None:
        """The item of ``kind`` (``tools``, ``resources``, ``resource_templates``,
        ``prompts``) whose own key is ``key`` (a tool's or prompt's name, a resource's
        URI, a template's ``uriTemplate``) in the last list read and kept, even one past
        its ``ttlMs``; None when it is not there, or no list is kept (none read yet, or
        dropped since: the server said it changed, the transport was replaced). No
        request: what a caller naming an item checks before it reads the list again."""
        return self._lists.listed(kind, key)

    @property
    def max_list_items(self) -> int:
        """The most items one listing collects across its pages (the option)."""
        return self.list_limits.items

    @property
    def max_list_bytes(self) -> int:
        """The most bytes of page JSON one listing collects (the option)."""
        return self.list_limits.bytes

    # -- basics ------------------------------------------------------------------------

    async def ping(self, *, timeout: float | None = None) -> None:
        """Check the server answers (``ping``)."""
        await self._request_raw("ping", UNSET, timeout=timeout)

    async def set_logging_level(self, level: LoggingLevel, *, timeout: float | None = None) -> None:
        """Ask the server to send ``notifications/message`` at ``level`` and above
        (``logging/setLevel``; the server advertises the ``logging`` capability). Once
        the server accepts it, the level is asked for again after each reconnect.

        On 2026-07-28, which has no ``logging/setLevel``, nothing is sent: every later
        request names ``level`` in ``_meta`` (``io.modelcontextprotocol/logLevel``), and
        the server sends log messages while it answers that request."""
        profile = self._result_profile()
        if profile is not None and profile.stateless:
            self._use_log_level(level)
        else:
            await self._request_raw("logging/setLevel", {"level": level}, timeout=timeout)
        self._session_state.level_set(level)

    # -- tools -------------------------------------------------------------------------

    async def list_tools(
        self,
        *,
        refresh: bool = False,
        max_pages: int = DEFAULT_MAX_PAGES,
        timeout: float | None = None,
    ) -> list[Tool]:
        """Every tool, every page (see :meth:`list_resources` for caching and paging)."""
        return await self._list(Tool, refresh=refresh, max_pages=max_pages, timeout=timeout)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        progress_resets_timeout: bool = False,
        max_timeout: float | None = None,
        rebind: bool | None = None,
        validate_output: bool = True,
        task: bool | None = None,
    ) -> CallToolResult:
        """Call tool ``name``. A tool that failed is a result with ``is_error`` set, not an
        exception. ``on_progress`` and the timeout options are those of
        :meth:`Connection.request <mcpl_host.Connection.request>`.

        A tool the server runs as a task is followed to its end and its result returned
        as a direct call's (:mod:`mcpl_host.client.tasks`): on 2025-11-25 a tool whose
        ``execution.taskSupport`` is ``"required"``, or ``"optional"`` with
        ``task=True`` (``task=True`` on any other tool is a
        :class:`~mcpl_host.client.TaskError`; ``task=False`` never asks for one); on
        2026-07-28 whenever the server answers with a task. Then ``timeout`` bounds the
        whole task, and a timeout or cancellation also sends ``tasks/cancel``.

        When the tool declared an ``outputSchema`` (in the cached tool list, read first
        if there is none), a successful result's ``structured_content`` must be present
        and match it, else :class:`~mcpl_host.OutputSchemaError` (which carries the
        result). ``validate_output=False`` skips the check.

        Raises :class:`~mcpl_host.InvalidToolError`, with nothing sent, for a tool the
        last listing left out for its malformed ``x-mcp-header`` annotations (2026-07-28).
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        raw = await self._tool_call_raw(
            params,
            task=task,
            timeout=timeout,
            on_progress=on_progress,
            progress_resets_timeout=progress_resets_timeout,
            max_timeout=max_timeout,
            rebind=rebind,
        )
        result = self._tool_result(raw)
        if validate_output and not result.is_error:
            await self._check_output(name, result, timeout)
        return result

    async def _tool_call_raw(
        self,
        params: dict[str, Any],
        *,
        task: bool | None,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        progress_resets_timeout: bool,
        max_timeout: float | None,
        rebind: bool | None,
    ) -> Raw:
        """``tools/call``: the JSON of the tool's result. Made directly here (``task``
        is for the connection, which makes the call as a task when it should be one:
        mcpl_host.client.tasks)."""
        del task
        return await self._request_result(
            "tools/call",
            params,
            timeout=timeout,
            on_progress=on_progress,
            progress_resets_timeout=progress_resets_timeout,
            max_timeout=max_timeout,
            rebind=rebind,
        )

    def _tool_result(self, raw: Raw) -> CallToolResult:
        return self._decode(raw, CallToolResult, "tools/call")

    async def check_output(
        self, tool: str, structured_content: Any, *, timeout: float | None = None
    ) -> OutputCheck | None:
        """``structured_content`` (a result's, None when it has none) against the
        ``outputSchema`` that ``tool`` declared in the cached tool list (read first if
        there is none, each page within ``timeout``); None when the tool declared none
        (or is not listed). What :meth:`call_tool` checks, for a caller that made the
        call itself. Raises nothing but cancellation: a list that cannot be read leaves
        the result unchecked, since the call itself succeeded."""
        if not self._lists.has_tools:
            try:
                await self.list_tools(timeout=timeout)
            except McplHostError as exc:
                reason = f"the tool list could not be read ({type(exc).__name__}: {exc.message})"
                return OutputCheck("unchecked", reason=reason)
        validator = self._lists.output_validator(tool)
        if validator is None:
            return None
        if isinstance(validator, UnsupportedSchema):
            return OutputCheck(
                "unchecked", reason=f"the outputSchema cannot be checked: {validator}"
            )
        if structured_content is None:
            return OutputCheck("mismatched")
        violations = validator.errors(structured_content)
        return OutputCheck("mismatched", violations) if violations else OutputCheck("matched")

    async def _check_output(self, tool: str, result: CallToolResult, timeout: float | None) -> None:
        check = await self.check_output(tool, result.structured_content, timeout=timeout)
        if check is None or check.status == "matched":
            return
        shown = self.redactor.log_value(tool, 64)
        if check.status == "unchecked":
            # The call succeeded; failing it now would lose its result.
            _log.warning(
                "tool result not validated",
                server=self.name,
                tool=shown,
                reason=self.redactor.log_value(check.reason or ""),
            )
            return
        violations = check.violations
        if not violations:
            raise OutputSchemaError(
                f"tool {shown!r} declared an outputSchema but its result has no structuredContent",
                tool=tool,
                result=result,
                violations=[],
                server=self.name,
            )
        described = "; ".join(
            f"{v.path or '/'}: {self.redactor.redact(v.message)}" for v in violations
        )
        raise OutputSchemaError(
            f"the structuredContent of tool {shown!r} does not match its outputSchema: {described}",
            tool=tool,
            result=result,
            violations=violations,
            server=self.name,
        )

    # -- resources ---------------------------------------------------------------------

    async def list_resources(
        self,
        *,
        refresh: bool = False,
        max_pages: int = DEFAULT_MAX_PAGES,
        timeout: float | None = None,
    ) -> list[Resource]:
        """Every resource, every page.

        The list is read once and then served from a cache until the server sends
        ``notifications/resources/list_changed``, the transport is replaced, or
        ``refresh=True``. Pages are followed by cursor; a repeated cursor or more than
        ``max_pages`` pages raises :class:`~mcpl_host.ProtocolError`, and more items
        or bytes in all than the connection's ``max_list_items`` or ``max_list_bytes``
        raises :class:`~mcpl_host.LimitExceeded`, each as soon as the page that shows it
        arrives (never a partial list, nothing cached). ``timeout`` bounds each page.
        """
        return await self._list(Resource, refresh=refresh, max_pages=max_pages, timeout=timeout)

    async def list_resource_templates(
        self,
        *,
        refresh: bool = False,
        max_pages: int = DEFAULT_MAX_PAGES,
        timeout: float | None = None,
    ) -> list[ResourceTemplate]:
        """Every resource template, every page (cached as :meth:`list_resources`)."""
        return await self._list(
            ResourceTemplate, refresh=refresh, max_pages=max_pages, timeout=timeout
        )

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> ReadResourceResult:
        """The contents of ``uri``. Raises :class:`~mcpl_host.ResourceNotFound` when the
        server has no such resource (-32002; on 2026-07-28 -32602, which that revision
        uses for it)."""
        try:
            raw = await self._request_result("resources/read", {"uri": uri}, timeout=timeout)
        except RequestError as exc:
            if not _not_found(exc.code, self._result_profile()):
                raise
            raise ResourceNotFound(
                exc.code, exc.error_message, exc.data, uri=uri, server=exc.server
            ) from None
        return self._decode(raw, ReadResourceResult, "resources/read")

    async def subscribe_resource(self, uri: str, *, timeout: float | None = None) -> bool:
        """Ask for ``notifications/resources/updated`` when ``uri`` changes (each arrives
        as a :class:`~mcpl_host.ResourceUpdated` event). Once the server accepts it, the
        subscription is asked for again after each reconnect, until
        :meth:`unsubscribe_resource`. Returns whether it is in force.

        In the handshake era this sends ``resources/subscribe`` (a refusal raises). On
        2026-07-28 it re-issues the connection's ``subscriptions/listen`` with ``uri``
        added and waits for the acknowledgement: False when the server left ``uri``
        out (it is not in force, not recorded, and no update for it is delivered), and
        :class:`~mcpl_host.RequestError` when the server refused the listen.

        Also raises :class:`~mcpl_host.LimitExceeded`, with nothing written, for one URI
        more than the connection's ``max_subscriptions``.
        """
        token = self._session_state.subscribing(uri)
        accepted = False
        try:
            if self._listener.active:
                generation = self._listener.changed()
                limit = self.request_timeout if timeout is None else timeout
                ack = await self._listener.acknowledged_since(generation, limit)
                accepted = uri in ack.resources
                if not accepted:
                    _log.info(
                        "subscription not acknowledged",
                        server=self.name,
                        uri=self.redactor.log_value(uri),
                    )
            else:
                await self._request_raw("resources/subscribe", {"uri": uri}, timeout=timeout)
                accepted = True
        finally:
            self._session_state.subscribe_answered(uri, token, accepted=accepted)
        return accepted

    async def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Stop the updates for ``uri``; it is not asked for again after a reconnect,
        whatever this request's answer. On 2026-07-28 the listen is re-issued without
        it (the old one is cancelled at once; this does not wait for the new one's
        acknowledgement)."""
        self._session_state.unsubscribing(uri)
        if self._listener.active:
            self._listener.changed()
            return
        await self._request_raw("resources/unsubscribe", {"uri": uri}, timeout=timeout)

    # -- prompts -----------------------------------------------------------------------

    async def list_prompts(
        self,
        *,
        refresh: bool = False,
        max_pages: int = DEFAULT_MAX_PAGES,
        timeout: float | None = None,
    ) -> list[Prompt]:
        """Every prompt, every page (cached as :meth:`list_resources`)."""
        return await self._list(Prompt, refresh=refresh, max_pages=max_pages, timeout=timeout)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> GetPromptResult:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        raw = await self._request_result("prompts/get", params, timeout=timeout)
        return self._decode(raw, GetPromptResult, "prompts/get")

    # -- completion --------------------------------------------------------------------

    async def complete(
        self,
        ref: PromptRef | ResourceTemplateRef,
        argument: str,
        value: str,
        *,
        context: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """Suggestions for ``argument`` of a prompt or resource template, given the
        ``value`` typed so far. ``context``: the other arguments already chosen
        (2025-06-18; an older server ignores it)."""
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context is not None:
            params["context"] = {"arguments": dict(context)}
        raw = await self._request_raw("completion/complete", params, timeout=timeout)
        return self._decode(raw, _CompleteResult, "completion/complete").completion

    # -- shared ------------------------------------------------------------------------

    async def _list(
        self, type_: type[T], *, refresh: bool, max_pages: int, timeout: float | None
    ) -> list[T]:
        kind = _KINDS[type_]
        method, key, _ = LISTS[kind]
        if not refresh:
            cached = self._lists.get(kind)
            if cached is not None:
                return cached
        generation = self._lists.generation(kind)
        began = self._lists.now()
        fresh: list[float] = []  # each page's ttlMs, in seconds (2026-07-28)

        async def fetch(params: Any) -> Raw:
            page = await self._request_raw(method, params, timeout=timeout)
            profile = self._result_profile()
            if profile is not None and profile.stateless:
                fresh.append(fresh_for(page))
            return page

        try:
            raws = await collect_raw(
                fetch,
                method,
                key,
                max_pages=max_pages,
                limits=self.list_limits,
                server=self.name,
                safe=self.redactor.log_value,
            )
        except McplHostError as exc:
            if not has_none(kind, exc):
                raise
            raws = []  # kept as any list is: not asked again until something changes
        items = [
            decode_result(item, type_, method=method, server=self.name, safe=self._safe)
            for item in raws
        ]
        if type_ is Tool:
            # A tool whose x-mcp-header annotations are malformed must not be used: left
            # out here (the connection logged it once), refused by call_tool.
            items = [
                item
                for item in items
                if not (isinstance(item, Tool) and self._tool_rejected(item.name) is not None)
            ]
        # A 2026-07-28 list is reused only as long as every page of it may be, unless the
        # open listen has the server's word that it will say when the list changes.
        expires = began + min(fresh) if fresh and not self._told_of_changes(kind) else None
        self._lists.store(kind, generation, items, expires)
        return items

    def _told_of_changes(self, kind: ListKind) -> bool:
        """Whether the acknowledged ``subscriptions/listen`` covers ``kind``'s changes."""
        ack = self._listener.acknowledged
        if ack is None:
            return False
        if kind == "tools":
            return ack.tools_list_changed
        if kind == "prompts":
            return ack.prompts_list_changed
        return ack.resources_list_changed  # resources and their templates

    def _decode(self, raw: Raw, type_: type[T], method: str) -> T:
        return decode_result(raw, type_, method=method, server=self.name, safe=self._safe)

    def _safe(self, text: str) -> str:
        return self.redactor.log_value(text)


def _not_found(code: int | None, profile: Profile | None) -> bool:
    # -32002 on every revision (2026-07-28 still accepts the old code).
    return code == RESOURCE_NOT_FOUND or (
        code == INVALID_PARAMS and profile is not None and profile.stateless
    )
