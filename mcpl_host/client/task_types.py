"""The types of tasks (2025-11-25's experimental tasks and the 2026-07-28 extension
``io.modelcontextprotocol/tasks``), in the style of :mod:`mcpl_host.client.types`.

One :class:`Task` serves both forms: the extension's ``ttlMs`` and ``pollIntervalMs``
land in ``ttl`` and ``poll_interval`` (milliseconds either way), and what its
``tasks/get`` inlines (``result``, ``error``, ``inputRequests``) has its own fields.
A status this library does not know is kept as sent, never refused: such a task is
taken as still running (:attr:`Task.terminal` is false) and followed until it ends or
the caller's timeout passes.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

import msgspec
from msgspec import Raw

from ..protocol.errors import McplHostError
from ..protocol.tasks import KNOWN_STATUSES, TERMINAL_STATUSES
from .types import WireType, keep_raw

__all__ = ["Task", "TaskError", "TaskStatus", "decode_task"]

TaskStatus: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]
"""The statuses the revisions define; :attr:`Task.status` may hold another (kept)."""

_ABSENT: Final = Raw()


class Task(WireType):
    """A task's state as the server last told it."""

    task_id: str
    status: str  # a TaskStatus, or a later revision's (kept, taken as running)
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl: int | None = None  # ms from creation; None: unlimited (or not said)
    status_message: str | None = None
    poll_interval: int | None = None  # ms the server suggests between polls
    # The extension's tasks/get and notifications/tasks inline these:
    result_json: Raw = msgspec.field(default=_ABSENT, name="result")  # when completed
    error: dict[str, Any] | None = None  # when failed: the JSON-RPC error
    input_requests: dict[str, Any] | None = None  # when input_required
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")

    @property
    def terminal(self) -> bool:
        """Completed, failed or cancelled: it will not change again."""
        return self.status in TERMINAL_STATUSES

    @property
    def known_status(self) -> bool:
        return self.status in KNOWN_STATUSES


class _ExtensionTimes(msgspec.Struct, rename="camel"):
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


_TASK: Final = msgspec.json.Decoder(Task)
_TIMES: Final = msgspec.json.Decoder(_ExtensionTimes)


def decode_task(raw: Raw, *, extension: bool) -> Task:
    """``raw`` (a task object) as a :class:`Task`, keeping its JSON. ``extension``: it
    is the 2026-07-28 extension's shape (``ttlMs``, ``pollIntervalMs``).

    Raises ``msgspec.ValidationError`` or ``msgspec.DecodeError`` when it does not fit
    (the caller turns that into its :class:`~mcpl_host.client.ResultDecodeError`)."""
    task = _TASK.decode(raw)
    if extension:
        times = _TIMES.decode(raw)
        task.ttl, task.poll_interval = times.ttl_ms, times.poll_interval_ms
    return keep_raw(task, raw)


class TaskError(McplHostError):
    """A task did not end with a result the host can return. ``task`` is its last
    state when known; ``task_id`` names it either way.

    Raised when a 2026-07-28 task was cancelled (the extension has no error for it),
    when it asks for input no hook of the host serves (``task.input_requests`` says
    what; the task is cancelled), and when a task call is made on a revision or to a
    server that has no tasks, or for a tool that allows none (nothing is sent then)."""

    def __init__(
        self,
        message: str,
        *,
        task_id: str | None = None,
        task: Task | None = None,
        server: str | None = None,
    ) -> None:
        super().__init__(message, server=server)
        self.task_id = task_id if task_id is not None else (task.task_id if task else None)
        self.task = task
