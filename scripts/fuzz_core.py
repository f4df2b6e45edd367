#!/usr/bin/env python3
"""Fuzz the pure protocol core: no peer input may make it raise (issue 17, deliverable 4).

A mutation fuzz seeded from valid MCP messages and batches of every revision. Each input
is mutated (bytes flipped, inserted, deleted, duplicated; two inputs spliced; ids and
methods swapped for hostile values; deep nesting, huge numbers, invalid UTF-8, lone
surrogate escapes, stray newlines) and goes through the whole core as the driver uses
it:

- framing: ``LineDecoder.feed`` in random chunks, with a small bound some of the time;
- ``decode_line``, and ``classify_entry`` on the same text;
- for an array: ``plan_batch`` under every profile (and before negotiation) with a
  random cap, ``BatchAnswers`` filled or dropped in random order, ``encode``d, and the
  answer line checked against the documented byte bound;
- ``Handshake.receive``, ``describe_error_member`` and ``Redactor.log_json`` on what a
  response carries.

Every result must be one of the typed outcomes; anything raised is a failure, printed
with the input (hex) that caused it. ``--guided N`` first runs N inputs under a line
tracer of ``mcpl_host/protocol`` and keeps each input that reaches a new line pair as
a seed (cheap coverage guidance; atheris is not needed). Prints lines/s and the count
of each outcome; exits 1 on any failure.

    .venv/bin/python scripts/fuzz_core.py --lines 1000000 --seed 0 --guided 20000
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import msgspec

import mcpl_host.protocol as _protocol
from mcpl_host.protocol.batch import (
    ANSWER_BYTES_PER_ENTRY,
    DEFAULT_MAX_BATCH_ENTRIES,
    BatchAnswers,
    BatchPlan,
    BatchRefused,
    plan_batch,
)
from mcpl_host.protocol.envelope import (
    Batch,
    Ignored,
    InvalidRequest,
    Notification,
    Request,
    Response,
    classify_entry,
    decode_line,
)
from mcpl_host.protocol.errors import INVALID_REQUEST, McplHostError
from mcpl_host.protocol.framing import LineDecoder, OversizedLine
from mcpl_host.protocol.handshake import (
    Established,
    Failed,
    Handshake,
    HandshakeState,
    Send,
    Skip,
    describe_error_member,
)
from mcpl_host.protocol.messages import ResultAnswer, encode, error_answer
from mcpl_host.protocol.profiles import KNOWN_REVISIONS, PROFILES, Profile
from mcpl_host.protocol.redact import Redactor

CLASSIFIED = (Request, Notification, Response, InvalidRequest, Ignored)
PLAN_PROFILES: tuple[Profile | None, ...] = (None, *PROFILES.values())
REDACTOR = Redactor(secrets=["sk-fuzz-secret-0000"])

# -- the seed corpus ------------------------------------------------------------------


def _seed_messages() -> list[Any]:
    """Valid messages of every revision, as a server would write them to the host."""
    text = {"type": "text", "text": "hello"}
    tool = {
        "name": "add",
        "description": "adds",
        "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}},
    }
    messages: list[Any] = []
    for revision in KNOWN_REVISIONS:
        messages.append(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {
                    "protocolVersion": revision,
                    "capabilities": {"tools": {"listChanged": True}, "logging": {}},
                    "serverInfo": {"name": "fuzz", "version": "1.0"},
                    "instructions": "be nice",
                },
            }
        )
    messages += [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 2, "result": {"tools": [tool], "nextCursor": "c2"}},
        {"jsonrpc": "2.0", "id": 3, "result": {"content": [text], "isError": False}},
        {
            "jsonrpc": "2.0",
            "id": 4,
            "result": {"content": [text], "structuredContent": {"sum": 3}},
        },
        {"jsonrpc": "2.0", "id": 5, "result": {"contents": [{"uri": "file:///a", "text": "x"}]}},
        {"jsonrpc": "2.0", "id": 6, "result": {"messages": [{"role": "user", "content": text}]}},
        {"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "Method not found"}},
        {"jsonrpc": "2.0", "id": "s-8", "error": {"code": -32602, "message": "bad", "data": [1]}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}},
        {"jsonrpc": "2.0", "id": 9, "result": {"ok": True}, "error": None},
        {"jsonrpc": "2.0", "id": 10, "method": "ping"},
        {"jsonrpc": "2.0", "id": "r-11", "method": "roots/list"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {
            "jsonrpc": "2.0",
            "id": 12,
            "method": "sampling/createMessage",
            "params": {
                "messages": [{"role": "user", "content": text}],
                "maxTokens": 100,
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 13,
            "method": "elicitation/create",
            "params": {"message": "name?", "requestedSchema": {"type": "object"}},
        },
        {"jsonrpc": "2.0", "id": 14, "method": "tasks/get", "params": {"taskId": "t1"}},
        {"jsonrpc": "2.0", "id": 15, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": 3, "progress": 5, "total": 10, "message": "half"},
        },
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "logger": "x", "data": {"k": [1, 2]}},
        },
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12}},
        {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "a"}},
        # What Python's json.dumps writes for an undecodable file name: a lone surrogate.
        {"jsonrpc": "2.0", "id": 16, "result": {"contents": [{"uri": "file:///\udcff"}]}},
        {"jsonrpc": "2.0", "id": 17, "result": {"name": "caf\u00e9 \U0001f600"}},
    ]
    return messages


def seed_corpus() -> list[bytes]:
    """Lines (no newline): each message alone, and batches as 2024-11-05 and 2025-03-26
    servers send them, in three encodings."""
    messages = _seed_messages()
    rng = random.Random(1)
    corpus: list[bytes] = []
    for message in messages:
        corpus.append(json.dumps(message).encode())
        corpus.append(json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        corpus.append(json.dumps(message, separators=(",", ":")).encode())
    requests = [m for m in messages if "method" in m]
    for size in (1, 2, 3, 5, 8):
        corpus.append(json.dumps(rng.sample(messages, size)).encode())
        corpus.append(json.dumps(rng.sample(requests, min(size, len(requests)))).encode())
    corpus += [b"[]", b"[1]", b"[{}]", b"{}", b"1", b'"text"', b"null", b"server says hi"]
    return corpus


# -- mutation -------------------------------------------------------------------------

HOSTILE_VALUES: tuple[bytes, ...] = (
    b"1" * 5000,
    b"-" + b"9" * 5000,
    b"9" * 17,
    b"9007199254740992",
    b"9007199254740991",
    b"-0",
    b"1e400",
    b"1.5",
    b"-0.0",
    b"null",
    b"true",
    b"{}",
    b"[]",
    b'""',
    b'"\\ud800"',
    b'"\\udc00\\ud800"',
    b'"\\\\ud800"',
    b'"\\ud83d\\ude00"',
    b'"\xff"',
    b'"\xed\xa0\x80"',
    b'"\xc0\x80"',
    b'"\\u0000"',
    b'"' + b"x" * 300 + b'"',
    b'{"code":' + b"7" * 5000 + b"}",
    b'{"code":1,"message":"\xff"}',
    b"[" * 990 + b"]" * 990,
    b"[" * 1100 + b"]" * 1100,
    b'{"a":' * 600 + b"1" + b"}" * 600,
)
HOSTILE_BYTES: tuple[bytes, ...] = (
    b"\\ud800",
    b"\\udfff",
    b"\\ud800\\udc00",
    b"\\",
    b"\\\\",
    b"\xff",
    b"\xfe",
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\x00",
    b"\n",
    b"\r\n",
    b'"',
    b",",
    b":",
    b"[",
    b"]",
    b"{",
    b"}",
    b" ",
    b"[" * 1000,
    b"]" * 1000,
    b"1" * 4400,
)
STRING_BYTES: tuple[bytes, ...] = (
    b"\\ud800",
    b"\\udc00",
    b"\\udbff\\udfff",
    b"\\ud800\\ud800\\udc00",
    b"\\\\ud800",
    b"\\\\\\ud800",
    b"\\u0000",
    b"\\n",
    b"\\u2028",
    b"\xff",
    b"\xc3\x28",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xe2\x80\xae",
    b"\x1b[31m",
    b"sk-fuzz-secret-0000",
)
MEMBERS = (b'"id":', b'"method":', b'"jsonrpc":', b'"params":', b'"result":', b'"error":')


def _flip(rng: random.Random, data: bytearray, _corpus: list[bytes]) -> None:
    if data:
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)


def _replace_byte(rng: random.Random, data: bytearray, _corpus: list[bytes]) -> None:
    if data:
        data[rng.randrange(len(data))] = rng.randrange(256)


def _insert(rng: random.Random, data: bytearray, _corpus: list[bytes]) -> None:
    at = rng.randrange(len(data) + 1)
    data[at:at] = rng.choice(HOSTILE_BYTES)


def _delete(rng: random.Random, data: bytearray, _corpus: list[bytes]) -> None:
    if data:
        start = rng.randrange(len(data))
        del data[start : start + rng.randrange(1, 16)]


def _duplicate(rng: random.Random, data: bytearray, _corpus: list[bytes]) -> None:
    if data:
        start = rng.randrange(len(data))
        chunk = data[start : start + rng.randrange(1, 64)]
        at = rng.randrange(len(data) + 1)
        data[at:at] = chunk * rng.choice((1, 2, 50))


def _splice(rng: random.Random, data: bytearray, corpus: list[bytes]) -> None:
    other = rng.choice(corpus)
    cut = rng.randrange(len(data) + 1)
    data[cut:] = other[rng.randrange(len(other) + 1) :]


def _member_value(rng: random.Random, data: bytearray, _corpus: list[bytes]) -> None:
    # Swap the value after a member name for a hostile one (the token ends at , or }).
    member = rng.choice(MEMBERS)
    at = bytes(data).find(member)
    if at < 0:
        return
    start = at + len(member)
    end = start
    while end < len(data) and data[end] not in b",}":
        end += 1
    data[start:end] = rng.choice(HOSTILE_VALUES)


def _wrap(rng: random.Random, data: bytearray, corpus: list[bytes]) -> None:
    # Make (or grow) a batch: the line becomes one entry of an array.
    entries = [bytes(data), *(rng.choice(corpus) for _ in range(rng.randrange(3)))]
    rng.shuffle(entries)
    data[:] = b"[" + b",".join(entries) + b"]"


def _nest(rng: random.Random, data: bytearray, _corpus: list[bytes]) -> None:
    depth = rng.choice((500, 980, 995, 1000, 1020, 5000))
    data[:] = b"[" * depth + bytes(data) + b"]" * depth


def _truncate(rng: random.Random, data: bytearray, _corpus: list[bytes]) -> None:
    del data[rng.randrange(len(data) + 1) :]


def _in_string(rng: random.Random, data: bytearray, _corpus: list[bytes]) -> None:
    # Hostile text inside a string value (after `:"`), where the line stays JSON-shaped.
    found = data.find(b':"', rng.randrange(len(data) + 1))
    if found < 0:
        found = data.find(b':"')
    if found >= 0:
        at = found + 2
        data[at:at] = rng.choice(STRING_BYTES)


def _many_entries(rng: random.Random, data: bytearray, corpus: list[bytes]) -> None:
    # An array around the cap; its entry is kept short so the input stays small.
    short = [c for c in corpus if len(c) <= 64] or [b'{"id":1,"method":"ping"}']
    entry = bytes(data) if len(data) <= 64 else rng.choice(short)
    count = rng.choice((DEFAULT_MAX_BATCH_ENTRIES, DEFAULT_MAX_BATCH_ENTRIES + 1, 3000))
    data[:] = b"[" + b",".join([entry] * count) + b"]"


# Weights: the structure-aware mutators keep most lines JSON, so the core's deeper
# branches run; the byte-level ones cover everything else.
MUTATORS: tuple[tuple[Callable[[random.Random, bytearray, list[bytes]], None], int], ...] = (
    (_flip, 4),
    (_replace_byte, 4),
    (_insert, 6),
    (_delete, 3),
    (_duplicate, 3),
    (_splice, 4),
    (_member_value, 30),
    (_in_string, 20),
    (_wrap, 12),
    (_nest, 1),
    (_truncate, 2),
    (_many_entries, 1),
)
_MUTATOR_FUNCS = [m for m, _ in MUTATORS]
_MUTATOR_WEIGHTS = [w for _, w in MUTATORS]


def mutate(rng: random.Random, corpus: list[bytes]) -> bytes:
    data = bytearray(rng.choice(corpus))
    for mutator in rng.choices(_MUTATOR_FUNCS, _MUTATOR_WEIGHTS, k=rng.choice((1, 1, 1, 2, 2, 3))):
        mutator(rng, data, corpus)
        if len(data) > 256 * 1024:  # keep inputs small enough to run a million of them
            del data[256 * 1024 :]
    return bytes(data)


# -- the oracle: one framed line through the core ---------------------------------------


class Checker:
    """Runs lines through the core and counts what came out. Every check that fails
    raises AssertionError; the caller reports it with the input."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.counts: collections.Counter[str] = collections.Counter()
        self._handshake = self._new_handshake()

    @staticmethod
    def _new_handshake() -> Handshake:
        return Handshake(
            allowlist=KNOWN_REVISIONS[::-1],
            request_id=0,
            capabilities={"roots": {}},
            client_info={"name": "fuzz", "version": "0"},
            redactor=REDACTOR,
        )

    def frame(self, data: bytes, max_message_bytes: int) -> Iterator[bytes]:
        """Feed ``data`` and a newline to a LineDecoder in random chunks."""
        decoder = LineDecoder(max_message_bytes)
        stream = data + b"\n"
        at = 0
        framed: list[bytes | OversizedLine] = []
        while at < len(stream):
            size = self.rng.choice((1, 7, 64, 4096, len(stream)))
            framed += decoder.feed(stream[at : at + size])
            assert decoder.buffered <= max_message_bytes + size, "framing held too much"
            at += size
        framed += decoder.close()
        for item in framed:
            if isinstance(item, OversizedLine):
                assert item.size > max_message_bytes
                self.counts["framing: oversized line"] += 1
                continue
            assert type(item) is bytes, f"framing gave {type(item).__name__}"
            assert b"\n" not in item
            assert 0 < len(item) <= max_message_bytes
            yield item

    def line(self, line: bytes) -> None:
        item = decode_line(line)
        if type(item) is Batch:
            self.counts["line: batch"] += 1
            self._batch(line, item)
        else:
            assert isinstance(item, CLASSIFIED), f"decode_line gave {type(item).__name__}"
            self.counts[f"line: {_label(item)}"] += 1
            entry = classify_entry(msgspec.Raw(line))
            assert isinstance(entry, CLASSIFIED), f"classify_entry gave {type(entry).__name__}"
            self._classified(item)
        self._handshake_receive(item)

    def _classified(
        self, item: Request | Notification | Response | InvalidRequest | Ignored
    ) -> None:
        if type(item) is InvalidRequest:
            # The driver answers it: the answer must encode, whatever the id.
            wire = encode(error_answer(item.answer_id, INVALID_REQUEST, item.message))
            assert msgspec.json.decode(wire)["error"]["code"] == INVALID_REQUEST
        elif type(item) is Response:
            code, message, _ = describe_error_member(item.error, REDACTOR)
            assert code is None or type(code) is int
            assert type(message) is str
            if item.error is not None:
                assert type(REDACTOR.log_json(item.error)) is str

    def _batch(self, line: bytes, batch: Batch) -> None:
        for profile in PLAN_PROFILES:
            cap = self.rng.choice((1, 3, DEFAULT_MAX_BATCH_ENTRIES))
            plan = plan_batch(batch, profile, max_entries=cap)
            if type(plan) is Ignored:
                assert profile is None
                self.counts["batch: ignored"] += 1
            elif type(plan) is BatchRefused:
                assert plan.answer.error.code == INVALID_REQUEST
                assert plan.answer.id is None
                assert len(encode(plan.answer)) <= ANSWER_BYTES_PER_ENTRY
                self.counts[f"batch: refused ({plan.outcome})"] += 1
            else:
                assert type(plan) is BatchPlan, f"plan_batch gave {type(plan).__name__}"
                assert profile is not None
                assert profile.accepts_batches
                assert 0 < len(plan.entries) <= cap
                self.counts["batch: planned"] += 1
                self._answers(line, plan)

    def _answers(self, line: bytes, plan: BatchPlan) -> None:
        for entry in plan.entries:
            assert isinstance(entry, CLASSIFIED), f"a plan entry is {type(entry).__name__}"
            assert type(entry) is not Ignored, "an entry of a batch is never ignored"
            self.counts[f"entry: {_label(entry)}"] += 1
        answers = BatchAnswers(plan)
        indexes = list(answers.slot_of)
        self.rng.shuffle(indexes)
        for index in indexes:
            entry = plan.entries[index]
            assert type(entry) is Request
            if self.rng.random() < 0.1:
                answers.drop(index)
            else:
                answers.fill(index, ResultAnswer(id=entry.id, result={}))
        assert answers.complete
        written = answers.encode()
        if written is None:
            return
        assert written.endswith(b"\n")
        assert written.count(b"\n") == 1
        decoded = msgspec.json.decode(written)
        assert isinstance(decoded, list)
        assert decoded
        bound = len(line) + len(plan.entries) * ANSWER_BYTES_PER_ENTRY
        assert len(written) <= bound, f"batch answer of {len(written)} bytes > bound {bound}"

    def _handshake_receive(self, item: Any) -> None:
        step = self._handshake.receive(item)
        if type(step) is Send:
            assert step.line.endswith(b"\n")
        elif type(step) is Failed:
            assert isinstance(step.error, McplHostError)
        elif type(step) is Established:
            assert step.profile.revision in PROFILES
        else:
            assert type(step) is Skip, f"receive gave {type(step).__name__}"
        self.counts[f"handshake: {type(step).__name__.lower()}"] += 1
        if self._handshake.state is not HandshakeState.WAITING:
            self._handshake = self._new_handshake()


def _label(item: Request | Notification | Response | InvalidRequest | Ignored) -> str:
    if type(item) is Ignored:
        reason = item.reason
        # Kinds of value stay apart, the rest by their fixed text.
        return f"ignored ({reason})"
    if type(item) is InvalidRequest and item.faults == (
        "the message nests arrays and objects too deeply",
    ):
        return "invalid request (nested too deeply)"
    return {
        Request: "request",
        Notification: "notification",
        Response: "response",
        InvalidRequest: "invalid request",
    }[type(item)]


# -- coverage guidance ----------------------------------------------------------------

_PROTOCOL_DIR = str(Path(_protocol.__file__).parent)


class LineCoverage:
    """(file, previous line, line) pairs run in mcpl_host/protocol, via sys.settrace."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, int, int]] = set()
        self._new = False
        self._last: dict[int, int] = {}

    def _global(self, frame: FrameType, event: str, _arg: object) -> Any:
        if event == "call" and frame.f_code.co_filename.startswith(_PROTOCOL_DIR):
            self._last[id(frame)] = frame.f_code.co_firstlineno
            return self._local
        return None

    def _local(self, frame: FrameType, event: str, _arg: object) -> Any:
        if event == "line":
            key = id(frame)
            pair = (frame.f_code.co_filename, self._last.get(key, 0), frame.f_lineno)
            self._last[key] = frame.f_lineno
            if pair not in self.seen:
                self.seen.add(pair)
                self._new = True
        return self._local

    def run(self, action: Callable[[], None]) -> bool:
        """Run ``action`` traced; True when it reached a pair never seen before."""
        self._new = False
        previous = sys.gettrace()  # a coverage tool's tracer, say: given back after
        sys.settrace(self._global)
        try:
            action()
        finally:
            sys.settrace(previous)
            self._last.clear()
        return self._new


# -- the run ---------------------------------------------------------------------------


class Failure(msgspec.Struct):
    data: bytes
    error: str  # the traceback
    kind: str  # the exception's type and where it was raised, to count alike failures


def _failure(data: bytes, exc: BaseException) -> Failure:
    where = traceback.extract_tb(exc.__traceback__)[-1]
    kind = f"{type(exc).__name__} at {Path(where.filename).name}:{where.lineno} ({where.name})"
    return Failure(data, traceback.format_exc(), kind)


def fuzz_one(checker: Checker, data: bytes, max_message_bytes: int) -> int:
    """Frame ``data`` and check every line; return how many lines were framed."""
    framed = 0
    for line in checker.frame(data, max_message_bytes):
        framed += 1
        checker.line(line)
    return framed


def run(
    lines: int, seed: int, guided: int, max_failures: int
) -> tuple[int, float, Checker, list[Failure], int, int]:
    rng = random.Random(seed)
    corpus = seed_corpus()
    seeds = len(corpus)
    checker = Checker(random.Random(seed + 1))
    failures: list[Failure] = []
    coverage = LineCoverage() if guided else None
    done = 0
    inputs = 0
    started = time.perf_counter()
    while done < lines and len(failures) < max_failures:
        data = mutate(rng, corpus)
        # Mostly the default bound; sometimes a small one, so lines are cut as oversized.
        bound = 4096 if rng.random() < 0.05 else 1024 * 1024
        inputs += 1
        try:
            if coverage is not None and inputs <= guided:
                framed = 0

                def action(data: bytes = data, bound: int = bound) -> None:
                    nonlocal framed
                    framed = fuzz_one(checker, data, bound)

                if coverage.run(action):
                    corpus.append(data)
            else:
                framed = fuzz_one(checker, data, bound)
        except Exception as exc:
            failures.append(_failure(data, exc))
            framed = 1
        done += framed
    seconds = time.perf_counter() - started
    return done, seconds, checker, failures, len(corpus) - seeds, inputs


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=1_000_000, help="framed lines to check")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--guided", type=int, default=0, help="inputs run first under line coverage (0: none)"
    )
    parser.add_argument("--max-failures", type=int, default=20, help="stop after this many")
    args = parser.parse_args()
    done, seconds, checker, failures, grown, inputs = run(
        args.lines, args.seed, args.guided, args.max_failures
    )
    print(f"lines         {done}  (from {inputs} inputs, seed {args.seed})")
    print(f"lines/s       {done / seconds:,.0f}  ({seconds:.1f} s)")
    if args.guided:
        print(f"corpus grown  {grown} inputs kept for new coverage in the first {args.guided}")
    print(f"failures      {len(failures)}")
    print("outcomes:")
    for label, count in sorted(checker.counts.items()):
        print(f"  {count:>10}  {label}")
    if failures:
        print("failures by kind:")
        kinds = collections.Counter(failure.kind for failure in failures)
        for kind, count in kinds.most_common():
            print(f"  {count:>10}  {kind}")
    shown: set[str] = set()
    for failure in failures:
        if failure.kind in shown:
            continue
        shown.add(failure.kind)  # the first input of each kind, whole
        print("-" * 72)
        print(f"input ({len(failure.data)} bytes, hex): {failure.data.hex()}")
        print(failure.error)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
