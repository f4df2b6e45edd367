"""Sends pings before answering initialize, and never reads its stdin after initialize.

Every ping is a request the host answers during the handshake; none of those answers
is read, so they stay owed.
"""

from __future__ import annotations

import _stdio


def main() -> None:
    parser = _stdio.parser(__doc__)
    parser.add_argument("--count", type=int, default=100_000)
    args = parser.parse_args()
    _stdio.exit_when_host_hangs_up()

    def pings() -> None:
        for start in range(1, args.count + 1, 1000):
            end = min(start + 1000, args.count + 1)
            _stdio.send_raw(
                b"".join(
                    b'{"jsonrpc":"2.0","id":"p%d","method":"ping"}\n' % i for i in range(start, end)
                )
            )

    _stdio.handshake(before_answer=pings)
    _stdio.sleep_forever()


if __name__ == "__main__":
    main()
