"""The deaf flood over a WebSocket (standard library only, RFC 6455 by hand): accepts
a connection, answers initialize, reads up to ``notifications/initialized``, then
sends ``--count`` ``roots/list`` requests as text frames and never reads the socket
again. Prints ``ws://127.0.0.1:PORT/`` first; runs until its stdin closes."""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import socket
import struct
import sys
import threading

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def frame(payload: bytes) -> bytes:
    """A server's text frame: unmasked, final."""
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", 0x81, size)
    elif size < 1 << 16:
        head = struct.pack("!BBH", 0x81, 126, size)
    else:
        head = struct.pack("!BBQ", 0x81, 127, size)
    return head + payload


def read_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def read_frame(sock: socket.socket) -> tuple[int, bytes]:
    first, second = read_exact(sock, 2)
    size = second & 0x7F
    if size == 126:
        (size,) = struct.unpack("!H", read_exact(sock, 2))
    elif size == 127:
        (size,) = struct.unpack("!Q", read_exact(sock, 8))
    mask = read_exact(sock, 4) if second & 0x80 else b"\0\0\0\0"
    payload = read_exact(sock, size)
    return first & 0x0F, bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def accept_upgrade(sock: socket.socket) -> None:
    request = b""
    while b"\r\n\r\n" not in request:
        chunk = sock.recv(4096)
        if not chunk:
            raise EOFError
        request += chunk
    key = b""
    for line in request.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"sec-websocket-key":
            key = value.strip()
    accept = base64.b64encode(hashlib.sha1(key + _GUID).digest())
    sock.sendall(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
    )


def serve(sock: socket.socket, count: int) -> None:
    accept_upgrade(sock)
    while True:
        opcode, payload = read_frame(sock)
        if opcode != 1:
            continue
        message = json.loads(payload)
        if message.get("method") == "initialize":
            break
    result = {
        "protocolVersion": message["params"]["protocolVersion"],
        "capabilities": {},
        "serverInfo": {"name": "hostile-ws", "version": "0"},
    }
    sock.sendall(
        frame(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode())
    )
    while True:  # deaf once the host is through its handshake
        opcode, payload = read_frame(sock)
        if opcode == 1 and json.loads(payload).get("method") == "notifications/initialized":
            break
    for start in range(1, count + 1, 1000):
        frames = [
            frame(b'{"jsonrpc":"2.0","id":%d,"method":"roots/list"}' % i)
            for i in range(start, min(start + 1000, count + 1))
        ]
        sock.sendall(b"".join(frames))
    # Deaf from here on: whatever the host writes stays in the socket's buffers (and
    # the socket stays referenced, hence open, while this thread waits).
    threading.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=150_000)
    args = parser.parse_args()
    listener = socket.create_server(("127.0.0.1", 0))
    sys.stdout.write(f"ws://127.0.0.1:{listener.getsockname()[1]}/\n")
    sys.stdout.flush()

    def accept() -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=serve, args=(conn, args.count), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    sys.stdin.buffer.read()  # until the parent closes its end
    os._exit(0)


if __name__ == "__main__":
    main()
