"""Stdio transport with real child processes: bytes, stderr, and the DESIGN 3.10 ladder."""

from __future__ import annotations

import errno
import os
import shlex
import signal
import sys
import time
from functools import partial
from pathlib import Path

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host.protocol.errors import SpawnError
from mcpl_host.protocol.redact import REDACTION_MARK, Redactor
from mcpl_host.transports import open_transport
from mcpl_host.transports import stdio as stdio_module
from mcpl_host.transports.stdio import StdioTransport, kill_stdio_servers, open_stdio
from mcpl_host.transports.targets import StdioTarget, redactor_for

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups are POSIX")

CANARY = "canary-93be41d7f0"
GRACE = 0.2

ECHO = """
import sys
for line in sys.stdin.buffer:
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
"""
# Ignores end of input and SIGTERM; says so on stdout once the handler is in place.
STUBBORN = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdout.write("ready\\n"); sys.stdout.flush()
while True:
    time.sleep(1)
"""
# Ignores end of input only.
SLEEPER = """
import sys, time
sys.stdout.write("ready\\n"); sys.stdout.flush()
time.sleep(60)
"""


def python(code: str, **kwargs: object) -> StdioTarget:
    return StdioTarget.of([sys.executable, "-c", code], **kwargs)  # type: ignore[arg-type]


def proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgrp) of ``pid`` from /proc, or None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[1]), int(fields[2])


def group_members(pgid: int) -> list[tuple[int, str, int]]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := proc_stat(int(entry))) and stat[2] == pgid:
            members.append((int(entry), stat[0], stat[1]))
    return members


def our_zombies() -> list[int]:
    me = os.getpid()
    return [
        int(e)
        for e in os.listdir("/proc")
        if e.isdigit() and (s := proc_stat(int(e))) and s[1] == me and s[0] == "Z"
    ]


def assert_group_gone(pgid: int) -> None:
    """Nothing of the group runs; at most zombies that init has yet to collect."""
    members = group_members(pgid)
    assert all(state == "Z" and ppid != os.getpid() for _, state, ppid in members), members
    if not members:
        with pytest.raises(ProcessLookupError):
            os.killpg(pgid, 0)
    assert our_zombies() == []


async def read_lines(stream: trio.abc.Stream, count: int) -> list[bytes]:
    data = b""
    while data.count(b"\n") < count:
        chunk = await stream.receive_some()
        assert chunk, f"EOF after {data!r}"
        data += chunk
    return data.split(b"\n")[:count]


async def spawn(
    nursery: trio.Nursery, target: StdioTarget, lines: list[str] | None = None, **kwargs: object
) -> StdioTransport:
    sink = lines if lines is not None else []
    return await open_stdio(
        target,
        nursery=nursery,
        on_stderr=sink.append,
        redactor=redactor_for(target),
        **kwargs,  # type: ignore[arg-type]
    )


async def test_bytes_round_trip_and_clean_exit_on_end_of_input() -> None:
    with trio.fail_after(10), capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, python(ECHO))
            assert transport.pid == transport.process.pid
            assert transport.description == "stdio:" + Path(sys.executable).name + " (+2 args)"
            await transport.stream.send_all(b'{"jsonrpc":"2.0","method":"ping"}\n')
            await transport.stream.send_all(b"second\n")
            assert await read_lines(transport.stream, 2) == [
                b'{"jsonrpc":"2.0","method":"ping"}',
                b"second",
            ]
            assert transport.returncode is None
            started = time.monotonic()
            await transport.aclose(grace=5, term_grace=5)
            assert time.monotonic() - started < 3
            assert transport.returncode == 0  # ended by EOF, no signal
    closed = [e for e in logs if e["event"] == "stdio server closed"]
    assert closed[0]["how"] == "exited"
    assert_group_gone(transport.pid)
    with pytest.raises(trio.ClosedResourceError):
        await transport.stream.receive_some()


async def test_stderr_lines_arrive_redacted_everywhere() -> None:
    code = (
        "import os, sys\n"
        "err = sys.stderr.buffer\n"
        "err.write(b'hello\\r\\n')\n"
        "err.write(b'key=' + os.environ['API_TOKEN'].encode() + b'\\n')\n"
        "err.write(b'bad utf8 \\xff\\n')\n"
        "err.write(b'\\x1b[31mtail')\n"
    )
    target = python(code, env={"API_TOKEN": CANARY})
    lines: list[str] = []
    with trio.fail_after(10), capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, target, lines)
            await transport.process.wait()
            await transport.aclose(grace=GRACE, term_grace=GRACE)
    assert lines[0] == "hello"
    assert lines[1] == f"key={REDACTION_MARK}"
    assert lines[2] == "bad utf8 \ufffd"
    assert lines[3] == "\x1b[31mtail"  # a last line without a newline still counts
    assert CANARY not in repr(lines)
    assert CANARY not in repr(logs)
    logged = [e["line"] for e in logs if e["event"] == "server stderr"]
    assert logged[1] == f"key={REDACTION_MARK}"
    assert logged[3] == "\\u001b[31mtail"  # escaped in logs: no forged terminal output
    assert all(e["log_level"] == "info" for e in logs if e["event"] == "server stderr")


async def test_a_stderr_flood_costs_a_few_log_lines_but_every_line_is_handed_on() -> None:
    code = "import sys\nfor n in range(1000): sys.stderr.write(f'line {n}\\n')\n"
    lines: list[str] = []
    with trio.fail_after(10), capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, python(code), lines)
            await transport.process.wait()
            await transport.aclose(grace=GRACE, term_grace=GRACE)
    assert lines == [f"line {n}" for n in range(1000)]
    assert [e["line"] for e in logs if e["event"] == "server stderr"] == [
        f"line {n}" for n in range(5)
    ]
    (count,) = [e for e in logs if e["event"] == "log events suppressed"]
    assert (count["suppressed_event"], count["suppressed"]) == ("server stderr", 995)


async def test_an_oversized_stderr_line_becomes_a_note() -> None:
    code = "import sys; sys.stderr.write('x' * 5000 + '\\nafter\\n')"
    lines: list[str] = []
    with trio.fail_after(10), capture_logs():
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, python(code), lines, max_stderr_line=100)
            await transport.process.wait()
            await transport.aclose(grace=GRACE, term_grace=GRACE)
    assert lines == ["[stderr line of 5000 bytes dropped]", "after"]


async def test_a_failing_stderr_callback_does_not_stop_the_reading() -> None:
    code = "import sys; sys.stderr.write('one\\ntwo\\nthree\\n')"
    seen: list[str] = []

    def callback(line: str) -> None:
        seen.append(line)
        raise RuntimeError(f"callback broke on {line}")

    target = python(code)
    with trio.fail_after(10), capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            transport = await open_stdio(
                target, nursery=nursery, on_stderr=callback, redactor=Redactor()
            )
            await transport.process.wait()
            await transport.aclose(grace=GRACE, term_grace=GRACE)
    assert seen == ["one", "two", "three"]
    failures = [e for e in logs if e["event"] == "stderr callback failed"]
    assert len(failures) == 3
    assert failures[0]["error"] == "RuntimeError"
    assert failures[0]["log_level"] == "warning"


async def test_a_megabyte_of_stderr_never_blocks_the_child() -> None:
    # Nobody reads stdout; the child only finishes if its stderr keeps draining.
    code = (
        "import sys\n"
        "line = 'e' * 1023 + '\\n'\n"
        "for _ in range(1024):\n"
        "    sys.stderr.write(line)\n"
        "sys.stderr.flush()\n"
        "sys.stdout.write('done\\n')\n"
    )
    lines: list[str] = []
    with trio.fail_after(10), capture_logs():
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, python(code), lines)
            assert await transport.process.wait() == 0
            assert await read_lines(transport.stream, 1) == [b"done"]
            await transport.aclose(grace=GRACE, term_grace=GRACE)
    assert len(lines) == 1024
    assert sum(len(line) + 1 for line in lines) == 1024 * 1024


async def test_a_child_ignoring_eof_gets_sigterm() -> None:
    with trio.fail_after(10), capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, python(SLEEPER))
            assert await read_lines(transport.stream, 1) == [b"ready"]
            await transport.aclose(grace=GRACE, term_grace=5)
    assert transport.returncode == -signal.SIGTERM
    assert [e["how"] for e in logs if e["event"] == "stdio server closed"] == ["terminated"]
    assert_group_gone(transport.pid)


async def test_a_child_ignoring_eof_and_sigterm_is_killed_and_reaped() -> None:
    with trio.fail_after(10), capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, python(STUBBORN))
            assert await read_lines(transport.stream, 1) == [b"ready"]
            started = time.monotonic()
            await transport.aclose(grace=GRACE, term_grace=GRACE)
            assert time.monotonic() - started < 2
    assert transport.returncode == -signal.SIGKILL
    assert [e["how"] for e in logs if e["event"] == "stdio server closed"] == ["killed"]
    assert proc_stat(transport.pid) is None  # reaped, not a zombie
    assert_group_gone(transport.pid)


def wrapper(grandchild_code: str, then: str) -> StdioTarget:
    """``sh -c`` starting a python grandchild in the background (like npx does)."""
    grandchild = f"{shlex.quote(sys.executable)} -c {shlex.quote(grandchild_code)}"
    return StdioTarget.of(["sh", "-c", f"{grandchild} & echo $!; {then}"])


async def test_a_grandchild_left_behind_by_a_clean_exit_is_killed() -> None:
    # The wrapper exits on end of input; its grandchild ignores SIGTERM and stays.
    target = wrapper(STUBBORN, "read line || true")
    with trio.fail_after(10), capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, target)
            pid_line, ready = await read_lines(transport.stream, 2)
            assert ready == b"ready"
            grandchild = int(pid_line)
            assert proc_stat(grandchild) is not None
            assert os.getpgid(grandchild) == transport.pid
            await transport.aclose(grace=2, term_grace=GRACE)
    assert transport.returncode == 0
    events = [e["event"] for e in logs]
    assert "stdio server left processes running; terminating its process group" in events
    stat = proc_stat(grandchild)
    assert stat is None or stat[0] == "Z"
    assert_group_gone(transport.pid)


async def read_to_eof(stream: trio.abc.Stream) -> bytes:
    data = b""
    while chunk := await stream.receive_some():
        data += chunk
    return data


async def test_the_leaders_exit_ends_the_stream_though_a_grandchild_holds_stdout() -> None:
    # The grandchild inherits stdout and outlives the leader: stdout never reaches EOF,
    # yet the server is gone. What the leader wrote before it exited is still read.
    target = StdioTarget.of(["sh", "-c", "sleep 30 & echo $!; echo last; exit 0"])
    with trio.fail_after(10), capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, target)
            pid_line, last, rest = (await read_to_eof(transport.stream)).split(b"\n")
            assert (last, rest) == (b"last", b"")
            grandchild = int(pid_line)
            held = proc_stat(grandchild)
            assert held is not None
            assert held[0] != "Z"  # still running, stdout still open
            assert transport.returncode == 0
            assert proc_stat(transport.pid) is None  # reaped as it exited: no zombie
            assert transport.stream.end_reason == "exited"
            await transport.aclose(grace=GRACE, term_grace=GRACE)
    assert [e["returncode"] for e in logs if e["event"] == "stdio server exited"] == [0]
    stat = proc_stat(grandchild)
    assert stat is None or stat[0] == "Z"
    assert_group_gone(transport.pid)


async def test_a_grandchild_flooding_stdout_cannot_keep_the_stream_open() -> None:
    # After the leader's exit only a bounded drain is read, however fast the rest comes.
    target = StdioTarget.of(["sh", "-c", "yes flood-flood-flood & exit 0"])
    with trio.fail_after(10), capture_logs():
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, target)
            data = await read_to_eof(transport.stream)
            assert transport.returncode == 0
            await transport.aclose(grace=GRACE, term_grace=GRACE)
    assert set(data.split(b"\n")[:-1]) <= {b"flood-flood-flood"}
    assert_group_gone(transport.pid)


async def test_a_leader_exiting_alone_still_ends_with_plain_eof() -> None:
    with trio.fail_after(10), capture_logs():
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, StdioTarget.of(["sh", "-c", "echo bye"]))
            assert await read_to_eof(transport.stream) == b"bye\n"
            assert transport.stream.end_reason is None  # the pipe's own EOF: "eof"
            await transport.aclose(grace=GRACE, term_grace=GRACE)
    assert transport.returncode == 0


async def test_a_wrapper_and_grandchild_ignoring_everything_are_all_killed() -> None:
    target = wrapper(STUBBORN, "trap '' TERM; wait")
    with trio.fail_after(10), capture_logs():
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, target)
            pid_line, _ready = await read_lines(transport.stream, 2)
            grandchild = int(pid_line)
            await transport.aclose(grace=GRACE, term_grace=GRACE)
    assert transport.returncode == -signal.SIGKILL
    stat = proc_stat(grandchild)
    assert stat is None or stat[0] == "Z"
    assert_group_gone(transport.pid)


async def test_kill_during_the_shutdown_skips_its_graces() -> None:
    """A host that must end now (a second Ctrl-C) kills every server whose shutdown has
    not finished: the shutdown under way waits out no grace, and still reaps all."""
    target = wrapper(STUBBORN, "trap '' TERM; wait")
    with trio.fail_after(10), capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, target)
            pid_line, _ready = await read_lines(transport.stream, 2)
            grandchild = int(pid_line)
            started = time.monotonic()
            # Graces long enough that only kill() can end this in time.
            nursery.start_soon(partial(transport.aclose, grace=30, term_grace=30))
            await trio.sleep(0.1)  # the shutdown has closed stdin and waits its grace
            assert kill_stdio_servers() >= 1
        assert time.monotonic() - started < 3
    assert transport.returncode == -signal.SIGKILL
    assert [e["how"] for e in logs if e["event"] == "stdio server closed"] == ["killed"]
    stat = proc_stat(grandchild)
    assert stat is None or stat[0] == "Z"
    assert_group_gone(transport.pid)
    assert transport.kill() is False  # closed: nothing left, and no longer listed
    assert transport not in stdio_module._RUNNING


async def test_a_server_killed_before_its_shutdown_is_closed_without_graces() -> None:
    with trio.fail_after(10), capture_logs():
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, python(STUBBORN))
            assert await read_lines(transport.stream, 1) == [b"ready"]
            assert transport.kill() is True
            started = time.monotonic()
            await transport.aclose(grace=30, term_grace=30)
            assert time.monotonic() - started < 3
    assert transport.returncode == -signal.SIGKILL
    assert_group_gone(transport.pid)


async def test_a_server_killed_from_outside_is_still_reaped() -> None:
    with trio.fail_after(10), capture_logs():
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, python(STUBBORN))
            assert await read_lines(transport.stream, 1) == [b"ready"]
            os.kill(transport.pid, signal.SIGKILL)
            assert await transport.stream.receive_some() == b""
            await transport.aclose(grace=GRACE, term_grace=GRACE)
    assert transport.returncode == -signal.SIGKILL
    assert proc_stat(transport.pid) is None
    assert_group_gone(transport.pid)


async def test_aclose_is_idempotent_and_safe_concurrently() -> None:
    with trio.fail_after(10), capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, python(STUBBORN))
            assert await read_lines(transport.stream, 1) == [b"ready"]
            async with trio.open_nursery() as closers:
                for _ in range(3):
                    closers.start_soon(lambda: transport.aclose(grace=GRACE, term_grace=GRACE))
            assert transport.returncode == -signal.SIGKILL
            started = time.monotonic()
            await transport.aclose(grace=GRACE, term_grace=GRACE)
            assert time.monotonic() - started < 0.1
    assert len([e for e in logs if e["event"] == "stdio server closed"]) == 1


async def test_aclose_under_a_cancelled_scope_still_reaps() -> None:
    with trio.fail_after(10), capture_logs():
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, python(STUBBORN))
            assert await read_lines(transport.stream, 1) == [b"ready"]
            with trio.CancelScope() as scope:
                scope.cancel()
                await transport.aclose(grace=GRACE, term_grace=GRACE)
            assert transport.returncode == -signal.SIGKILL
            assert proc_stat(transport.pid) is None
            # A later call from a cancelled scope waits for nothing and raises nothing new.
            with trio.CancelScope() as scope:
                scope.cancel()
                await transport.aclose()
    assert_group_gone(transport.pid)


async def test_cancelling_the_owner_mid_use_and_closing_in_finally_reaps() -> None:
    with trio.fail_after(10), capture_logs():
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, python(STUBBORN))
            with trio.move_on_after(0.1):
                try:
                    await trio.sleep_forever()
                finally:
                    await transport.aclose(grace=GRACE, term_grace=GRACE)
    assert transport.returncode is not None
    assert_group_gone(transport.pid)


async def test_the_child_gets_the_allowlisted_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MCPL_TEST_HOST_SECRET", CANARY)
    code = (
        "import os, sys\n"
        "sys.stdout.write(repr(sorted(os.environ.items())) + '\\n')\n"
        "sys.stdout.flush()\n"
    )
    with trio.fail_after(10), capture_logs():
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, python(code, env={"CONFIGURED": "yes"}))
            (line,) = await read_lines(transport.stream, 1)
            await transport.aclose(grace=GRACE, term_grace=GRACE)
            inherited = await spawn(nursery, python(code, inherit_env=True))
            (inherited_line,) = await read_lines(inherited.stream, 1)
            await inherited.aclose(grace=GRACE, term_grace=GRACE)
    env = dict(eval(line))  # our own child's repr of its environment
    assert env["CONFIGURED"] == "yes"
    assert "MCPL_TEST_HOST_SECRET" not in env
    assert CANARY.encode() not in line
    assert dict(eval(inherited_line))["MCPL_TEST_HOST_SECRET"] == CANARY


async def test_the_working_directory_is_used(tmp_path: Path) -> None:
    code = "import os, sys; sys.stdout.write(os.getcwd() + '\\n')"
    with trio.fail_after(10), capture_logs():
        async with trio.open_nursery() as nursery:
            transport = await spawn(nursery, python(code, cwd=str(tmp_path)))
            (line,) = await read_lines(transport.stream, 1)
            await transport.aclose(grace=GRACE, term_grace=GRACE)
    assert Path(line.decode()).resolve() == tmp_path.resolve()


def children() -> set[int]:
    me = os.getpid()
    return {
        int(e)
        for e in os.listdir("/proc")
        if e.isdigit() and (s := proc_stat(int(e))) and s[1] == me
    }


async def test_a_missing_program_raises_spawn_error_and_leaves_nothing(tmp_path: Path) -> None:
    before = children()
    secret_program = tmp_path / ("ghp_" + "Z9y8X7w6V5u4T3s2R1q0" * 2)
    target = StdioTarget.of([str(secret_program), "--flag"])
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            with pytest.raises(SpawnError) as info:
                await spawn(nursery, target)
    error = info.value
    assert error.reason == "spawn-failed"
    assert "No such file or directory" in error.message
    assert "ENOENT" in error.message
    assert error.permanent  # a reconnect policy never retries it
    assert secret_program.name not in str(error)
    assert REDACTION_MARK in str(error)
    assert error.__cause__ is None
    assert error.__suppress_context__
    assert children() == before


async def test_a_program_missing_from_path_is_named() -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            with pytest.raises(SpawnError, match="cannot start 'no-such-program-mcpl'"):
                await spawn(nursery, StdioTarget.of(["no-such-program-mcpl"]))


async def test_a_program_without_execute_permission_raises_spawn_error(tmp_path: Path) -> None:
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o600)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            with pytest.raises(SpawnError, match="Permission denied") as info:
                await spawn(nursery, StdioTarget.of([str(script)]))
    assert info.value.permanent


async def test_a_spawn_that_lacks_resources_is_not_permanent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Too many open files may pass: unlike a wrong path, that one is retried."""

    async def exhausted(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(trio.lowlevel, "open_process", exhausted)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            with pytest.raises(SpawnError, match="EMFILE") as info:
                await spawn(nursery, python("pass"))
    assert not info.value.permanent


async def test_a_missing_working_directory_raises_spawn_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            with pytest.raises(SpawnError, match="working directory") as info:
                await spawn(nursery, python("pass", cwd=str(missing)))
            file_cwd = tmp_path / "file"
            file_cwd.write_text("")
            with pytest.raises(SpawnError, match="working directory"):
                await spawn(nursery, python("pass", cwd=str(file_cwd)))
    assert "nowhere" in str(info.value)
    assert info.value.permanent


async def test_a_bad_stderr_bound_is_refused_before_spawning() -> None:
    before = children()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            with pytest.raises(ValueError, match="positive"):
                await spawn(nursery, python(STUBBORN), max_stderr_line=0)
    assert children() == before


async def test_a_closed_nursery_kills_the_child_it_cannot_serve() -> None:
    before = children()
    with trio.fail_after(10), capture_logs():
        async with trio.open_nursery() as nursery:
            pass
        with pytest.raises(RuntimeError):
            await spawn(nursery, python(STUBBORN))
    assert children() == before


async def test_open_transport_runs_a_stdio_target() -> None:
    target = python(ECHO + "\nimport sys; sys.stderr.write('bye\\n')")
    lines: list[str] = []
    with trio.fail_after(10), capture_logs():
        async with trio.open_nursery() as nursery:
            transport = await open_transport(
                target, nursery=nursery, on_stderr=lines.append, redactor=redactor_for(target)
            )
            assert isinstance(transport, StdioTransport)
            await transport.stream.send_all(b"hi\n")
            assert await read_lines(transport.stream, 1) == [b"hi"]
            await transport.aclose()
    assert transport.returncode == 0
    assert lines == ["bye"]
