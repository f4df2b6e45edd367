"""SIGINT, SIGTERM and SIGHUP sent to the real ``mcpl-host`` process, as a terminal, a
supervisor or a closed terminal sends them: the server shut down and its whole process
group gone, exit 128+N, no traceback, and under ``--json`` exactly one JSON object with
the error kind ``cancelled`` (docs/cli.md, "Signals").

Each server writes its pid and its child's (a member of its process group) to a file
once it is where the test wants the signal to land, so nothing here sleeps on a guess.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpl_host.cli.signals import Interrupts, Signalled

from .helpers import CLI, TIMEOUT, server

# A server that stops where the test sends its signal: in the handshake (it never
# answers initialize) or in a tool call (it never answers tools/call). Like a server
# whose tool runs in another task, it still reads its stdin and exits at its end; a
# stubborn one ignores that end and SIGTERM, its child too, so only SIGKILL ends them
# (it marks the end of its stdin with PIDFILE.eof: the host's shutdown has begun).
BLOCKING = """\
import signal, subprocess, threading, time

pid_file, where, stubborn = sys.argv[1], sys.argv[2], sys.argv[3] == "stubborn"
if stubborn:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
ignore = "signal.signal(signal.SIGTERM, signal.SIG_IGN); " if stubborn else ""
child = subprocess.Popen([sys.executable, "-c", f"import signal, time; {ignore}time.sleep(600)"])

def blocked():
    with open(pid_file + ".part", "w") as handle:
        handle.write(f"{os.getpid()} {child.pid}")
    os.replace(pid_file + ".part", pid_file)  # the file appears whole
    sys.stdin.read()
    if stubborn:
        open(pid_file + ".eof", "w").close()
        time.sleep(600)
    os._exit(0)  # the child is left in the group, for the host to end

request = read_initialize()
if where == "handshake":
    blocked()
initialized(request)
for line in sys.stdin:
    if json.loads(line).get("method") == "tools/call":
        blocked()
"""
# Generous, for a loaded machine: each wait ends as soon as its condition holds.
_DEADLINE = 30.0
# The orderly shutdown of a stubborn server takes 2 s (stdin closed) + 2 s (SIGTERM)
# before SIGKILL; a second signal must not wait for either.
_FORCED_WITHIN = 2.0


@pytest.fixture
def servers() -> Iterator[list[int]]:
    """The pids each test saw (servers and their children), killed if a test failed
    before the host ended them."""
    seen: list[int] = []
    yield seen
    for pid in seen:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


_STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True, scope="module")
def _signals_not_ignored() -> Iterator[None]:
    """The command leaves a signal its parent ignored ignored (``nohup``), and a child
    inherits what its parent ignores: a suite run under ``nohup`` must still see the
    command handle the signals these tests send."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGHUP, signal.SIGTERM)}
    for sig, previous in saved.items():
        if previous is signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)
    yield
    for sig, previous in saved.items():
        signal.signal(sig, previous)


@pytest.fixture(autouse=True)
def _no_command_left() -> Iterator[None]:
    """A test that failed half-way (a timeout on a loaded machine) must not leave its
    mcpl-host running: the tests after it count the children they find."""
    yield
    while _STARTED:
        process = _STARTED.pop()
        if process.poll() is None:
            process.kill()
        process.communicate()


def _blocking(tmp_path: Path, name: str, where: str, *, stubborn: bool = False) -> list[str]:
    argv = server(tmp_path, "blocking", BLOCKING)
    return [*argv, str(tmp_path / f"{name}.pids"), where, "stubborn" if stubborn else "polite"]


def _start(*args: str, new_session: bool = False) -> subprocess.Popen[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")}
    process = subprocess.Popen(
        [*CLI, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
        start_new_session=new_session,
    )
    _STARTED.append(process)
    return process


def _wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + _DEADLINE
    while not path.exists():
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"mcpl-host exited ({process.returncode}) first:\n{out}\n{err}")
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.01)


def _pids(path: Path, seen: list[int]) -> list[int]:
    pids = [int(pid) for pid in path.read_text().split()]
    seen.extend(pids)
    return pids


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for init to collect it does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def _assert_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + 2.0
    while any(_running(pid) for pid in pids):
        assert time.monotonic() < deadline, f"still running: {[p for p in pids if _running(p)]}"
        time.sleep(0.01)


def _finish(process: subprocess.Popen[str]) -> tuple[str, str]:
    out, err = process.communicate(timeout=TIMEOUT)
    assert "Traceback" not in err, err
    return out, err


def _one_object(out: str) -> dict[str, Any]:
    report = json.loads(out)  # refuses anything after the object
    assert isinstance(report, dict)
    return report


@pytest.mark.parametrize(
    ("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
def test_a_signal_during_a_call_ends_it_with_one_json_object(
    tmp_path: Path, servers: list[int], sig: signal.Signals, status: int
) -> None:
    argv = _blocking(tmp_path, "server", "call")
    process = _start("call", "--json", "--tool", "wait", "--", *argv)
    _wait_for(tmp_path / "server.pids", process)
    pids = _pids(tmp_path / "server.pids", servers)
    process.send_signal(sig)
    out, _ = _finish(process)
    assert process.returncode == status
    report = _one_object(out)
    assert report["ok"] is False
    assert report["serverInfo"] == {"name": "test-server", "version": "0"}
    assert report["error"] == {
        "kind": "cancelled",
        "message": f"cancelled by {sig.name}",
        "code": None,
        "data": None,
        "signal": sig.name,
        "forced": False,
        "method": "tools/call",
    }
    _assert_gone(pids)


def test_ctrl_c_at_a_terminal_during_the_handshake(tmp_path: Path, servers: list[int]) -> None:
    """A terminal's Ctrl-C goes to its whole foreground process group: the command's.
    The server leads a session of its own, so it is the command that ends it."""
    argv = _blocking(tmp_path, "server", "handshake")
    process = _start("connect", "--", *argv, new_session=True)
    _wait_for(tmp_path / "server.pids", process)
    pids = _pids(tmp_path / "server.pids", servers)
    os.killpg(process.pid, signal.SIGINT)
    out, _ = _finish(process)
    assert process.returncode == 130
    assert "cancelled" in out
    assert "cancelled by SIGINT" in out
    _assert_gone(pids)


def test_a_signal_ends_every_server_of_all(tmp_path: Path, servers: list[int]) -> None:
    entries = {
        name: {"command": argv[0], "args": argv[1:]}
        for name, argv in (
            ("one", _blocking(tmp_path, "one", "handshake")),
            ("two", _blocking(tmp_path, "two", "handshake")),
        )
    }
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": entries}))
    process = _start("connect", "--json", "--config", str(config), "--all")
    _wait_for(tmp_path / "one.pids", process)
    _wait_for(tmp_path / "two.pids", process)
    pids = _pids(tmp_path / "one.pids", servers) + _pids(tmp_path / "two.pids", servers)
    process.send_signal(signal.SIGTERM)
    out, _ = _finish(process)
    assert process.returncode == 143
    report = _one_object(out)
    assert report["ok"] is False
    assert report["error"]["kind"] == "cancelled"
    assert report["error"]["signal"] == "SIGTERM"
    for name in ("one", "two"):
        assert report["servers"][name]["error"]["kind"] == "cancelled"
    _assert_gone(pids)


def test_a_second_signal_kills_the_server_at_once(tmp_path: Path, servers: list[int]) -> None:
    argv = _blocking(tmp_path, "server", "call", stubborn=True)
    process = _start("call", "--json", "--tool", "wait", "--", *argv)
    _wait_for(tmp_path / "server.pids", process)
    pids = _pids(tmp_path / "server.pids", servers)
    process.send_signal(signal.SIGINT)
    _wait_for(tmp_path / "server.pids.eof", process)  # the orderly shutdown has begun
    second = time.monotonic()
    process.send_signal(signal.SIGINT)
    out, _ = _finish(process)
    assert time.monotonic() - second < _FORCED_WITHIN
    assert process.returncode == 130
    error = _one_object(out)["error"]
    assert (error["kind"], error["signal"], error["forced"]) == ("cancelled", "SIGINT", True)
    _assert_gone(pids)


def test_closed_stdout_and_stderr_during_the_shutdown(tmp_path: Path, servers: list[int]) -> None:
    """Their readers gone (a pipeline ended, a terminal closed): the report and the
    shutdown's log lines have nowhere to go, and the command still ends as the signal
    says, its server reaped."""
    argv = _blocking(tmp_path, "server", "call")
    process = _start("call", "--json", "-vv", "--trace", "--tool", "wait", "--", *argv)
    _wait_for(tmp_path / "server.pids", process)
    pids = _pids(tmp_path / "server.pids", servers)
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.close()
    process.stderr.close()
    process.send_signal(signal.SIGTERM)
    assert process.wait(TIMEOUT) == 143
    _assert_gone(pids)


def test_a_signal_ends_a_login(tmp_path: Path) -> None:
    """``auth login`` waiting on the server (here one that accepts and never answers)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(_DEADLINE)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        process = _start("auth", "login", "--json", "--no-browser", url)
        accepted, _ = listener.accept()  # the login's first request is under way
        with accepted:
            process.send_signal(signal.SIGINT)
            out, _ = _finish(process)
    assert process.returncode == 130
    report = _one_object(out)
    assert report["target"] == url
    assert report["error"]["kind"] == "cancelled"


def test_a_signal_before_anything_started(tmp_path: Path) -> None:
    """Reading the config file (here a FIFO nobody writes), before trio runs: nothing
    was started, and the report is still the one JSON object."""
    fifo = tmp_path / "servers.json"
    os.mkfifo(fifo)
    process = _start("connect", "--json", "--config", str(fifo), "--all")
    deadline = time.monotonic() + _DEADLINE
    writer = None
    while writer is None:  # opens once the command has the FIFO open for reading
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the command never opened the config file"
        try:
            writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader yet
            time.sleep(0.01)
    try:
        process.send_signal(signal.SIGINT)
        out, _ = _finish(process)
    finally:
        os.close(writer)
    assert process.returncode == 130
    report = _one_object(out)
    assert report["target"] is None
    assert (report["error"]["kind"], report["error"]["signal"]) == ("cancelled", "SIGINT")


# A server with a listing far bigger than a pipe holds (64 KiB), so that the report's
# writing blocks until the test reads it.
_BIG = """\
request = read_initialize()
initialized(request)
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "tools/list":
        tools = [{"name": f"tool{i}", "description": "x" * 1000,
                  "inputSchema": {"type": "object"}} for i in range(400)]
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": tools}})
"""


def test_a_signal_while_the_report_is_written(tmp_path: Path) -> None:
    """The report is made (the server is closed) and its writing waits on a reader: a
    signal lets it be written whole, with its own exit status; a second one ends the
    command, for a reader that stopped reading."""
    argv = server(tmp_path, "big", _BIG)
    for signals in (1, 2):
        process = _start("connect", "--json", "--", *argv)
        assert process.stdout is not None
        _wait_for_blocked_write(process)
        if signals == 1:
            process.send_signal(signal.SIGTERM)
            out, _ = _finish(process)
            assert process.returncode == 0
            assert len(_one_object(out)["tools"]) == 400
        else:
            # Until two were taken: two sent at once may be delivered as one, and one
            # more after the second may find the command's handlers gone as it exits.
            sent, deadline = 0, time.monotonic() + _DEADLINE
            while process.poll() is None and time.monotonic() < deadline:
                process.send_signal(signal.SIGTERM)
                sent += 1
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(0.5)
            _finish(process)
            assert process.returncode in ((143,) if sent == 2 else (143, -signal.SIGTERM))


def _wait_for_blocked_write(process: subprocess.Popen[str]) -> None:
    """Until the command's server is gone (the report is made once it is closed) and
    its stdout pipe holds part of the report: it is writing it, and the rest (about
    400 KiB) cannot fit before the test reads."""
    deadline = time.monotonic() + _DEADLINE
    while True:
        assert process.poll() is None, "mcpl-host exited before its report was read"
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        if not children and _writing(process):
            return
        assert time.monotonic() < deadline, "the report never filled the pipe"
        time.sleep(0.02)


def _writing(process: subprocess.Popen[str]) -> bool:
    assert process.stdout is not None
    waiting = bytearray(4)
    fcntl.ioctl(process.stdout.fileno(), termios.FIONREAD, waiting)
    return int.from_bytes(waiting, "little") >= 16 * 1024


def test_signals_of_the_run_never_cost_the_report() -> None:
    """Two Ctrl-Cs during the run (the first cancels it, the second kills) and a third
    after it: the report is still written; only a second signal *while it is written*
    stops the writing. (The handler is called as Python would call it.)"""
    interrupts = Interrupts()

    async def work() -> str:
        interrupts._on_signal(signal.SIGINT, None)
        interrupts._on_signal(signal.SIGINT, None)
        return "report"

    assert interrupts.run(work) == "report"
    interrupts._on_signal(signal.SIGINT, None)  # the run is over: noted only (--output)
    interrupts.writing()
    interrupts._on_signal(signal.SIGINT, None)  # the report is written whole
    with pytest.raises(Signalled):
        interrupts._on_signal(signal.SIGINT, None)
    assert interrupts.status() == 130
