"""Real processes and real loopback sockets under the Connection."""

from __future__ import annotations

import os
import signal
import sys
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import (
    ConfigurationError,
    Connection,
    ConnectionClosed,
    InitializeError,
    SpawnError,
    StdioTarget,
    TcpTarget,
    UnixTarget,
)
from mcpl_host.demo import handle
from mcpl_host.events import Closed, Disconnected, Event, StderrLine
from mcpl_host.protocol.framing import LineDecoder

DEMO = [sys.executable, "-m", "mcpl_host.demo"]
CANARY = "canary-5ec7e7-do-not-log"


def _gone(pid: int) -> bool:
    """True when the process no longer exists at all (exited and reaped: no zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def _wait_gone(pid: int) -> None:
    while not _gone(pid):
        await trio.sleep(0.02)


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "server.py"
    path.write_text(body)
    return path


# A server that records its pid, then does what the test's body says.
PRELUDE = """\
import json, os, sys, time
open(os.environ["PID_FILE"], "w").write(str(os.getpid()))
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()
def recv():
    line = sys.stdin.readline()
    return json.loads(line) if line else None
def recv_initialize():
    # A handshake-era server: server/discover, which a dual-era host asks first, is
    # a method it does not know.
    m = recv()
    while m is not None and m.get("method") == "server/discover":
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "?"}})
        m = recv()
    return m
"""


async def test_stdio_demo_server_calls_and_concurrency() -> None:
    events: list[Event] = []
    with trio.fail_after(20):
        async with Connection(StdioTarget.of(DEMO), on_event=events.append) as conn:
            assert conn.server_info["name"] == "mcpl-host-demo"
            tools = await conn.request("tools/list")
            assert [t["name"] for t in tools["tools"]] == [
                "echo",
                "add",
                "sleep",
                "countdown",
                "wrong_shape",
                "log",
                "touch",
                "ask",
            ]
            result = await conn.request(
                "tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}}
            )
            assert result["content"][0]["text"] == "42"
            answers: dict[int, str] = {}

            async def call(n: int) -> None:
                r = await conn.request(
                    "tools/call", {"name": "echo", "arguments": {"text": f"m{n}"}}
                )
                answers[n] = r["content"][0]["text"]

            async with trio.open_nursery() as nursery:
                for n in range(64):
                    nursery.start_soon(call, n)
            assert answers == {n: f"m{n}" for n in range(64)}
            pid = conn._epoch.transport.pid  # type: ignore[union-attr]
    assert _gone(pid)
    assert events[-2:] == [Disconnected(1, "closed"), Closed("closed")]


async def test_failed_handshake_leaves_no_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = _script(
        tmp_path,
        PRELUDE
        + 'recv_initialize(); send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, '
        '"message": "cannot read that"}})\n'
        "time.sleep(60)\n",
    )
    target = StdioTarget.of([sys.executable, str(script)], env={"PID_FILE": str(pid_file)})
    with trio.fail_after(20):
        with pytest.raises(InitializeError) as info:
            async with Connection(target):
                pytest.fail("connected")
        assert info.value.code == -32600
        assert info.value.server_message == "cannot read that"
        await _wait_gone(int(pid_file.read_text()))


async def test_kill_9_fails_pending_and_reaps(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = _script(
        tmp_path,
        PRELUDE
        + "m = recv_initialize()\n"
        + 'send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": '
        + 'm["params"]["protocolVersion"], "capabilities": {}, "serverInfo": {"name": "k"}}})\n'
        + "while recv() is not None: pass\n",
    )
    events: list[Event] = []
    target = StdioTarget.of([sys.executable, str(script)], env={"PID_FILE": str(pid_file)})
    with trio.fail_after(20):
        async with Connection(target, on_event=events.append) as conn:
            pid = int(pid_file.read_text())

            async def kill_soon() -> None:
                await trio.sleep(0.2)
                os.kill(pid, signal.SIGKILL)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(kill_soon)
                with pytest.raises(ConnectionClosed) as info:
                    await conn.request("tools/call", {"name": "never answered"})
            assert info.value.outcome_unknown
            await _wait_gone(pid)
    assert any(isinstance(e, Disconnected) and e.reason == "eof" for e in events)


def _ended(pid: int) -> bool:
    """Not running: gone, or a zombie that only its new parent (not us) can collect."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return _gone(pid)
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[0] == b"Z" and int(fields[1]) != os.getpid()


HANDSHAKE_ONLY = """\
import json, sys
m = json.loads(sys.stdin.readline())
if m["method"] == "server/discover":  # refused as a handshake-era server does
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {
        "code": -32601, "message": "Method not found"}}) + "\\n")
    sys.stdout.flush()
    m = json.loads(sys.stdin.readline())
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {
    "protocolVersion": m["params"]["protocolVersion"], "capabilities": {},
    "serverInfo": {"name": "brief"}}}) + "\\n")
sys.stdout.flush()
sys.stdin.readline()  # notifications/initialized
"""


async def test_a_server_exit_is_seen_though_a_grandchild_holds_its_stdout(
    tmp_path: Path,
) -> None:
    # sh runs the handshake, starts a grandchild that inherits stdout, and exits. stdout
    # never reaches EOF; the exit alone must end the transport, long before a timeout.
    script = _script(tmp_path, HANDSHAKE_ONLY)
    pid_file = tmp_path / "grandchild"
    command = f"'{sys.executable}' '{script}'; sleep 30 & echo $! > '{pid_file}'; exit 0"
    events: list[Event] = []
    target = StdioTarget.of(["sh", "-c", command], inherit_env=True)
    with trio.fail_after(20):
        async with Connection(target, on_event=events.append, request_timeout=60) as conn:
            sh_pid = conn._epoch.transport.pid  # type: ignore[union-attr]
            began = trio.current_time()
            with pytest.raises(ConnectionClosed):
                await conn.request("tools/call", {"name": "never answered"})
            assert trio.current_time() - began < 10  # not the request's 60 s
            assert _gone(sh_pid)  # reaped when it exited: no zombie
            grandchild = int(pid_file.read_text())
        assert _ended(grandchild)  # the transport's end swept the process group
    assert Disconnected(1, "exited") in events


async def test_wrapper_shell_and_its_child_are_both_gone_after_close(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    # "; true" keeps sh alive as a parent instead of exec-ing python in its place.
    command = f'\'{sys.executable}\' -m mcpl_host.demo; python3 -c \'import os; open(os.environ["PID_FILE"]+".x","w")\'; true'
    target = StdioTarget.of(
        ["sh", "-c", f"echo $$ > '{pid_file}'; {command}"],
        env={"PID_FILE": str(pid_file)},
        inherit_env=True,
    )
    with trio.fail_after(20):
        async with Connection(target) as conn:
            await conn.request("ping")
            sh_pid = conn._epoch.transport.pid  # type: ignore[union-attr]
            assert int(pid_file.read_text()) == sh_pid
        await _wait_gone(sh_pid)
        # the process group is empty: no child of the wrapper survived
        with pytest.raises(ProcessLookupError):
            os.killpg(sh_pid, 0)


async def test_stderr_lines_become_events_redacted(tmp_path: Path) -> None:
    events: list[Event] = []
    pid_file = tmp_path / "pid"
    script = _script(
        tmp_path,
        PRELUDE
        + 'sys.stderr.write("starting with key " + os.environ["API_KEY"] + "\\n"); sys.stderr.flush()\n'
        + "m = recv_initialize()\n"
        + 'send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -1, "message": '
        + '"bad key " + os.environ["API_KEY"] + " and " + sys.argv[2] + " " + sys.argv[3]}})\n'
        + "time.sleep(0.5)\n",
    )
    target = StdioTarget.of(
        [
            sys.executable,
            str(script),
            "--token",
            CANARY + "-arg",
            f"--url=https://example.test/mcp?access_token={CANARY}-url",
        ],
        env={"PID_FILE": str(pid_file), "API_KEY": CANARY},
    )
    with capture_logs() as logs, trio.fail_after(20), pytest.raises(InitializeError) as info:
        async with Connection(target, on_event=events.append):
            pass
    stderr = [e.line for e in events if isinstance(e, StderrLine)]
    assert stderr == ["starting with key ***"]
    assert str(info.value).endswith(
        "bad key *** and *** --url=https://example.test/mcp?access_token=***"
    )
    everything = repr(logs) + repr(events) + str(info.value) + repr(info.value.__dict__)
    assert CANARY not in everything


async def test_missing_program_is_a_spawn_error() -> None:
    with trio.fail_after(10), pytest.raises(SpawnError):
        async with Connection(StdioTarget.of(["/nonexistent/mcp-server-xyz"])):
            pass


async def _serve_demo(stream: trio.abc.Stream) -> None:
    """The demo server's logic behind a real socket."""
    framer = LineDecoder()
    async with stream:
        async for chunk in stream:
            for line in framer.feed(chunk):
                assert isinstance(line, bytes)
                answer = handle(msgspec.json.decode(line))
                if answer is not None:
                    await stream.send_all(msgspec.json.encode(answer) + b"\n")


async def _exercise(conn: Connection) -> Any:
    result = await conn.request("tools/call", {"name": "echo", "arguments": {"text": "via socket"}})
    return result["content"][0]["text"]


async def test_tcp_loopback() -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                partial(trio.serve_tcp, _serve_demo, 0, host="127.0.0.1")
            )
            port = listeners[0].socket.getsockname()[1]
            async with Connection(f"tcp://127.0.0.1:{port}") as conn:
                assert await _exercise(conn) == "via socket"
                assert conn.name == f"tcp://127.0.0.1:{port}"
            async with Connection(TcpTarget("127.0.0.1", port)) as conn:
                assert await _exercise(conn) == "via socket"
            nursery.cancel_scope.cancel()


async def test_unix_socket(tmp_path: Path) -> None:
    path = str(tmp_path / "mcp.sock")
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    await sock.bind(path)
    sock.listen()
    listener = trio.SocketListener(sock)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, _serve_demo, [listener])
            async with Connection(f"unix:{path}") as conn:
                assert await _exercise(conn) == "via socket"
            async with Connection(UnixTarget(path)) as conn:
                assert await _exercise(conn) == "via socket"
            nursery.cancel_scope.cancel()


async def test_socket_closed_by_server_fails_pending() -> None:
    async def hang_up_after_initialize(stream: trio.abc.Stream) -> None:
        framer = LineDecoder()
        async with stream:
            async for chunk in stream:
                for line in framer.feed(chunk):
                    assert isinstance(line, bytes)
                    message = msgspec.json.decode(line)
                    if message.get("method") == "initialize":
                        await stream.send_all(msgspec.json.encode(handle(message)) + b"\n")
                    elif message.get("method") == "tools/call":
                        return
                    elif message.get("method") == "server/discover":
                        # A handshake-era server refuses it (not answering costs 5 s).
                        refused = {"jsonrpc": "2.0", "id": message["id"]}
                        refused["error"] = {"code": -32601, "message": "Method not found"}
                        await stream.send_all(msgspec.json.encode(refused) + b"\n")

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                partial(trio.serve_tcp, hang_up_after_initialize, 0, host="127.0.0.1")
            )
            port = listeners[0].socket.getsockname()[1]
            async with Connection(f"tcp://127.0.0.1:{port}") as conn:
                with pytest.raises(ConnectionClosed) as info:
                    await conn.request("tools/call", {"name": "x"})
                assert info.value.outcome_unknown
            nursery.cancel_scope.cancel()


def test_a_secret_in_a_url_target_never_shows() -> None:
    with pytest.raises(ConfigurationError) as info:
        Connection(f"tcp://user:{CANARY}@127.0.0.1:9")
    assert CANARY not in str(info.value)
    assert CANARY not in repr(info.value.__dict__)


def test_a_command_line_as_target_is_told_how_to_run_a_program() -> None:
    # What users write first (the docs once did): a string target is an address, and a
    # command line is never split; the error says what to write instead, and repeats
    # none of the string (a command line can carry a token).
    with pytest.raises(ConfigurationError) as info:
        Connection(f"python -m server --token {CANARY}")
    message = str(info.value)
    assert "StdioTarget.of([" in message
    assert "tcp://" in message  # what a string target is
    assert CANARY not in message
