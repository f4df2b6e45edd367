"""Picks a protocol revision, then sends one huge JSON array, then serves the host
(reads everything, answers its pings, counts the bytes it was sent back).

``--kind invalid``: entries ``1`` (each an invalid request: 2 bytes of input, a -32600
answer of about 100 bytes); ``--kind ping``: ping requests. On 2024-11-05 or
2025-03-26 the array is a batch; on 2025-11-25 it must be refused whole.
``--entries`` or ``--bytes`` (whichever gives more) sizes it. The host's ping is
answered once the host answered the array (or ``--wait`` seconds on), so that the ping
tells the harness the answer is out.
"""

from __future__ import annotations

import threading

import _stdio


def entries(kind: str, count: int) -> bytes:
    if kind == "invalid":
        return b",".join([b"1"] * count)
    return b",".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % i for i in range(count))


def main() -> None:
    parser = _stdio.parser(__doc__)
    parser.add_argument("--kind", choices=["invalid", "ping"], default="invalid")
    parser.add_argument("--entries", type=int, default=0)
    parser.add_argument("--bytes", type=int, default=0)
    parser.add_argument("--version", default="2024-11-05")
    parser.add_argument("--wait", type=float, default=2.0)
    args = parser.parse_args()
    per_entry = 2 if args.kind == "invalid" else 40
    count = max(args.entries, args.bytes // per_entry, 1)
    stats = _stdio.Stats(args.stats)
    _stdio.handshake(version=args.version, capabilities={"tools": {}})
    _stdio.wait_initialized()
    line = b"[" + entries(args.kind, count) + b"]\n"
    stats.set("array_bytes", len(line))
    stats.set("array_entries", count)
    _stdio.send_raw(line)
    answered = threading.Event()

    def answer_later(request_id: object) -> None:
        answered.wait(args.wait)
        _stdio.send({"jsonrpc": "2.0", "id": request_id, "result": {}})

    def on_message(message: object) -> bool:
        if isinstance(message, dict) and message.get("method") == "ping":
            threading.Thread(target=answer_later, args=(message.get("id"),)).start()
            return True
        if isinstance(message, list) or (isinstance(message, dict) and "method" not in message):
            stats.add("answer_lines")
            answered.set()
        return False

    _stdio.serve_host(stats, on_message)


if __name__ == "__main__":
    main()
