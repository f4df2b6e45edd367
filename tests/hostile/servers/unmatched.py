"""Costs the host a log line per message, if it lets it: ``--kind responses`` sends
``--count`` responses whose ids match nothing; ``--kind busy`` sends ``--count`` pings at
once, past the host's bound on server requests in flight ("host busy" refusals). Keeps
reading all the while; answers the host's ping once the flood is out."""

from __future__ import annotations

import threading

import _stdio


def flood(kind: str, count: int) -> None:
    for start in range(0, count, 1000):
        ids = range(start, min(start + 1000, count))
        if kind == "responses":
            lines = [b'{"jsonrpc":"2.0","id":%d,"result":{}}\n' % (10**9 + i) for i in ids]
        else:
            lines = [b'{"jsonrpc":"2.0","id":"b%d","method":"ping"}\n' % i for i in ids]
        _stdio.send_raw(b"".join(lines))


def main() -> None:
    parser = _stdio.parser(__doc__)
    parser.add_argument("--kind", choices=["responses", "busy"], default="responses")
    parser.add_argument("--count", type=int, default=50_000)
    args = parser.parse_args()
    stats = _stdio.Stats(args.stats)
    _stdio.handshake(capabilities={"tools": {}})
    _stdio.wait_initialized()
    flooder = threading.Thread(target=flood, args=(args.kind, args.count))
    flooder.start()

    def answer_after_flood(request_id: object) -> None:
        flooder.join()
        _stdio.send({"jsonrpc": "2.0", "id": request_id, "result": {}})

    def on_message(message: object) -> bool:
        if isinstance(message, dict) and message.get("method") == "ping":
            threading.Thread(target=answer_after_flood, args=(message.get("id"),)).start()
            return True
        if isinstance(message, dict) and "error" in message:
            stats.add("errors_in")
        return False

    _stdio.serve_host(stats, on_message)


if __name__ == "__main__":
    main()
