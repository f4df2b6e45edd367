"""After the handshake sends ``--count`` messages of each kind the JSON parser chokes
on: a request whose id is a 5,000-digit integer, a request whose params nest 2,000
deep, and a line that is 2,000 nested arrays, while it serves the host, counting the
-32600 answers it gets."""

from __future__ import annotations

import threading

import _stdio


def main() -> None:
    parser = _stdio.parser(__doc__)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--digits", type=int, default=5000)
    parser.add_argument("--depth", type=int, default=2000)
    args = parser.parse_args()
    stats = _stdio.Stats(args.stats)
    _stdio.handshake(capabilities={"tools": {}})
    _stdio.wait_initialized()
    big_id = b'{"jsonrpc":"2.0","id":' + b"9" * args.digits + b',"method":"ping"}\n'
    deep = b"[" * args.depth + b"]" * args.depth
    deep_params = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + deep + b"}}\n"
    group = big_id + deep_params + deep + b"\n"

    def burst() -> None:
        # From a thread, a group per write, while the main thread reads the host's
        # answers: a server that writes without reading would be stopped by the host's
        # bound on answers owed (that is the deaf rows' case, not this one's).
        for _ in range(args.count):
            _stdio.send_raw(group)
        stats.set("sent", 3 * args.count)

    threading.Thread(target=burst, daemon=True).start()

    def on_message(message: object) -> bool:
        if isinstance(message, dict) and "method" not in message:
            error = message.get("error")
            if isinstance(error, dict) and error.get("code") == -32600:
                stats.add("invalid_request_answers")
        return False

    _stdio.serve_host(stats, on_message)


if __name__ == "__main__":
    main()
