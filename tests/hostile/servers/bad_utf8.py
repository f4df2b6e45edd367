"""Invalid UTF-8 where a parser meets it late: a batch (``--version 2024-11-05`` or
2025-03-26) whose middle entry has a method with a byte that is not UTF-8 between two
valid pings, and a single line whose typed decode fails (a number for a method) with
invalid UTF-8 in its ``jsonrpc`` member. Answers the host's ping only once the batch's
answer arrived (or after ``--wait`` seconds), so the host's ping is the sync point; the
stats say which batch ids were answered."""

from __future__ import annotations

import threading

import _stdio

BATCH = (
    b'[{"jsonrpc":"2.0","id":"v1","method":"ping"},'
    b'{"jsonrpc":"2.0","id":"bad","method":"pi\xffng"},'
    b'{"jsonrpc":"2.0","id":"v2","method":"ping"}]\n'
)
SINGLE = b'{"method":5,"jsonrpc":"2.\xff","id":"single"}\n'


def main() -> None:
    parser = _stdio.parser(__doc__)
    parser.add_argument("--version", default="2024-11-05")
    parser.add_argument("--wait", type=float, default=3.0)
    args = parser.parse_args()
    stats = _stdio.Stats(args.stats)
    stats.set("answered", [])
    batch_answered = threading.Event()
    _stdio.handshake(version=args.version, capabilities={"tools": {}})
    _stdio.wait_initialized()
    _stdio.send_raw(SINGLE + BATCH)

    def answer_later(request_id: object) -> None:
        batch_answered.wait(args.wait)
        _stdio.send({"jsonrpc": "2.0", "id": request_id, "result": {}})

    def on_message(message: object) -> bool:
        if isinstance(message, list):
            ids = sorted(str(m.get("id")) for m in message if isinstance(m, dict))
            stats.set("answered", ids)
            batch_answered.set()
        elif isinstance(message, dict) and message.get("id") == "single":
            stats.set("single_answered", message.get("error", {}).get("code"))
        elif isinstance(message, dict) and message.get("method") == "ping":
            threading.Thread(target=answer_later, args=(message.get("id"),)).start()
            return True
        stats.write()
        return False

    _stdio.serve_host(stats, on_message)


if __name__ == "__main__":
    main()
