"""What the host does with the server's notifications (cancellation and progress aside,
which the connection's request machinery consumes).

- ``notifications/{tools,resources,prompts}/list_changed``: the cached list is dropped
  and a :class:`~mcpl_host.ListChanged` event raised.
- ``notifications/resources/updated``: a :class:`~mcpl_host.ResourceUpdated` event.
- ``notifications/message``: logged through structlog (logger ``mcpl_host.server``) at
  the mapped level with the server's name bound, and a :class:`~mcpl_host.ServerLog`
  event.
- ``notifications/tasks/status`` (2025-11-25), ``notifications/tasks`` (the 2026-07-28
  extension): handed to whoever follows that task (:class:`TaskBoard
  <mcpl_host.client.tasks.TaskBoard>`), and a :class:`~mcpl_host.ServerNotification`
  event.
- anything else: a :class:`~mcpl_host.ServerNotification` event.

A malformed notification is logged and dropped; it never reaches the reader loop as an
exception.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol, TypeVar

import msgspec
from msgspec import Raw

from .._log import get_logger
from ..events import Event, ListChanged, ResourceUpdated, ServerLog, ServerNotification
from ..protocol.redact import Redactor
from .cache import ListCache, ListKind

__all__ = ["NotificationRouter"]

T = TypeVar("T")

# MCP's eight syslog levels onto the five a Python logger has.
_LEVELS: Final = {
    "debug": "debug",
    "info": "info",
    "notice": "info",
    "warning": "warning",
    "error": "error",
    "critical": "critical",
    "alert": "critical",
    "emergency": "critical",
}
_CHANGED: Final[dict[str, tuple[str, tuple[ListKind, ...]]]] = {
    "notifications/tools/list_changed": ("tools", ("tools",)),
    "notifications/resources/list_changed": ("resources", ("resources", "resource_templates")),
    "notifications/prompts/list_changed": ("prompts", ("prompts",)),
}


class _Updated(msgspec.Struct):
    uri: str


class _Message(msgspec.Struct):
    level: str
    data: Any = None
    logger: str | None = None


class TaskStatusSink(Protocol):
    """Where a task's pushed state goes (the connection's followers of tasks)."""

    def takes(self, method: str) -> bool: ...

    def push(self, method: str, params: Raw | None) -> None: ...


_UPDATED: Final = msgspec.json.Decoder(_Updated)
_MESSAGE: Final = msgspec.json.Decoder(_Message)


class NotificationRouter:
    def __init__(
        self,
        *,
        server: str,
        lists: ListCache,
        redactor: Redactor,
        emit: Callable[[Event], None],
        tasks: TaskStatusSink | None = None,
    ) -> None:
        self._lists = lists
        self._tasks = tasks
        self._redactor = redactor
        self._emit = emit
        self._log = get_logger("mcpl_host.connection").bind(server=server)
        self._server_log = get_logger("mcpl_host.server").bind(server=server)

    def handle(self, method: str, params: Raw | None) -> None:
        changed = _CHANGED.get(method)
        if changed is not None:
            kind, kinds = changed
            self._lists.invalidate(*kinds)
            self._emit(ListChanged(kind))
        elif method == "notifications/resources/updated":
            updated = self._decode(_UPDATED, method, params)
            if updated is not None:
                self._emit(ResourceUpdated(updated.uri))
        elif method == "notifications/message":
            message = self._decode(_MESSAGE, method, params)
            if message is not None:
                self._log_message(message)
        else:
            if self._tasks is not None and self._tasks.takes(method):
                self._tasks.push(method, params)
            self._emit(ServerNotification(method, params))

    def _log_message(self, message: _Message) -> None:
        level = _LEVELS.get(message.level, "info")
        log = getattr(self._server_log, level)
        log(
            "server log",
            mcp_level=self._redactor.log_value(message.level, 32),
            server_logger=None
            if message.logger is None
            else self._redactor.log_value(message.logger, 64),
            data=self._redactor.log_json(message.data),
        )
        self._emit(ServerLog(message.level, message.logger, message.data))

    def _decode(
        self, decoder: msgspec.json.Decoder[T], method: str, params: Raw | None
    ) -> T | None:
        try:
            return decoder.decode(params or b"{}")
        except msgspec.DecodeError as exc:
            self._log.info(
                "notification ignored",
                method=method,
                reason=self._redactor.log_value(f"malformed params: {exc}"),
            )
            return None
