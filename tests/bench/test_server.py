"""The benchmark's server answers what the benchmark asks, byte for byte, over stdio and
over a Unix socket (what it answers decides what every client is measured on)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

SERVER = [sys.executable, str(Path(__file__).resolve().parents[2] / "bench" / "server.py")]
INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
)


def converse(lines: bytes) -> list[bytes]:
    out = subprocess.run(SERVER, input=lines, capture_output=True, timeout=30, check=True)
    return out.stdout.splitlines()


def test_initialize_echo_list_and_errors_on_the_wire() -> None:
    answers = converse(
        INIT
        + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        + b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a\\"b\\u00e9"}}}\n'
        + b'{"jsonrpc":"2.0","id":"x","method":"ping"}\n'
        + b'{"jsonrpc":"2.0","id":2,"method":"nope"}\n'
        + b"not json\n"
        + b'{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}\n'
    )
    assert answers == [
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":'
        b'{"tools":{}},"serverInfo":{"name":"bench-server","version":"1.0.0"}}}',
        # the text is spliced from the request's bytes, escapes and all
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\\"b\\u00e9"}]}}',
        b'{"jsonrpc":"2.0","id":"x","result":{}}',
        b'{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}',
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
        b'{"jsonrpc":"2.0","id":3,"result":{"protocolVersion":"2025-11-25","capabilities":'
        b'{"tools":{}},"serverInfo":{"name":"bench-server","version":"1.0.0"}}}',
    ]
    echoed = json.loads(answers[1])["result"]["content"][0]["text"]
    assert echoed == 'a"bé'


def test_pipelined_requests_and_a_line_split_across_reads() -> None:
    proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        call = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"}}}\n'
        proc.stdin.write(b"".join(call % (i, b"y" * i) for i in range(1, 65)))
        big = call % (99, b"z" * (1 << 20))
        proc.stdin.write(big[:70_000])  # more than one 64 KiB read, cut mid-line
        proc.stdin.flush()
        time.sleep(0.05)
        proc.stdin.write(big[70_000:])
        proc.stdin.flush()
        for i in range(1, 65):
            answer = json.loads(proc.stdout.readline())
            assert answer["id"] == i
            assert answer["result"]["content"][0]["text"] == "y" * i
        answer = json.loads(proc.stdout.readline())
        assert answer["result"]["content"][0]["text"] == "z" * (1 << 20)
        proc.stdin.write(
            b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"pid"}}\n'
        )
        proc.stdin.flush()
        pid = json.loads(proc.stdout.readline())["result"]["content"][0]["text"]
        assert int(pid) == proc.pid
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
        proc.stdout.close()


def test_unix_socket_serves_many_connections(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sock")
    proc = subprocess.Popen([*SERVER, "--unix", path])
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                pytest.fail("the server did not listen")
            time.sleep(0.01)
        socks = [socket.socket(socket.AF_UNIX) for _ in range(20)]
        for sock in socks:
            sock.settimeout(10)
            sock.connect(path)
            sock.sendall(INIT)
        for sock in socks:
            with sock, sock.makefile("rb") as answers:
                assert json.loads(answers.readline())["id"] == 0
    finally:
        proc.kill()
        proc.wait()
