"""A stdio server: a child process whose stdin and stdout carry the messages.

The child leads its own session and process group, so shutdown (DESIGN 3.10) can reach
everything it started, wrappers such as ``npx`` or ``sh -c`` and their children
included: close stdin, wait, SIGTERM the group, wait, SIGKILL the group, always reap,
then make sure no member of the group is left running. Its stderr is read to the end
by a task of its own, so a chatty child never blocks on a full pipe; every line is
redacted before anyone sees it.

The child's exit ends the stream, not only the end of its stdout: a task waits for the
exit (reaping the child at once, so it is never left a zombie), and the stream then
returns what is still readable (bounded) and its end, even when a process the child
started inherited stdout and keeps it open. The owner sees the end as from any stream
and closes the transport, which ends whatever the child left in its group. POSIX only.
"""

from __future__ import annotations

import contextlib
import errno
import math
import signal
import subprocess
from collections.abc import Callable
from typing import Final

import trio
from trio.lowlevel import FdStream

from .._log import PeerLogBudget, get_logger
from ..protocol.errors import SpawnError
from ..protocol.framing import LineDecoder, OversizedLine
from ..protocol.redact import Redactor
from ._pipes import PipeStream
from ._process_group import group_alive, reap_adopted, signal_group
from .environment import child_environment
from .targets import StdioTarget, describe

__all__ = ["StdioTransport", "kill_stdio_servers", "open_stdio"]

_log = get_logger("mcpl_host.transports")

_STDERR_CHUNK: Final = 64 * 1024
# Once every process of the group is gone the stderr pipe is at EOF; this bounds the wait
# for the reader to deliver those last lines when a member escaped the group with it.
_STDERR_DRAIN: Final = 0.5
# After SIGKILL to a leftover group, how long to wait to see it gone before giving up
# with a warning (shutdown runs shielded, so it must not wait unbounded on others).
_KILL_SETTLE: Final = 2.0
# What is still read from stdout once the server exited: what it wrote before it exited
# (at most the pipe's capacity: 64 KiB by default on Linux, 1 MiB by default at most
# for an unprivileged resize), not a flood from something it left behind.
_DRAIN_AFTER_EXIT: Final = 1024 * 1024
_POLL_FIRST: Final = 0.005
_POLL_MAX: Final = 0.05


def kill_stdio_servers() -> int:
    """SIGKILL the process group of every stdio server this process has running (spawned
    and not yet fully shut down); return how many were signalled.

    For a host that must end now (a second Ctrl-C): each server's shutdown under way, or
    its next ``aclose()``, then reaps at once instead of waiting out its graces.
    Synchronous, so a signal's handler may call it. Raises nothing.
    """
    return sum(transport.kill() for transport in list(_RUNNING))


class StdioTransport:
    """A running stdio server: its byte stream, its process and its shutdown.

    ``stream`` writes to the child's stdin and reads its stdout. Nothing else about the
    process needs touching: :meth:`aclose` ends it.
    """

    def __init__(
        self,
        process: trio.Process,
        *,
        description: str,
        redactor: Redactor,
    ) -> None:
        stdin, stdout = process.stdin, process.stdout
        if not isinstance(stdin, FdStream) or not isinstance(stdout, FdStream):
            raise TypeError("a stdio transport needs the child's stdin and stdout pipes")
        if process.stderr is None:
            raise ValueError("a stdio transport needs the child's stderr pipe")
        self.process = process
        self.pid: int = process.pid
        self.description = description
        self.stream = PipeStream(stdin, stdout)
        self._redactor = redactor
        # The child was made a session leader, so its group id is its pid.
        self._pgid = process.pid
        self._log = _log.bind(pid=process.pid, target=description)
        # The server decides how many stderr lines there are: a flood costs a few log
        # lines (every line still reaches on_stderr, the embedder's StderrLine events).
        self._stderr_budget = PeerLogBudget()
        self._stderr_log = self._stderr_budget.wrap(self._log)
        self._close_started = False
        self._closed = trio.Event()
        self._stderr_done = trio.Event()
        self._killed = False
        _RUNNING.add(self)

    @property
    def returncode(self) -> int | None:
        """The leader's exit status (negative: killed by that signal), None while running."""
        return self.process.returncode

    async def aclose(self, *, grace: float = 2.0, term_grace: float = 2.0) -> None:
        """End the server and everything it started; return once all is reaped.

        Closes stdin and waits ``grace`` seconds for the server to exit, then sends
        SIGTERM to its process group and waits ``term_grace``, then SIGKILL. Processes
        the server left in its group are then terminated the same way. The stdout and
        stderr pipes are closed last.

        Idempotent: a later or concurrent call waits for the first one to finish. The
        work runs shielded, so a cancelled caller still reaps; the cancellation is then
        delivered at the caller's next checkpoint. Raises nothing.
        """
        if self._close_started:
            await self._closed.wait()
            return
        self._close_started = True
        try:
            with trio.CancelScope(shield=True):
                await self._shut_down(_seconds(grace), _seconds(term_grace))
        finally:
            _RUNNING.discard(self)
            self._closed.set()

    def kill(self) -> bool:
        """SIGKILL the server's process group now, and make the shutdown (under way or
        to come) skip its graces; false when nothing was left to signal. Raises nothing.
        """
        self._killed = True
        # While the leader is not reaped its pid, the group's id, cannot be reused.
        if self.process.returncode is None or group_alive(self._pgid):
            return signal_group(self._pgid, signal.SIGKILL)
        return False

    async def _shut_down(self, grace: float, term_grace: float) -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await self.stream.close_send()
        how = "exited"
        if self._killed:  # killed before its shutdown began: no graces
            signal_group(self._pgid, signal.SIGKILL)
            await self.process.wait()
        elif not await self._leader_exited_within(grace):
            how = "terminated"
            self._log.debug("stdio server ignored end of input; sending SIGTERM")
            signal_group(self._pgid, signal.SIGTERM)
            if not await self._leader_exited_within(term_grace):
                how = "killed"
                self._log.debug("stdio server ignored SIGTERM; sending SIGKILL")
                signal_group(self._pgid, signal.SIGKILL)
                await self.process.wait()
        if self._killed:  # by kill(), before or during the graces
            how = "killed"
        await self._sweep_group(term_grace)
        with trio.move_on_after(_STDERR_DRAIN):
            await self._stderr_done.wait()
        for pipe in (self.stream, self.process.stderr):
            if pipe is not None:
                await _close_quietly(pipe)
        self._log.info("stdio server closed", how=how, returncode=self.process.returncode)

    async def _leader_exited_within(self, seconds: float) -> bool:
        with trio.move_on_after(seconds):
            await self.process.wait()
        return self.process.returncode is not None

    async def _sweep_group(self, term_grace: float) -> None:
        """Terminate what the (reaped) leader left running in its group."""
        reap_adopted(self._pgid)
        if not group_alive(self._pgid):
            return
        self._log.info("stdio server left processes running; terminating its process group")
        if not self._killed:
            signal_group(self._pgid, signal.SIGTERM)
            if await self._group_gone_within(term_grace):
                return
        signal_group(self._pgid, signal.SIGKILL)
        if not await self._group_gone_within(_KILL_SETTLE):
            self._log.warning("processes of the stdio server's group survived SIGKILL")

    async def _group_gone_within(self, seconds: float) -> bool:
        interval = _POLL_FIRST
        with trio.move_on_after(seconds):
            while True:
                reap_adopted(self._pgid)
                if not group_alive(self._pgid):
                    return True
                await trio.sleep(interval)
                interval = min(interval * 2, _POLL_MAX)
        reap_adopted(self._pgid)
        return not group_alive(self._pgid)

    async def _watch_exit(self) -> None:
        """End the stream when the server exits (reaping it then), whoever else still
        holds its stdout."""
        returncode = await self.process.wait()
        if not self._close_started:
            self._log.info("stdio server exited", returncode=returncode)
        self.stream.end_after_exit(_DRAIN_AFTER_EXIT)

    async def _read_stderr(self, decoder: LineDecoder, on_stderr: Callable[[str], None]) -> None:
        """Read the child's stderr to its end, handing each line on, redacted."""
        stderr = self.process.stderr
        assert stderr is not None
        try:
            while True:
                try:
                    chunk = await stderr.receive_some(_STDERR_CHUNK)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                    # Closed by aclose(), or the pipe failed: either way nothing more comes.
                    self._log.debug("stopped reading stderr", error=type(exc).__name__)
                    break
                if not chunk:
                    break
                for item in decoder.feed(bytes(chunk)):
                    self._deliver_stderr(item, on_stderr)
            for item in decoder.close():
                self._deliver_stderr(item, on_stderr)
        finally:
            self._stderr_budget.flush()
            self._stderr_done.set()

    def _deliver_stderr(
        self, item: bytes | OversizedLine, on_stderr: Callable[[str], None]
    ) -> None:
        if isinstance(item, OversizedLine):
            raw = f"[stderr line of {item.size} bytes dropped]"
        else:
            raw = item.decode("utf-8", errors="replace")
        self._stderr_log.info("server stderr", line=self._redactor.log_value(raw))
        try:
            on_stderr(self._redactor.redact(raw))
        except Exception as exc:
            # The embedder's callback must not stop the reading: a child whose stderr is
            # not drained blocks. No traceback: renderers that show locals would print
            # the raw line.
            self._stderr_log.warning(
                "stderr callback failed",
                error=type(exc).__name__,
                detail=self._redactor.log_value(str(exc)),
            )


async def open_stdio(
    target: StdioTarget,
    *,
    nursery: trio.Nursery,
    on_stderr: Callable[[str], None],
    redactor: Redactor,
    max_stderr_line: int = 64 * 1024,
) -> StdioTransport:
    """Spawn ``target`` (never through a shell) and return its transport.

    The child gets :func:`child_environment` of the target's env and leads a new
    session. A task in ``nursery`` reads its stderr until EOF, logging each line and
    passing it, redacted with ``redactor``, to ``on_stderr`` (a line over
    ``max_stderr_line`` bytes becomes a short note); another waits for its exit, reaps
    it and ends the stream (see the module's docstring). The caller owns the returned
    transport and must :meth:`~StdioTransport.aclose` it.

    Raises:
        SpawnError: the program could not be started (missing, not executable, a bad
            working directory); the message is redacted and names the program.
        ValueError: ``max_stderr_line`` is not positive.
    """
    decoder = LineDecoder(max_message_bytes=max_stderr_line)
    env = child_environment(target.env, inherit=target.inherit_env)
    try:
        process = await trio.lowlevel.open_process(
            list(target.argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=target.cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        # Not chained: the OS error's text repeats paths and arguments unredacted.
        permanent = exc.errno in _PERMANENT_SPAWN_ERRORS
        raise SpawnError(_spawn_failure(target, exc, redactor), permanent=permanent) from None
    # No checkpoint from here until the reader is started: a cancellation arriving now
    # must not leave a child that nobody owns.
    transport = StdioTransport(process, description=describe(target), redactor=redactor)
    try:
        nursery.start_soon(transport._read_stderr, decoder, on_stderr)
        nursery.start_soon(transport._watch_exit)
    except BaseException:
        transport._stderr_done.set()  # no reader will ever drain it
        await transport.aclose(grace=0, term_grace=0)
        raise
    transport._log.info("stdio server started")
    return transport


# The OS errors of a spawn that the same spawn cannot escape by trying again: the path,
# the file or the directory is wrong, and stays wrong until someone changes the
# configuration or installs the program. ENOTDIR (a path component is a file), ELOOP and
# ENAMETOOLONG are wrong paths too; ENOEXEC is a file the kernel cannot run (no #! line,
# another architecture); EPERM a mount or a policy that forbids running it. Others
# (EAGAIN, EMFILE, ENOMEM, ETXTBSY: a file being written) may pass: retried.
_PERMANENT_SPAWN_ERRORS: Final = frozenset(
    {
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EACCES,
        errno.EPERM,
        errno.ENOEXEC,
        errno.ELOOP,
        errno.ENAMETOOLONG,
    }
)

# Every transport whose shutdown has not finished, for kill_stdio_servers.
_RUNNING: Final[set[StdioTransport]] = set()


def _spawn_failure(target: StdioTarget, exc: OSError, redactor: Redactor) -> str:
    program = redactor.log_value(target.argv[0], 120)
    reason = exc.strerror or type(exc).__name__
    code = errno.errorcode.get(exc.errno or 0)
    if code:
        reason = f"{reason} ({code})"
    if target.cwd is not None and exc.filename == target.cwd:
        where = redactor.log_value(target.cwd, 120)
        return f"cannot start {program!r}: working directory {where!r}: {reason}"
    return f"cannot start {program!r}: {reason}"


async def _close_quietly(resource: trio.abc.AsyncResource) -> None:
    # Already broken or closed: releasing it is all we wanted.
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        await resource.aclose()


def _seconds(value: float) -> float:
    return value if value >= 0 and not math.isnan(value) else 0.0
