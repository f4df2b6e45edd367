"""Tasks on a :class:`~mcpl_host.Connection`: a tool call that the server runs in the
background, followed to its end (the wire rules: :mod:`mcpl_host.protocol.tasks`).

``call_tool`` goes through :meth:`TaskCalls._tool_call_raw`, which decides whether the
call is made as a task and, when the server made one, follows it and returns the final
result's JSON, so that the caller gets what a direct call would have returned:

- 2025-11-25: a tool whose ``execution.taskSupport`` is ``"required"`` (or
  ``"optional"`` and the caller asked, ``task=True``) on a server whose capabilities
  have ``tasks.requests.tools.call`` is called with ``params.task``; the
  ``CreateTaskResult`` is polled with ``tasks/get``; once the task ends, or needs input
  (``input_required``: the server's requests, elicitation say, then reach the hooks
  while ``tasks/result`` waits), ``tasks/result`` gives the result or the error.
- 2026-07-28: the host names the extension in every request; any ``tools/call`` answer
  with ``resultType: "task"`` is polled with ``tasks/get``, whose last answer inlines the
  result or the error; the input a task asks for on the way (``inputRequests``) is
  answered by the hooks, each request once, with ``tasks/update``.

Every wait is bounded by the call's timeout (a task that never ends fails the call with
:class:`~mcpl_host.RequestTimeout`); a timeout or the caller's cancellation sends
``tasks/cancel`` (in the background, bounded). Progress reaches the caller's
``on_progress`` for as long as the task runs, under a token of the host's own (a
request's own token dies with its answer, and a task outlives it).

The explicit calls (:meth:`TaskCalls.start_task`, :meth:`~TaskCalls.get_task`,
:meth:`~TaskCalls.watch_task`, :meth:`~TaskCalls.task_result`,
:meth:`~TaskCalls.list_tasks`, :meth:`~TaskCalls.cancel_task`) are methods of the
connection too.
"""

from __future__ import annotations

import abc
import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import msgspec
import trio
from msgspec import Raw

from .._log import get_logger
from ..driver.foreign import in_trio
from ..driver.pending import ProgressCallback
from ..driver.responder import Handler, Responder, ServerRequest
from ..protocol.errors import (
    ConnectionClosed,
    LimitExceeded,
    McplHostError,
    ProtocolError,
    RequestTimeout,
    request_error,
)
from ..protocol.handshake import describe_error_member
from ..protocol.messages import ErrorAnswer, ResultAnswer
from ..protocol.profiles import Profile
from ..protocol.redact import Redactor
from ..protocol.tasks import (
    MAX_INPUT_REQUESTS,
    STATUS_NOTIFICATIONS,
    created_task,
    poll_delay,
    task_param,
)
from .calls import ClientCalls
from .decode import ResultDecodeError
from .pagination import DEFAULT_MAX_PAGES, collect_raw
from .task_types import Task, TaskError, decode_task
from .types import CallToolResult

__all__ = ["StatusCallback", "TaskBoard", "TaskCalls"]

_log = get_logger("mcpl_host.client")

StatusCallback = Callable[[Task], None]
"""``on_status(task)``: called with each new state of a task being watched."""

# tasks/cancel is sent for a caller who stopped waiting: it must not hold anything up.
_CANCEL_BOUND: Final = 5.0


class _Watch:
    """One follower of one task: the newest state the server pushed, if any."""

    __slots__ = ("changed", "pushed")

    def __init__(self) -> None:
        self.pushed: Task | None = None
        self.changed = trio.Event()

    def take(self) -> Task | None:
        pushed, self.pushed = self.pushed, None
        if self.changed.is_set():
            self.changed = trio.Event()
        return pushed


class TaskBoard:
    """The tasks being followed now, and the states the server pushes for them
    (``notifications/tasks/status``, the extension's ``notifications/tasks``). Only a
    followed task's newest state is kept, once per follower: a server pushing states of
    tasks nobody follows makes the host hold nothing."""

    def __init__(self, *, server: str, redactor: Redactor) -> None:
        self._watches: dict[str, list[_Watch]] = {}
        self._redactor = redactor
        self._log = get_logger("mcpl_host.connection").bind(server=server)

    @contextlib.contextmanager
    def watching(self, task_id: str) -> Iterator[_Watch]:
        watch = _Watch()
        self._watches.setdefault(task_id, []).append(watch)
        try:
            yield watch
        finally:
            watches = self._watches[task_id]
            watches.remove(watch)
            if not watches:
                del self._watches[task_id]

    def takes(self, method: str) -> bool:
        return method in STATUS_NOTIFICATIONS

    def push(self, method: str, params: Raw | None) -> None:
        """A status notification: handed to the followers of its task."""
        if not self._watches:
            return
        try:
            task = decode_task(params or Raw(b"{}"), extension=method == "notifications/tasks")
        except (msgspec.DecodeError, RecursionError) as exc:
            self._log.info(
                "notification ignored",
                method=method,
                reason=self._redactor.log_value(f"malformed params: {exc}"),
            )
            return
        for watch in self._watches.get(task.task_id, ()):
            watch.pushed = task
            watch.changed.set()


class _Clock:
    """The deadline of one task call. Progress may push it back (with
    ``progress_resets_timeout``), never past the hard maximum."""

    __slots__ = ("deadline", "hard", "timeout")

    def __init__(self, timeout: float, resets: bool = False, max_timeout: float | None = None):
        now = trio.current_time()
        self.timeout = timeout
        self.deadline = now + timeout
        hard = max_timeout if max_timeout is not None else timeout * 10
        self.hard: float | None = now + hard if resets else None

    def progressed(self) -> None:
        if self.hard is not None:
            self.deadline = min(trio.current_time() + self.timeout, self.hard)

    def left(self) -> float:
        return self.deadline - trio.current_time()


class _Expired(Exception):
    """The call's timeout passed while its task ran (turned into RequestTimeout)."""


class TaskCalls(ClientCalls):
    """The typed calls with tasks: ``call_tool`` follows the tasks it makes, and the
    task calls themselves. Each raises what :meth:`Connection.request
    <mcpl_host.Connection.request>` raises, a :class:`~mcpl_host.ProtocolError` for an
    answer that does not fit, and :class:`~mcpl_host.client.TaskError` where said."""

    request_timeout: float
    _tasks: TaskBoard
    _handlers: dict[str, Handler]  # the server-request handlers (the hooks among them)

    @property
    @abc.abstractmethod
    def profile(self) -> Profile | None: ...

    @property
    @abc.abstractmethod
    def server_capabilities(self) -> dict[str, Any]: ...

    @abc.abstractmethod
    def _listening_for_progress(
        self, callback: ProgressCallback
    ) -> contextlib.AbstractContextManager[str]: ...

    @abc.abstractmethod
    def _spawn(self, fn: Any, *args: Any) -> None: ...

    # -- the explicit calls --------------------------------------------------------------

    async def start_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        ttl: int | None = None,
        timeout: float | None = None,
        validate_output: bool = True,
    ) -> Task | CallToolResult:
        """Call tool ``name`` as a task and return the task as created, without waiting
        for it; follow it with :meth:`watch_task`, :meth:`get_task`,
        :meth:`task_result`, :meth:`cancel_task`.

        A server may answer with the result at once (one that ignores ``params.task`` on
        2025-11-25; on 2026-07-28 the server always decides): that result is returned,
        checked against the tool's ``outputSchema`` as :meth:`call_tool
        <mcpl_host.client.calls.ClientCalls.call_tool>` checks it.

        2025-11-25: ``ttl`` (milliseconds) asks the server to keep the task that long.
        Raises :class:`~mcpl_host.client.TaskError`, with nothing sent, when the
        server's capabilities lack ``tasks.requests.tools.call`` or the tool's
        ``execution.taskSupport`` is ``"forbidden"`` or absent; ``ValueError`` for a
        negative ``ttl``. 2026-07-28: ``ttl`` is not sent (the extension has none).
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        profile = self._task_profile()
        asked = not profile.task_extension
        if asked:
            params["task"] = task_param(ttl)
            support = await self._task_support(name, timeout)
            if not self._server_runs_tool_tasks() or support not in ("optional", "required"):
                raise TaskError(
                    f"tool {self.redactor.log_value(name, 64)!r} cannot be called as a task "
                    f"(the server's tasks.requests.tools.call: "
                    f"{'present' if self._server_runs_tool_tasks() else 'absent'}, "
                    f"the tool's taskSupport: {self.redactor.log_value(str(support), 32)})",
                    server=self.name,
                )
        raw = await self._request_raw("tools/call", params, timeout=timeout)
        created = created_task(raw, profile, asked=asked)
        if created is not None:
            return self._task(created)
        result = self._tool_result(raw)
        if validate_output and not result.is_error:
            await self._check_output(name, result, timeout)
        return result

    async def get_task(self, task_id: str, *, timeout: float | None = None) -> Task:
        """The task's state now (``tasks/get``)."""
        self._task_profile()
        raw = await self._request_raw("tasks/get", {"taskId": task_id}, timeout=timeout)
        return self._task(raw)

    async def watch_task(
        self,
        task_id: str,
        *,
        on_status: StatusCallback | None = None,
        timeout: float | None = None,
    ) -> Task:
        """Follow a task until it ends; return its last state. ``on_status(task)`` is
        called with the first state and with each change after, whether a poll
        (``tasks/get``, at the server's ``pollInterval`` within the host's floor and cap)
        or the server's status notification brought it.

        A task that needs input keeps being watched (on 2025-11-25 the input flows
        while someone waits in :meth:`task_result`). Raises
        :class:`~mcpl_host.RequestTimeout` when it has not ended within ``timeout``
        (default: the connection's ``request_timeout``); the task is left running.
        """
        limit = self.request_timeout if timeout is None else timeout
        clock = _Clock(limit)
        try:
            first = await self.get_task(task_id, timeout=clock.left())
            return await self._follow(first, clock, stop=_ended, on_status=on_status)
        except (_Expired, RequestTimeout):
            raise RequestTimeout(
                f"task {self.redactor.log_value(task_id, 64)!r} did not end within {limit:g} s",
                method="tasks/get",
                timeout=limit,
                server=self.name,
            ) from None

    async def task_result(
        self,
        task_id: str,
        *,
        tool: str | None = None,
        validate_output: bool = True,
        timeout: float | None = None,
    ) -> CallToolResult:
        """The result of a tool-call task, waiting (within ``timeout``) for it to end.

        2025-11-25: ``tasks/result``, which the server answers once the task has ended;
        while it waits, the server's requests for the task (elicitation, sampling)
        reach the hooks. The task's error is raised as a :class:`~mcpl_host.RequestError`.
        2026-07-28: ``tasks/get`` until the task ends, the input it asks for on the way
        answered by the hooks (``tasks/update``) as ``call_tool`` answers it; a failed
        task's error is raised as a :class:`~mcpl_host.RequestError`, a cancelled one
        (or one asking what no hook serves) as a :class:`~mcpl_host.client.TaskError`.
        The task is left running when this times out or fails.

        With ``tool`` (the tool's name) the result is checked against the tool's
        ``outputSchema`` as :meth:`call_tool` checks it.
        """
        profile = self._task_profile()
        limit = self.request_timeout if timeout is None else timeout
        if profile.task_extension:
            clock = _Clock(limit)
            try:
                first = await self.get_task(task_id, timeout=limit)
                raw = self._inline_outcome(await self._through_inputs(first, clock))
            except _Expired:
                raise RequestTimeout(
                    f"task {self.redactor.log_value(task_id, 64)!r} did not end within {limit:g} s",
                    method="tasks/get",
                    timeout=limit,
                    server=self.name,
                ) from None
        else:
            raw = await self._request_raw(
                "tasks/result", {"taskId": task_id}, timeout=limit, rebind=True
            )
        result = self._tool_result(raw)
        if tool is not None and validate_output and not result.is_error:
            await self._check_output(tool, result, timeout)
        return result

    async def list_tasks(
        self, *, max_pages: int = DEFAULT_MAX_PAGES, timeout: float | None = None
    ) -> list[Task]:
        """Every task the server lists (``tasks/list``, every page, within the
        connection's ``max_list_items`` and ``max_list_bytes``; never cached).

        Raises :class:`~mcpl_host.client.TaskError`, with nothing sent, on 2026-07-28
        (the extension has no ``tasks/list``) and when the server's capabilities lack
        ``tasks.list``; :class:`~mcpl_host.LimitExceeded` past the list bounds."""
        profile = self._task_profile()
        tasks = self.server_capabilities.get("tasks")
        if profile.task_extension or not (isinstance(tasks, dict) and "list" in tasks):
            raise TaskError("this server lists no tasks (no tasks.list)", server=self.name)

        async def fetch(params: Any) -> Raw:
            return await self._request_raw("tasks/list", params, timeout=timeout)

        raws = await collect_raw(
            fetch,
            "tasks/list",
            "tasks",
            max_pages=max_pages,
            limits=self.list_limits,
            server=self.name,
            safe=self.redactor.log_value,
        )
        return [self._task(raw, method="tasks/list") for raw in raws]

    async def cancel_task(self, task_id: str, *, timeout: float | None = None) -> Task | None:
        """Ask the server to cancel a task (``tasks/cancel``). Returns the task's state
        as the server answered it (2025-11-25), or None (2026-07-28 acknowledges with
        nothing). A task that has already ended is the server's -32602, a
        :class:`~mcpl_host.RequestError`. Cancelling is cooperative: the task may still
        end otherwise."""
        profile = self._task_profile()
        raw = await self._request_raw("tasks/cancel", {"taskId": task_id}, timeout=timeout)
        return None if profile.task_extension else self._task(raw, method="tasks/cancel")

    # -- the transparent path of call_tool ---------------------------------------------

    async def call_tool_raw(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        task: bool | None = None,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        progress_resets_timeout: bool = False,
        max_timeout: float | None = None,
        rebind: bool | None = None,
    ) -> Raw:
        """:meth:`call_tool <mcpl_host.client.calls.ClientCalls.call_tool>` without
        decoding or checking the result: its JSON as the server sent it (a task
        followed to its end the same way), for a caller that passes results on whole
        (``mcpl-host call`` prints it). Raises what ``call_tool`` raises, bar the
        decoding and ``outputSchema`` errors."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return await self._tool_call_raw(
            params,
            task=task,
            timeout=timeout,
            on_progress=on_progress,
            progress_resets_timeout=progress_resets_timeout,
            max_timeout=max_timeout,
            rebind=rebind,
        )

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
        """``tools/call``, as a task when it should be one (module docstring); the JSON
        of the tool's result either way. Raises what ``call_tool`` raises."""
        name: str = params["name"]
        profile = self.profile
        limit = self.request_timeout if timeout is None else timeout
        asked = False
        if profile is not None and profile.tasks and self._server_runs_tool_tasks():
            asked = task is not False and await self._wants_task(name, task, limit)
        elif task is True and not (profile is not None and profile.task_extension):
            # (2026-07-28: the server decides, and the client has no way to ask.)
            raise TaskError(
                "this server runs no tool calls as tasks (no tasks.requests.tools.call)",
                server=self.name,
            )
        if not asked:
            clock = _Clock(limit)
            # The direct call (through the input rounds, 2026-07-28's MRTR).
            raw = await super()._tool_call_raw(
                params,
                task=None,
                timeout=timeout,
                on_progress=on_progress,
                progress_resets_timeout=progress_resets_timeout,
                max_timeout=max_timeout,
                rebind=rebind,
            )
            created = created_task(raw, self.profile, asked=False)
            if created is None:
                return raw
            # 2026-07-28: the server chose to run it as a task (the extension carries no
            # progress for tasks).
            return await self._see_through_in_trio(name, self._task(created), clock, limit)
        clock = _Clock(limit, progress_resets_timeout, max_timeout)

        def progressed(progress: float, total: float | None, message: str | None) -> None:
            clock.progressed()
            if on_progress is not None:
                on_progress(progress, total, message)

        listening: contextlib.AbstractContextManager[str | None] = (
            self._listening_for_progress(progressed)
            if on_progress is not None
            else contextlib.nullcontext()
        )
        with listening as token:
            sent = {**params, "task": task_param(None)}
            if token is not None:
                meta = params.get("_meta")
                sent["_meta"] = {**(meta if isinstance(meta, dict) else {}), "progressToken": token}
            try:
                raw = await self._request_raw(
                    "tools/call", sent, timeout=max(clock.left(), 0.0), rebind=rebind
                )
            except RequestTimeout:
                raise self._timed_out(name, None, limit) from None
            created = created_task(raw, self.profile, asked=True)
            if created is None:
                return raw  # the server ran it directly after all
            return await self._see_through_in_trio(name, self._task(created), clock, limit)

    async def _see_through_in_trio(self, tool: str, task: Task, clock: _Clock, limit: float) -> Raw:
        """:meth:`_see_through` in a trio task: following a task polls, sleeps and
        answers input under cancel scopes (a call awaited from asyncio runs here up to
        this point without one: mcpl_host.driver.foreign)."""
        return await in_trio(functools.partial(self._see_through, tool, task, clock, limit))

    async def _see_through(self, tool: str, task: Task, clock: _Clock, limit: float) -> Raw:
        """Follow a task the call created to its result's JSON. It is cancelled when the
        caller stops waiting (cancelled, timed out) or the host cannot go on with it (an
        answer it cannot read, input it cannot give); not when its transport is gone."""
        extension = self._task_profile().task_extension
        try:
            if extension:
                last = await self._through_inputs(task, clock)
            else:
                last = await self._follow(task, clock, stop=_ended_or_asking, on_status=None)
        except ConnectionClosed:
            raise
        except (_Expired, RequestTimeout):
            self._cancel_soon(task.task_id, "timeout")
            raise self._timed_out(tool, task.task_id, limit) from None
        except BaseException:
            self._cancel_soon(task.task_id, "the host cannot go on with it")
            raise
        if extension:
            return self._inline_outcome(last)
        # Ended, or needs input: the server's requests arrive while tasks/result waits.
        try:
            return await self._request_raw(
                "tasks/result",
                {"taskId": task.task_id},
                timeout=max(clock.left(), 0.0),
                rebind=True,  # it only reads the task's outcome: safe to ask again
            )
        except RequestTimeout:
            self._cancel_soon(task.task_id, "timeout")
            raise self._timed_out(tool, task.task_id, limit) from None
        except trio.Cancelled:
            self._cancel_soon(task.task_id, "cancelled by the caller")
            raise

    async def _through_inputs(self, task: Task, clock: _Clock) -> Task:
        """2026-07-28: follow the task to its end, answering each input request it
        makes (``inputRequests``) once, through the hooks, with ``tasks/update``."""
        answered: set[str] = set()

        def stop(state: Task) -> bool:
            asks = state.input_requests if state.status == "input_required" else None
            return state.terminal or any(key not in answered for key in asks or ())

        last = task
        while True:
            last = await self._follow(last, clock, stop=stop, on_status=None)
            if last.terminal:
                return last
            responses = await self._answer_inputs(last, answered, clock)
            await self._request_raw(
                "tasks/update",
                {"taskId": last.task_id, "inputResponses": responses},
                timeout=max(clock.left(), 0.0),
            )

    async def _answer_inputs(self, task: Task, answered: set[str], clock: _Clock) -> dict[str, Any]:
        """The hooks' answers to the input requests not answered yet, one at a time
        (each is a question to the user or the model: asked in turn, not all at once)."""
        fresh = {k: v for k, v in (task.input_requests or {}).items() if k not in answered}
        if len(answered) + len(fresh) > MAX_INPUT_REQUESTS:
            raise LimitExceeded(
                f"task {self.redactor.log_value(task.task_id, 64)!r} asked for more than "
                f"{MAX_INPUT_REQUESTS} inputs",
                limit="MAX_INPUT_REQUESTS",
                value=MAX_INPUT_REQUESTS,
                server=self.name,
            )
        responses: dict[str, Any] = {}
        for key, entry in fresh.items():
            with trio.move_on_after(max(clock.left(), 0.0)):
                responses[key] = await self._answer_input(task, key, entry)
                answered.add(key)
                continue
            raise _Expired
        return responses

    async def _answer_input(self, task: Task, key: str, entry: Any) -> Any:
        """One input request answered by its hook, as if the server had sent it as a
        request with the id ``key``."""
        method = entry.get("method") if isinstance(entry, dict) else None
        params = entry.get("params") if isinstance(entry, dict) else None
        profile = self.profile
        handler = (
            self._handlers.get(method)
            if isinstance(method, str) and profile is not None and method in profile.input_requests
            else None
        )
        if handler is None or not isinstance(method, str):
            shown = self.redactor.log_value(str(method), 64)
            raise TaskError(
                f"task {self.redactor.log_value(task.task_id, 64)!r} asks for {shown}, which "
                "this host does not answer (no hook for it)",
                task=task,
                server=self.name,
            )
        captured = _Captured()
        responder = Responder(captured, key, method, redactor=self.redactor)
        body = Raw(msgspec.json.encode(params if isinstance(params, dict) else {}))
        try:
            value = await handler(ServerRequest(method, key, body, responder, server=self.name))
        except msgspec.ValidationError as exc:
            raise ProtocolError(
                f"input request {self.redactor.log_value(key, 64)!r} ({method}) does not fit: "
                f"{self.redactor.log_value(str(exc))}",
                server=self.name,
            ) from None
        answer = captured.answer
        if isinstance(answer, ErrorAnswer):  # a raw handler that answered with an error
            raise request_error(answer.error.code, answer.error.message, server=self.name)
        return answer.result if isinstance(answer, ResultAnswer) else value

    async def _follow(
        self,
        task: Task,
        clock: _Clock,
        *,
        stop: Callable[[Task], bool],
        on_status: StatusCallback | None,
    ) -> Task:
        """Poll (and listen) until ``stop(state)``.

        Raises ``_Expired`` when the clock runs out first."""
        last = task
        if on_status is not None:
            on_status(last)
        warned = False
        with self._tasks.watching(task.task_id) as watch:
            while not stop(last):
                if not last.known_status and not warned:
                    warned = True
                    _log.info(
                        "task status not known, taken as running",
                        server=self.name,
                        task=self.redactor.log_value(last.task_id, 64),
                        status=self.redactor.log_value(last.status, 32),
                    )
                if clock.left() <= 0:
                    raise _Expired
                with trio.move_on_after(min(poll_delay(last.poll_interval), clock.left())):
                    await watch.changed.wait()
                pushed = watch.take()
                if pushed is None:
                    if clock.left() <= 0:
                        raise _Expired
                    pushed = await self.get_task(task.task_id, timeout=clock.left())
                if on_status is not None and _changed(pushed, last):
                    on_status(pushed)
                last = pushed
        return last

    def _inline_outcome(self, task: Task) -> Raw:
        """What a 2026-07-28 task ended with: its result's JSON, or its error raised."""
        if task.status == "completed":
            if not task.result_json:
                raise ResultDecodeError(
                    "a completed task came without its result",
                    raw=task.raw or Raw(b"{}"),
                    server=self.name,
                )
            return task.result_json
        if task.status == "failed":
            if task.error is None:
                raise request_error(None, "the task failed and gave no error", server=self.name)
            # Read as the error answer of a direct call is read (the same rule).
            code, message, data = describe_error_member(
                Raw(msgspec.json.encode(task.error)), self.redactor
            )
            raise request_error(code, message, data, server=self.name)
        raise TaskError(
            f"task {self.redactor.log_value(task.task_id, 64)!r} was cancelled",
            task=task,
            server=self.name,
        )

    def _cancel_soon(self, task_id: str, reason: str) -> None:
        # In the connection's nursery: the caller may be cancelled already, and must not
        # wait for the answer.
        self._spawn(self._send_cancel, task_id, reason)

    async def _send_cancel(self, task_id: str, reason: str) -> None:
        with contextlib.suppress(McplHostError):
            await self._request_raw("tasks/cancel", {"taskId": task_id}, timeout=_CANCEL_BOUND)
            _log.debug(
                "task cancelled",
                server=self.name,
                task=self.redactor.log_value(task_id, 64),
                reason=reason,
            )

    # -- shared -----------------------------------------------------------------------

    async def _wants_task(self, name: str, task: bool | None, timeout: float) -> bool:
        support = await self._task_support(name, timeout)
        if support == "required":
            return True
        if support == "optional":
            return task is True
        if task is True:
            raise TaskError(
                f"tool {self.redactor.log_value(name, 64)!r} cannot be called as a task "
                f"(its taskSupport: {self.redactor.log_value(str(support), 32)})",
                server=self.name,
            )
        return False

    async def _task_support(self, name: str, timeout: float | None) -> object:
        """The tool's ``execution.taskSupport`` from the (cached) tool list; None when
        the tool or the member is absent, or the list could not be read."""
        try:
            tools = await self.list_tools(timeout=timeout)
        except (ProtocolError, RequestTimeout, ConnectionClosed) as exc:
            _log.warning(
                "tool list not read: the call is made directly",
                server=self.name,
                tool=self.redactor.log_value(name, 64),
                reason=type(exc).__name__,
            )
            return None
        for tool in tools:
            if tool.name == name:
                execution = tool.execution
                return execution.get("taskSupport") if isinstance(execution, dict) else None
        return None

    def _server_runs_tool_tasks(self) -> bool:
        tasks = self.server_capabilities.get("tasks")
        requests = tasks.get("requests") if isinstance(tasks, dict) else None
        tools = requests.get("tools") if isinstance(requests, dict) else None
        return isinstance(tools, dict) and "call" in tools

    def _task_profile(self) -> Profile:
        profile = self.profile
        if profile is None or not (profile.tasks or profile.task_extension):
            raise TaskError(
                f"no tasks on {profile.revision if profile else 'this connection now'}",
                server=self.name,
            )
        return profile

    def _task(self, raw: Raw, method: str = "tasks/get") -> Task:
        profile = self.profile
        try:
            return decode_task(raw, extension=profile is not None and profile.task_extension)
        except (msgspec.DecodeError, RecursionError) as exc:
            raise ResultDecodeError(
                f"the task in the answer to {method!r} does not fit: "
                f"{self.redactor.log_value(str(exc))}",
                raw=raw,
                server=self.name,
            ) from None

    def _timed_out(self, tool: str, task_id: str | None, limit: float) -> RequestTimeout:
        what = "" if task_id is None else f" (task {self.redactor.log_value(task_id, 64)!r})"
        return RequestTimeout(
            f"tool {self.redactor.log_value(tool, 64)!r}{what} did not finish within {limit:g} s",
            method="tools/call",
            timeout=limit,
            server=self.name,
        )


def _ended(state: Task) -> bool:
    return state.terminal


def _ended_or_asking(state: Task) -> bool:
    return state.terminal or state.status == "input_required"


class _Captured:
    """Where a hook's answer goes when the request came inside a task's state rather
    than on the wire: kept for the ``tasks/update`` (a raw handler may answer through
    its responder instead of returning)."""

    epoch_number = 0

    def __init__(self) -> None:
        self.answer: ResultAnswer | ErrorAnswer | None = None

    async def deliver(self, answer: ResultAnswer | ErrorAnswer, responder: Responder) -> bool:  # noqa: ARG002 - AnswerSink's signature
        self.answer = answer
        return True

    def queue(self, answer: ResultAnswer | ErrorAnswer, responder: Responder) -> None:  # noqa: ARG002 - AnswerSink's signature
        self.answer = answer

    def withdraw(self, responder: Responder) -> None:
        pass


def _changed(new: Task, old: Task) -> bool:
    return (new.status, new.status_message, new.last_updated_at) != (
        old.status,
        old.status_message,
        old.last_updated_at,
    )
