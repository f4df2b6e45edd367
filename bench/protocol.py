#!/usr/bin/env python3
"""Decode + classify throughput of the protocol core, next to json.loads + dict checks.

Prints messages per second for a small response and a 100 KB response, each measured
as the median of several timed rounds, and the ratio. Run: .venv/bin/python
bench/protocol.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from mcpl_host.protocol.envelope import Response, decode_line

SMALL = (
    b'{"jsonrpc":"2.0","id":4711,"result":{"content":[{"type":"text","text":"hello world"}],'
    b'"isError":false}}'
)


def _large() -> bytes:
    item = {"type": "text", "text": "x" * 80, "annotations": {"priority": 0.5}}
    body: dict[str, Any] = {"content": [], "isError": False}
    while len(json.dumps(body)) < 100_000:
        body["content"].append(item)
    message = {"jsonrpc": "2.0", "id": 4712, "result": body}
    return json.dumps(message, separators=(",", ":")).encode()


def baseline(line: bytes) -> object:
    """What a plain client does: json.loads, then the same decisions on a dict."""
    msg = json.loads(line)
    if not isinstance(msg, dict):
        return None
    if "method" in msg:
        method = msg["method"]
        if not isinstance(method, str):
            return "invalid"
        if "id" in msg:
            id_ = msg["id"]
            if isinstance(id_, bool) or not isinstance(id_, (str, int, type(None))):
                return "invalid"
            if isinstance(id_, int) and abs(id_) > 2**53 - 1:
                return "invalid"
            return ("request", method, id_)
        return ("notification", method)
    if "id" in msg:
        id_ = msg["id"]
        ok = isinstance(id_, (str, int)) and not isinstance(id_, bool)
        return ("response", id_ if ok else None, msg.get("result"), msg.get("error"))
    if "error" in msg and msg.get("jsonrpc") == "2.0":
        return ("response", None, None, msg["error"])
    return None


def core(line: bytes) -> object:
    return decode_line(line)


def rate(fn: Callable[[bytes], object], line: bytes, rounds: int) -> float:
    n = 1
    while True:  # size a round to about 0.2 s
        start = time.perf_counter()
        for _ in range(n):
            fn(line)
        if time.perf_counter() - start > 0.2:
            break
        n *= 2
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            fn(line)
        samples.append(n / (time.perf_counter() - start))
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    large = _large()
    assert isinstance(decode_line(SMALL), Response)
    assert isinstance(decode_line(large), Response)
    print(f"python {sys.version.split()[0]}, median of {args.rounds} rounds")
    print(f"{'message':<22}{'mcpl_host msg/s':>18}{'json.loads msg/s':>19}{'ratio':>8}")
    cases = ((f"small ({len(SMALL)} B)", SMALL), (f"large ({len(large) // 1000} KB)", large))
    for name, line in cases:
        ours = rate(core, line, args.rounds)
        theirs = rate(baseline, line, args.rounds)
        print(f"{name:<22}{ours:>18,.0f}{theirs:>19,.0f}{ours / theirs:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
