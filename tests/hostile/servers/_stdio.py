"""What every hostile stdio server shares: bytes out on stdout, lines in from stdin.

Written as an attacker would write it: the standard library only, no mcpl_host, no
validation of what the host sends beyond finding the ``id`` to answer. A server is a
script run by path; this module sits beside it, so a plain ``import _stdio`` finds it.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

OUT = sys.stdout.buffer
IN = sys.stdin.buffer
_out_lock = threading.Lock()


def parser(description: str | None) -> argparse.ArgumentParser:
    """Every server takes ``--stats PATH``: where it writes what it saw, as JSON."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--stats", help="write what arrived here (JSON) before exiting")
    return parser


def send_raw(data: bytes) -> None:
    with _out_lock:
        OUT.write(data)
        OUT.flush()


def send(message: Any) -> None:
    # json.dumps as Python writes it by default: ASCII, lone surrogates as \ud800.
    send_raw(json.dumps(message, separators=(",", ":")).encode() + b"\n")


def read_message() -> Any:
    """The next line of stdin that is a JSON object; None at EOF."""
    while True:
        line = IN.readline()
        if not line:
            return None
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, (dict, list)):
            return message


def handshake(
    version: str | None = None,
    capabilities: dict[str, Any] | None = None,
    before_answer: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Read initialize and answer it, with ``version`` or the one the host offered.
    ``before_answer`` runs between the two (what a server sends before answering)."""
    while True:
        message = read_message()
        if message is None:
            sys.exit(0)
        if isinstance(message, dict) and message.get("method") == "initialize":
            break
        if isinstance(message, dict) and message.get("method") == "server/discover":
            # A handshake-era server: the dual-era host asks this first.
            error = {"code": -32601, "message": "Method not found"}
            send({"jsonrpc": "2.0", "id": message["id"], "error": error})
    if before_answer is not None:
        before_answer()
    send(
        {
            "jsonrpc": "2.0",
            "id": message["id"],
            "result": {
                "protocolVersion": version or message["params"]["protocolVersion"],
                "capabilities": capabilities if capabilities is not None else {},
                "serverInfo": {"name": "hostile", "version": "0"},
            },
        }
    )
    return message


def wait_initialized() -> None:
    """Read up to ``notifications/initialized``: the host reads what follows under the
    negotiated revision."""
    while True:
        message = read_message()
        if message is None:
            sys.exit(0)
        if isinstance(message, dict) and message.get("method") == "notifications/initialized":
            return


def exit_when_host_hangs_up() -> None:
    """A deaf server never reads stdin, so it never sees EOF; it still leaves when the
    host closes its end (poll reports POLLHUP on a pipe with no writer left, data
    unread or not), rather than make every test wait for the host's SIGTERM."""

    def watch() -> None:
        poller = select.poll()
        poller.register(IN.fileno(), select.POLLHUP)
        while True:
            for _, events in poller.poll(50):
                if events & select.POLLHUP:
                    os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def sleep_forever() -> None:
    while True:
        time.sleep(3600)


class Stats:
    """Counters written as JSON to ``--stats`` when asked and at exit."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.values: dict[str, Any] = {}
        self._lock = threading.Lock()

    def add(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self.values[name] = self.values.get(name, 0) + amount

    def set(self, name: str, value: Any) -> None:
        with self._lock:
            self.values[name] = value

    def write(self) -> None:
        if self.path is None:
            return
        with self._lock:
            text = json.dumps(self.values)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as file:
            file.write(text)
        os.replace(tmp, self.path)


def serve_host(stats: Stats, on_message: Callable[[Any], bool | None] | None = None) -> None:
    """Read everything the host sends until EOF, counting bytes and lines; answer its
    pings; hand every message to ``on_message`` first (true: it took care of it, even
    of a ping). Writes the stats at EOF."""
    while True:
        line = IN.readline()
        if not line:
            break
        stats.add("bytes_in", len(line))
        stats.add("lines_in")
        try:
            message = json.loads(line)
        except ValueError:
            stats.add("not_json_in")
            continue
        if on_message is not None and on_message(message):
            continue
        if isinstance(message, dict) and message.get("method") == "ping" and "id" in message:
            send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
    stats.write()
