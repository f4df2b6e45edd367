"""Answers ``tools/list`` with huge pages: ``--bytes`` of tools per page (in the shape
that costs a decoder most, below), ``--pages`` pages chained by ``nextCursor``.
"""

from __future__ import annotations

import json

import _stdio

# What costs a decoder most per byte received, in a page a client must accept: many
# tools, each schema holding empty arrays (3 bytes of JSON, a list object each once
# decoded; JSON Schema lets a schema carry keywords it does not know).
TOOL = '{"name":"t%07d","inputSchema":{"type":"object","x":[' + ",".join(["[]"] * 20) + "]}}"


def page(size: int, number: int, pages: int, request_id: object) -> bytes:
    per_tool = len(TOOL % 0) + 1
    count = max(size // per_tool, 1)
    first = number * count
    tools = ",".join(TOOL % (first + i) for i in range(count))
    cursor = "" if number + 1 == pages else f',"nextCursor":"page-{number + 1}"'
    head = '{"jsonrpc":"2.0","id":' + json.dumps(request_id) + ',"result":{"tools":['
    return (head + tools + "]" + cursor + "}}\n").encode()


def main() -> None:
    parser = _stdio.parser(__doc__)
    parser.add_argument("--bytes", type=int, default=15 * 1024 * 1024)
    parser.add_argument("--pages", type=int, default=1)
    args = parser.parse_args()
    stats = _stdio.Stats(args.stats)
    _stdio.handshake(capabilities={"tools": {}})

    def on_message(message: object) -> bool:
        if not isinstance(message, dict) or message.get("method") != "tools/list":
            return False
        cursor = (message.get("params") or {}).get("cursor") or "page-0"
        number = int(cursor.removeprefix("page-"))
        stats.add("pages_sent")
        _stdio.send_raw(page(args.bytes, number, args.pages, message.get("id")))
        return True

    _stdio.serve_host(stats, on_message)


if __name__ == "__main__":
    main()
