"""Batch rules against the demo server, each with the fault that breaks it."""

from __future__ import annotations

from typing import Any

import msgspec

from mcpl_host.check import Report
from mcpl_host.demo import answer_line

from .servers import Fault, run, verdict

ACCEPTED, EMPTY, REFUSED = "batches.accepted-2025-03-26", "batches.empty-array", "batches.refused"


def _detail(report: Report, rule_id: str) -> str:
    (finding,) = [f for f in report.findings if f.rule.id == rule_id]
    return finding.detail


class _Batches(Fault):
    """Answers each batch line with ``batch(self, entries)`` (lines to write)."""

    def batch(self, entries: list[Any]) -> list[bytes]:
        raise NotImplementedError

    def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
        if line.startswith(b"["):
            return self.batch(msgspec.json.decode(line))
        return answers

    def each(self, entries: list[Any]) -> list[Any]:
        """The demo's answers to the entries, one by one."""
        out = [answer_line(msgspec.json.encode(e), self.session) for e in entries]
        return [a for a in out if a is not None]


async def test_every_batch_rule_passes_on_the_demo_server() -> None:
    report = await run(Fault, "batches")
    assert [(f.rule.id, f.verdict.value) for f in report.findings] == [
        (ACCEPTED, "pass"),
        (EMPTY, "pass"),
        (REFUSED, "pass"),
    ]
    assert _detail(report, REFUSED) == (
        "answered a batch of two requests on 2025-11-25 with -32600 and id null"
    )
    (accepted,) = [f for f in report.findings if f.rule.id == ACCEPTED]
    assert accepted.evidence[0].text.startswith('[{"jsonrpc":"2.0","id":')


async def test_a_batch_on_2025_03_26() -> None:
    class OneAnswer(_Batches):
        def batch(self, entries: list[Any]) -> list[bytes]:
            return [msgspec.json.encode(self.each(entries)[:1])] if entries else []

    report = await run(OneAnswer, ACCEPTED)
    assert verdict(report, ACCEPTED) == "fail"

    class Separately(_Batches):
        def batch(self, entries: list[Any]) -> list[bytes]:
            return [msgspec.json.encode(a) for a in self.each(entries)]

    report = await run(Separately, ACCEPTED)
    assert verdict(report, ACCEPTED) == "warn"  # JSON-RPC: the server "should" send an array

    class Refuses(_Batches):
        def batch(self, entries: list[Any]) -> list[bytes]:
            del entries
            return [b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}']

    report = await run(Refuses, ACCEPTED)
    assert verdict(report, ACCEPTED) == "fail"


async def test_an_empty_batch_unanswered_fails() -> None:
    class Silent(_Batches):
        def batch(self, entries: list[Any]) -> list[bytes]:
            return [] if not entries else [msgspec.json.encode(self.each(entries))]

    report = await run(Silent, EMPTY)
    assert verdict(report, EMPTY) == "fail"
    assert _detail(report, EMPTY) == "no answer to an empty batch"


async def test_a_batch_handled_on_a_later_revision_fails() -> None:
    class Handles(_Batches):
        def batch(self, entries: list[Any]) -> list[bytes]:
            return [msgspec.json.encode(self.each(entries))]

    report = await run(Handles, REFUSED)
    # A SHOULD: 2025-06-18 removed batching but says nothing of how to refuse one.
    assert verdict(report, REFUSED) == "warn"
    assert (
        _detail(report, REFUSED) == "handled the entries of a batch of two requests on 2025-11-25"
    )


async def test_the_batch_rules_follow_the_servers_revision() -> None:
    class Old(Fault):
        """Speaks 2025-03-26 at most."""

        def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
            if b'"initialize"' in line and b"2025-03-26" not in line and b"2024" not in line:
                self.session.version = "2025-03-26"
                answer = msgspec.json.decode(answers[0])
                answer["result"]["protocolVersion"] = "2025-03-26"
                return [msgspec.json.encode(answer)]
            return answers

    report = await run(Old, "batches")
    assert verdict(report, ACCEPTED) == "pass"
    assert verdict(report, REFUSED) == "n/a"
    assert _detail(report, REFUSED) == "the newest revision the server takes is 2025-03-26"
    report = await run(Fault, "batches", versions=("2025-11-25", "2025-06-18"))
    assert verdict(report, ACCEPTED) == "n/a"
    assert verdict(report, EMPTY) == "n/a"
