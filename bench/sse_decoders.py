#!/usr/bin/env python3
"""mcpl_host's SSE decoder next to httpx-sse's, the library that would replace it.

Both are fed the same bytes in 16 KiB chunks (httpx-sse's line decoder takes text, so its
side includes the UTF-8 decode httpx would do). Reports events per second on a stream
of JSON-RPC answers, the peak memory each holds for one endless ``data:`` line, and
which of the WHATWG rules each keeps. docs/libraries.md has the verdict.

    .venv/bin/pip install httpx-sse==0.4.3
    .venv/bin/python bench/sse_decoders.py
"""

from __future__ import annotations

import codecs
import statistics
import time
import tracemalloc
from collections.abc import Callable, Iterator

from mcpl_host.protocol.sse import SseDecoder

CHUNK = 16 * 1024
Decode = Callable[[Iterator[bytes]], list[tuple[str, str]]]


def ours(chunks: Iterator[bytes], max_event_bytes: int = 1024 * 1024) -> list[tuple[str, str]]:
    decoder = SseDecoder(max_event_bytes=max_event_bytes)
    out = [(e.event, e.data) for chunk in chunks for e in decoder.feed(chunk)]
    return out + ([("retry", str(decoder.retry_ms))] if decoder.retry_ms is not None else [])


def httpx_sse(chunks: Iterator[bytes]) -> list[tuple[str, str]]:
    from httpx_sse._decoders import SSEDecoder, SSELineDecoder

    text = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines, decoder = SSELineDecoder(), SSEDecoder()
    out = []
    retry = None
    for chunk in chunks:
        for line in lines.decode(text.decode(chunk)):
            event = decoder.decode(line)
            if event is not None:
                out.append((event.event or "message", event.data))
                retry = event.retry if event.retry is not None else retry
    return out + ([("retry", str(retry))] if retry is not None else [])


def _chunks(stream: bytes) -> Iterator[bytes]:
    return (stream[i : i + CHUNK] for i in range(0, len(stream), CHUNK))


def speed(decode: Decode) -> float:
    body = '{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}]}}'
    stream = b"".join(
        f"id: {i}\nevent: message\ndata: {body % (i, 'x' * 400)}\n\n".encode()
        for i in range(20_000)
    )
    assert len(decode(_chunks(stream))) == 20_000
    rounds = []
    for _ in range(5):
        started = time.perf_counter()
        decode(_chunks(stream))
        rounds.append(time.perf_counter() - started)
    return 20_000 / statistics.median(rounds)


def endless_line_peak(decode: Decode, mib: int = 64) -> float:
    """Peak MiB held while a server sends ``mib`` MiB of one data line, never ended."""

    def endless() -> Iterator[bytes]:
        yield b"data: "
        block = b"x" * CHUNK
        for _ in range(mib * 1024 * 1024 // CHUNK):
            yield block

    tracemalloc.start()
    decode(endless())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


RULES: dict[str, tuple[bytes, list[tuple[str, str]]]] = {
    # rule: (stream, the events the WHATWG algorithm dispatches)
    "an event without data is not dispatched": (b"id: 1\n\n", []),
    "retry must be all ASCII digits": (b"retry: +5\ndata: a\n\n", [("message", "a")]),
    "an event ended by CR is dispatched without waiting for the next chunk": (
        b"data: a\rdata: b\r\r",
        [("message", "a\nb")],
    ),
    "a NUL in id is ignored": (b"id: a\x00b\ndata: x\n\n", [("message", "x")]),
}


def main() -> None:
    decoders: dict[str, Decode] = {"mcpl_host": ours, "httpx-sse 0.4.3": httpx_sse}
    print("| decoder | events/s (1 KiB JSON-RPC answers) | peak MiB, 64 MiB endless line |")
    print("|---|--:|--:|")
    for name, decode in decoders.items():
        print(f"| {name} | {speed(decode):,.0f} | {endless_line_peak(decode):.1f} |")
    print()
    for rule, (stream, expected) in RULES.items():
        verdicts = []
        for name, decode in decoders.items():
            got = decode(iter([stream]))
            verdicts.append(f"{name}: {'kept' if got == expected else f'not kept ({got})'}")
        print(f"- {rule}: " + "; ".join(verdicts))


if __name__ == "__main__":
    main()
