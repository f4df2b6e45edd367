"""The demo server over stdio with one named fault: ``python -m tests.check.faulty_stdio NAME``.

For the rules that concern a process (how it ends on stdin's EOF or SIGTERM, what its
stdout holds) and for the command line's tests. ``FAULTS`` maps a name to the fault
(:mod:`tests.check.servers`); ``PROCESS_FAULTS`` are the names handled here: ``linger``
(keeps running after stdin's EOF), ``ignore-sigterm``, ``stdout-noise`` (a line that is
not JSON-RPC on stdout after initialize's answer), ``empty-line-crash`` (exits on an
empty line).
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable
from typing import Any, Final

import msgspec

from mcpl_host.demo import Session, answer_line
from tests.check.servers import Fault, FaultFactory, rewrite


def _no_server_info(request: Any, answer: Any) -> Any:
    if isinstance(request, dict) and request.get("method") == "initialize":
        answer["result"].pop("serverInfo", None)
    return answer


class _EmptyLineNoise(Fault):
    # The in-memory servers never see an empty line: their framing skips it.
    def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
        return [b"?"] if not line.strip() else answers


FAULTS: Final[dict[str, FaultFactory]] = {
    "none": Fault,
    "no-server-info": rewrite(_no_server_info),
    "empty-line-noise": _EmptyLineNoise,
}
PROCESS_FAULTS: Final = frozenset({"linger", "ignore-sigterm", "stdout-noise", "empty-line-crash"})


def main(name: str) -> None:
    if name not in FAULTS and name not in PROCESS_FAULTS:
        sys.exit(f"unknown fault {name!r}")
    if name == "ignore-sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    fault = FAULTS.get(name, Fault)(Session())
    encoder = msgspec.json.Encoder()
    write: Callable[[bytes], Any] = sys.stdout.buffer.write
    for raw in sys.stdin.buffer:
        line = raw.rstrip(b"\r\n")
        if name == "empty-line-crash" and not line:
            sys.exit(1)
        answer = answer_line(line, fault.session)
        answers = [] if answer is None else [encoder.encode(answer)]
        for out in fault.exchange(line, answers):
            write(out + b"\n")
        if name == "stdout-noise" and b'"initialize"' in line:
            write(b"server ready\n")
        sys.stdout.buffer.flush()
    if name == "linger":
        time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1])
