#!/usr/bin/env python3
"""The benchmark's server: MCP over newline-delimited JSON-RPC, as cheap per message as
Python allows, so that what a benchmark measures is the client.

    python bench/server.py              # stdio
    python bench/server.py --unix PATH  # a Unix socket, any number of connections

It answers ``initialize`` (echoing a known revision), ``ping``, ``tools/list`` (one tool,
``echo``) and ``tools/call``: ``echo`` returns its ``text`` argument as a text block
(spliced from the request's bytes, never re-encoded, so a 1 MiB echo costs one scan) and
``pid`` returns the server's process id (the benchmark kills it to time a reconnect).
Notifications and responses are read and ignored; anything else gets -32601.

It reads in 64 KiB chunks, answers every complete line of a chunk, and writes all those
answers with one system call: requests pipelined by a client are answered in a batch of
writes, not one wake-up each. ``bench/http_server.py`` gives the same answers over
Streamable HTTP (``decode`` and ``respond``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import selectors
import socket
import sys

import msgspec

SUPPORTED = (b"2025-11-25", b"2025-06-18", b"2025-03-26", b"2024-11-05")
CHUNK = 64 * 1024


class Arguments(msgspec.Struct):
    text: msgspec.Raw = msgspec.Raw(b'""')


class Params(msgspec.Struct):
    name: str = ""
    arguments: Arguments | None = None
    protocolVersion: str = ""  # the wire's spelling


class Message(msgspec.Struct):
    id: int | str | None = None
    method: str | None = None
    params: Params | None = None


decode = msgspec.json.Decoder(Message).decode
_encode_id = msgspec.json.encode
_TOOLS = (
    b'{"tools":[{"name":"echo","description":"Returns its text","inputSchema":{"type":"object",'
    b'"properties":{"text":{"type":"string"}},"required":["text"]}},{"name":"pid",'
    b'"description":"Returns the server process id","inputSchema":{"type":"object"}}]}'
)


def _result(id_: bytes, result: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + id_ + b',"result":' + result + b"}\n"


def answer(line: bytes) -> bytes:
    """The bytes to write for one line (empty for a notification or a response)."""
    try:
        msg = decode(line)
    except msgspec.DecodeError:
        return b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n'
    return respond(msg)


def respond(msg: Message, supported: tuple[bytes, ...] = SUPPORTED) -> bytes:
    """The answer to one decoded message, a line (empty for a notification or a
    response); ``initialize`` agrees to the client's revision when it is in
    ``supported``, else offers the first of them."""
    if msg.method is None or msg.id is None:
        return b""
    id_ = _encode_id(msg.id)
    params = msg.params or Params()
    if msg.method == "tools/call":
        if params.name == "echo" and params.arguments is not None:
            text = bytes(params.arguments.text)
            return _result(id_, b'{"content":[{"type":"text","text":' + text + b"}]}")
        if params.name == "pid":
            return _result(id_, b'{"content":[{"type":"text","text":"%d"}]}' % os.getpid())
    elif msg.method == "initialize":
        asked = params.protocolVersion.encode()
        version = asked if asked in supported else supported[0]
        return _result(
            id_,
            b'{"protocolVersion":"' + version + b'","capabilities":{"tools":{}},'
            b'"serverInfo":{"name":"bench-server","version":"1.0.0"}}',
        )
    elif msg.method == "tools/list":
        return _result(id_, _TOOLS)
    elif msg.method == "ping":
        return _result(id_, b"{}")
    return (
        b'{"jsonrpc":"2.0","id":'
        + id_
        + b',"error":{"code":-32601,"message":"Method not found"}}\n'
    )


class Lines:
    """Complete lines out of chunks; a partial line waits for the next chunk."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def answers(self, chunk: bytes) -> bytes:
        start = len(self._buffer)
        self._buffer += chunk
        # Only the new bytes can hold the first newline: never rescan a long partial line.
        end = self._buffer.rfind(b"\n", start)
        if end < 0:
            return b""
        lines = bytes(self._buffer[: end + 1]).split(b"\n")
        del self._buffer[: end + 1]
        return b"".join(answer(line) for line in lines if line.strip())


def serve_stdio() -> None:
    lines = Lines()
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    while chunk := os.read(stdin, CHUNK):
        out = memoryview(lines.answers(chunk))
        while out:
            out = out[os.write(stdout, out) :]


def serve_unix(path: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4096)
    listener.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    while True:
        for key, _ in selector.select():
            if key.data is None:
                sock, _ = listener.accept()
                selector.register(sock, selectors.EVENT_READ, Lines())
                continue
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            chunk = sock.recv(CHUNK)
            if not chunk:
                selector.unregister(sock)
                sock.close()
                continue
            out = key.data.answers(chunk)
            if out:
                sock.setblocking(True)  # small answers; a blocked peer is the peer's problem
                sock.sendall(out)
                sock.setblocking(False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--unix", metavar="PATH")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        serve_unix(args.unix) if args.unix else serve_stdio()


if __name__ == "__main__":
    main()
