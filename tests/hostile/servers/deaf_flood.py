"""Floods the host with requests once it is initialized and never reads its stdin again.

``--kind roots``: ``roots/list`` (the host answers with its roots); ``ping``; ``null``:
``ping`` with ``"id": null``. Every answer the host owes stays owed: its writes block
once the pipe is full. ``--count 0`` is a server that simply stopped reading.
"""

from __future__ import annotations

import _stdio

KINDS = {
    "roots": lambda i: b'{"jsonrpc":"2.0","id":%d,"method":"roots/list"}\n' % i,
    "ping": lambda i: b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i,
    "null": lambda i: b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n',
}


def main() -> None:
    parser = _stdio.parser(__doc__)
    parser.add_argument("--count", type=int, default=150_000)
    parser.add_argument("--kind", choices=sorted(KINDS), default="roots")
    args = parser.parse_args()
    _stdio.exit_when_host_hangs_up()
    _stdio.handshake(capabilities={"tools": {}})
    # Deaf once the host is through its handshake (pings-before-initialize is a row of
    # its own): the flood is what this row measures.
    _stdio.wait_initialized()
    make = KINDS[args.kind]
    chunk: list[bytes] = []
    for i in range(1, args.count + 1):
        chunk.append(make(i))
        if len(chunk) == 1000:
            _stdio.send_raw(b"".join(chunk))
            chunk.clear()
    if chunk:
        _stdio.send_raw(b"".join(chunk))
    _stdio.sleep_forever()


if __name__ == "__main__":
    main()
