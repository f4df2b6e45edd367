"""The wire rules of tasks, in both of their forms.

2025-11-25 (experimental, in the core protocol): the client asks for a task with
``params.task{ttl?}``; the answer is ``CreateTaskResult{task}``; ``tasks/get`` polls,
``tasks/result`` blocks until the task ends and returns the request's own result or
error, ``tasks/list`` pages, ``tasks/cancel`` returns the task; the server may push
``notifications/tasks/status``. Times are ``ttl`` and ``pollInterval`` (ms).

2026-07-28 (the extension ``io.modelcontextprotocol/tasks``): the client names the
extension in each request's capabilities and the server decides, per request, to answer
with a task: a result with ``resultType: "task"`` that *is* the task (flat, no ``task``
member). ``tasks/get`` inlines the final ``result`` or ``error`` (and ``inputRequests``
while the task needs input, answered by ``tasks/update``); ``tasks/cancel`` is an empty
acknowledgement; there is no ``tasks/result`` or ``tasks/list``. Times are ``ttlMs`` and
``pollIntervalMs``; the notification is ``notifications/tasks``.

Pure: bytes in, decisions out. The trio side is :mod:`mcpl_host.client.tasks`.
"""

from __future__ import annotations

import math
from typing import Any, Final

import msgspec
from msgspec import UNSET, Raw

from .profiles import Profile

__all__ = [
    "DEFAULT_POLL_INTERVAL",
    "EXTENSION",
    "KNOWN_STATUSES",
    "MAX_INPUT_REQUESTS",
    "MAX_POLL_INTERVAL",
    "MIN_POLL_INTERVAL",
    "RELATED_TASK",
    "STATUS_NOTIFICATIONS",
    "TERMINAL_STATUSES",
    "created_task",
    "poll_delay",
    "task_param",
]

#: The 2026-07-28 extension's identifier, in ``capabilities.extensions``.
EXTENSION: Final = "io.modelcontextprotocol/tasks"
#: The ``_meta`` key that ties a message to a task (both forms).
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
#: The server's push of a task's state, per form.
STATUS_NOTIFICATIONS: Final = frozenset({"notifications/tasks/status", "notifications/tasks"})

KNOWN_STATUSES: Final = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
TERMINAL_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})

# How often the host polls, in seconds. The server suggests an interval; the host keeps
# it between a floor (a server saying 0 must not make the host poll in a busy loop) and
# a cap (a server saying "an hour" must not hide a finished task from a caller whose
# timeout is shorter), and uses the default when the server says nothing.
MIN_POLL_INTERVAL: Final = 0.1
MAX_POLL_INTERVAL: Final = 30.0
DEFAULT_POLL_INTERVAL: Final = 1.0

#: The most input requests (the extension's ``inputRequests`` keys) the host answers for
#: one task: each key is new by the rule, so a server could ask without end, and the
#: host remembers each key it answered (to answer it once).
MAX_INPUT_REQUESTS: Final = 1000


def poll_delay(poll_interval_ms: object) -> float:
    """Seconds to wait before the next ``tasks/get``, from the server's suggestion in
    milliseconds (anything but a non-negative number is no suggestion)."""
    if isinstance(poll_interval_ms, bool) or not isinstance(poll_interval_ms, (int, float)):
        return DEFAULT_POLL_INTERVAL
    if math.isnan(poll_interval_ms) or poll_interval_ms < 0:
        return DEFAULT_POLL_INTERVAL
    return min(max(poll_interval_ms / 1000.0, MIN_POLL_INTERVAL), MAX_POLL_INTERVAL)


def task_param(ttl_ms: int | None) -> dict[str, Any]:
    """``params.task`` of a 2025-11-25 request that asks for a task.

    Raises ``ValueError`` for a negative ``ttl_ms``."""
    if ttl_ms is None:
        return {}
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 0:
        raise ValueError(f"a task's ttl is a non-negative integer of milliseconds, not {ttl_ms!r}")
    return {"ttl": ttl_ms}


class _Created(msgspec.Struct):
    task: Raw = Raw()


class _Tagged(msgspec.Struct, rename="camel"):
    result_type: Any = UNSET


_CREATED: Final = msgspec.json.Decoder(_Created)
_TAGGED: Final = msgspec.json.Decoder(_Tagged)


def created_task(result: Raw, profile: Profile | None, *, asked: bool) -> Raw | None:
    """The task a ``tools/call`` answer created, as its JSON; None when the answer is
    the tool's result.

    On 2025-11-25 only an answer to a request that asked for a task (``asked``) can be
    one: ``CreateTaskResult`` has a ``task`` object (a server that ignored
    ``params.task`` answers with the result itself). With the 2026-07-28 extension the
    answer is the task when its ``resultType`` is ``"task"``. An answer that is not a
    JSON object is left for the result decoder to refuse.
    """
    if profile is None:
        return None
    try:
        if profile.task_extension:
            tagged = _TAGGED.decode(result)
            return result if tagged.result_type == "task" else None
        if profile.tasks and asked:
            created = _CREATED.decode(result)
            return created.task if bytes(memoryview(created.task)[:1]) == b"{" else None
    except msgspec.DecodeError:
        return None
    return None
