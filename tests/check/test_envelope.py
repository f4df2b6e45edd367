"""Envelope rules against the demo server, each with the fault that breaks it."""

from __future__ import annotations

import functools
from typing import Any

import msgspec
import trio

from mcpl_host.check import Report, Verdict, check
from mcpl_host.check.context import CheckOptions
from mcpl_host.check.fence import Fenced, refusal
from mcpl_host.check.wire import Received
from mcpl_host.demo import Session
from mcpl_host.transports.targets import TcpTarget

from .servers import Fault, rewrite, run, run_stdio, serve_stream, serving, verdict

LARGEST_SAFE = 9007199254740991


def sent(report: Report, rule_id: str) -> list[str]:
    (finding,) = [f for f in report.findings if f.rule.id == rule_id]
    return [line.text for line in finding.evidence if line.direction == "→"]


def detail(report: Report, rule_id: str) -> str:
    (finding,) = [f for f in report.findings if f.rule.id == rule_id]
    return finding.detail


def answers(match: Any, answer: Any) -> Any:
    """A fault: ``match(request)`` true gets ``answer`` (a value, None for silence)."""

    def change(request: Any, original: Any) -> Any:
        return answer if isinstance(request, dict) and match(request) else original

    return rewrite(change)


class Adding(Fault):
    """Writes ``extra(line)`` lines besides the demo's own answers."""

    extra: Any = staticmethod(lambda line: [])

    def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
        return [*answers, *self.extra(line)]


async def test_every_envelope_rule_passes_on_the_demo_server() -> None:
    report = await run(Fault, "envelope")
    assert {f.rule.id: f.verdict.value for f in report.findings} == {
        f.rule.id: "pass" for f in report.findings
    }
    assert len(report.findings) == 14
    assert '"id":null' in sent(report, "envelope.null-id")[0]
    assert (
        sent(report, "envelope.invalid-json")[0] == '{"jsonrpc": "2.0", "id": 1, "method": "ping"'
    )


async def test_a_string_id_turned_into_a_number_fails() -> None:
    def to_number(request: Any, answer: Any) -> Any:
        if isinstance(request, dict) and isinstance(request.get("id"), str):
            answer["id"] = int(request["id"])
        return answer

    report = await run(rewrite(to_number), "envelope.string-id")
    assert verdict(report, "envelope.string-id") == "fail"
    assert detail(report, "envelope.string-id").startswith("answered id 1")
    assert '"id":"1' in sent(report, "envelope.string-id")[0]


async def test_an_integer_id_turned_into_a_string_fails() -> None:
    def to_string(request: Any, answer: Any) -> Any:
        if isinstance(request, dict) and isinstance(request.get("id"), int) and request["id"] > 99:
            answer["id"] = str(request["id"])
        return answer

    report = await run(rewrite(to_string), "envelope.integer-id")
    assert verdict(report, "envelope.integer-id") == "fail"


async def test_a_large_id_through_a_double_fails() -> None:
    report = await run(
        rewrite(
            lambda request, answer: (
                {**answer, "id": float(answer["id"])}
                if answer.get("id") == LARGEST_SAFE
                else answer
            )
        ),
        "envelope.large-integer-id",
    )
    assert verdict(report, "envelope.large-integer-id") == "fail"
    assert "9007199254740991.0" in detail(report, "envelope.large-integer-id")


async def test_null_id() -> None:
    null = answers(lambda r: "id" in r and r["id"] is None, None)
    report = await run(null, "envelope.null-id")
    assert verdict(report, "envelope.null-id") == "fail"
    assert detail(report, "envelope.null-id") == "no answer to a request with id null"
    served = answers(
        lambda r: "id" in r and r["id"] is None, {"jsonrpc": "2.0", "id": None, "result": {}}
    )
    report = await run(served, "envelope.null-id")
    assert verdict(report, "envelope.null-id") == "warn"


async def test_float_and_boolean_ids() -> None:
    def serve(request: Any, answer: Any) -> Any:
        if isinstance(request, dict) and type(request.get("id")) in (float, bool):
            return {"jsonrpc": "2.0", "id": request["id"], "result": {}}
        return answer

    report = await run(rewrite(serve), "envelope.float-id", "envelope.boolean-id")
    assert verdict(report, "envelope.float-id") == "warn"  # lenient, not broken
    assert verdict(report, "envelope.boolean-id") == "fail"
    silent = answers(lambda r: type(r.get("id")) in (float, bool), None)
    report = await run(silent, "envelope.float-id", "envelope.boolean-id")
    assert verdict(report, "envelope.float-id") == "fail"
    assert verdict(report, "envelope.boolean-id") == "fail"


async def test_missing_method_unanswered_warns() -> None:
    report = await run(answers(lambda r: "method" not in r, None), "envelope.missing-method")
    assert verdict(report, "envelope.missing-method") == "warn"


async def test_a_non_string_method_unanswered_fails() -> None:
    silent = answers(lambda r: not isinstance(r.get("method"), str), None)
    report = await run(silent, "envelope.non-string-method")
    assert verdict(report, "envelope.non-string-method") == "fail"


async def test_a_dispatched_jsonrpc_1_0_request_fails() -> None:
    def serve(request: Any, answer: Any) -> Any:
        if isinstance(request, dict) and request.get("jsonrpc") == "1.0":
            return {"jsonrpc": "2.0", "id": request["id"], "result": {}}
        return answer

    report = await run(rewrite(serve), "envelope.jsonrpc-version")
    assert verdict(report, "envelope.jsonrpc-version") == "fail"
    assert "dispatched" in detail(report, "envelope.jsonrpc-version")


async def test_string_params_served_fails() -> None:
    def serve(request: Any, answer: Any) -> Any:
        if isinstance(request, dict) and isinstance(request.get("params"), str):
            return {"jsonrpc": "2.0", "id": request["id"], "result": {}}
        return answer

    report = await run(rewrite(serve), "envelope.params-type")
    assert verdict(report, "envelope.params-type") == "fail"
    assert detail(report, "envelope.params-type").startswith(
        "answered a request whose params are an array with -32602"
    )


async def test_invalid_json() -> None:
    def silent_to_text(request: Any, answer: Any) -> Any:
        return None if request is None else answer

    report = await run(rewrite(silent_to_text), "envelope.invalid-json")
    assert verdict(report, "envelope.invalid-json") == "warn"  # a SHOULD

    class NoisyParse(Fault):
        def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
            try:
                msgspec.json.decode(line)
            except msgspec.DecodeError:
                return [b"parse error"]
            return answers

    report = await run(NoisyParse, "envelope.invalid-json")
    assert verdict(report, "envelope.invalid-json") == "fail"
    assert "not JSON-RPC" in detail(report, "envelope.invalid-json")


async def test_empty_line() -> None:
    # Over stdio: the in-memory server's framing never hands it an empty line.
    reports: dict[str, Report] = {}

    async def one(fault: str) -> None:
        reports[fault] = await run_stdio(fault, "envelope.empty-line")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(one, "empty-line-noise")
        nursery.start_soon(one, "empty-line-crash")
    assert verdict(reports["empty-line-noise"], "envelope.empty-line") == "fail"
    assert detail(reports["empty-line-noise"], "envelope.empty-line") == (
        "answered an empty line with a line that is not JSON-RPC"
    )
    assert verdict(reports["empty-line-crash"], "envelope.empty-line") == "fail"
    assert detail(reports["empty-line-crash"], "envelope.empty-line") == (
        "the server closed the connection after an empty line"
    )


async def test_an_answered_notification_fails() -> None:
    class Answers(Fault):
        def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
            if b'"notifications/cancelled"' in line:
                return [b'{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"no"}}']
            return answers

    report = await run(Answers, "envelope.notification-unanswered")
    assert verdict(report, "envelope.notification-unanswered") == "fail"
    assert detail(report, "envelope.notification-unanswered") == (
        "answered notifications/cancelled for an unknown request"
    )


async def test_unknown_method() -> None:
    def wrong_code(request: Any, answer: Any) -> Any:
        if "error" in answer:
            answer["error"]["code"] = -32600
        return answer

    report = await run(rewrite(wrong_code), "envelope.unknown-method")
    assert verdict(report, "envelope.unknown-method") == "warn"
    silent = answers(lambda r: str(r.get("method")).startswith("mcpl-host-check/"), None)
    report = await run(silent, "envelope.unknown-method")
    assert verdict(report, "envelope.unknown-method") == "fail"


async def test_a_server_killed_by_one_message_gets_a_new_session_for_the_next() -> None:
    class DiesOnNull(Fault):
        dead = False

        def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
            self.dead = self.dead or b'"id":null' in line
            return [] if self.dead else answers

    rules = ("envelope.null-id", "envelope.float-id", "envelope.boolean-id")
    report = await run(DiesOnNull, *rules, timeout=0.5)
    assert [f.verdict.value for f in report.findings] == ["fail", "pass", "pass"]
    assert detail(report, "envelope.null-id") == (
        "the server stopped answering after a request with id null"
    )
    (float_id,) = [f for f in report.findings if f.rule.id == "envelope.float-id"]
    assert float_id.evidence[0].text == '{"jsonrpc":"2.0","id":1.5,"method":"ping"}'


def _fenced(*answers: Any, http_error: int | None = None) -> Fenced:
    received = tuple(Received(msgspec.json.encode(a), a) for a in answers)
    return Fenced(received, (), alive=True, closed=False, evidence=(), http_error=http_error)


def test_how_a_refusal_is_judged() -> None:
    error = {"code": -32600, "message": "Invalid Request"}
    no_id = {"jsonrpc": "2.0", "error": error}
    what = "a request with id true"
    # An error without an id: MCP allows it from 2025-11-25 on.
    assert refusal(_fenced(no_id), what, codes=(-32600,), version="2025-11-25")[0] == Verdict.PASS
    assert refusal(_fenced(no_id), what, codes=(-32600,), version="2025-06-18")[0] == Verdict.WARN
    twice = _fenced({**no_id, "id": None}, {**no_id, "id": None})
    assert refusal(twice, what, codes=(-32600,)) == (Verdict.FAIL, f"answered {what} 2 times")
    # Over HTTP an error status is a refusal, whatever the body.
    assert refusal(_fenced(http_error=400), what, codes=(-32600,)) == (
        Verdict.PASS,
        f"refused {what} with HTTP 400",
    )
    assert refusal(_fenced(), what, codes=(-32600,), silence=Verdict.WARN)[0] == Verdict.WARN
    assert refusal(_fenced(["x"]), what, codes=(-32600,))[0] == Verdict.FAIL


async def test_a_session_with_a_request_unanswered_is_not_shared() -> None:
    # The unanswered request's answer would come in the next borrower's evidence.
    from mcpl_host.check.context import Context  # noqa: PLC0415
    from mcpl_host.protocol.redact import Redactor  # noqa: PLC0415

    async with serving() as opener:
        ctx = Context(opener, Redactor(), CheckOptions(timeout=5.0), frozenset())
        with trio.fail_after(20):
            async with trio.open_nursery() as keepers:
                ctx.keepers = keepers
                async with ctx.borrow() as first:
                    assert await first.call("ping", timeout=5.0) is not None
                async with ctx.borrow() as again:
                    assert again is first  # all answered: shared
                    await again.send(again.request("ping"))  # its answer left unread
                async with ctx.borrow() as other:
                    assert other is not first
                ctx.done.set()


class _ChattyPing(Fault):
    """Logs 1100 notifications/message before each ping's answer (all at once)."""

    def exchange(self, line: bytes, answers: list[bytes]) -> list[bytes]:
        if b'"ping"' not in line or self.session.version is None:
            return answers
        log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "debug"}}
        return [msgspec.json.encode(log)] * 1100 + answers


async def test_the_fence_reads_past_any_number_of_notifications() -> None:
    # A server with logging sends notifications/message at will: the fence's answer
    # behind 1100 of them is still its answer.
    with trio.fail_after(10):
        report = await run(_ChattyPing, "envelope.notification-unanswered")
    assert verdict(report, "envelope.notification-unanswered") == "pass"


async def test_the_demo_over_a_tcp_socket_passes_the_envelope_rules() -> None:
    # The same raw wire over a socket: each probe dials its own connection.
    async with trio.open_nursery() as nursery:

        async def serve(stream: trio.SocketStream) -> None:
            await serve_stream(stream, Fault(Session()))

        serving_tcp = functools.partial(trio.serve_tcp, serve, 0, host="127.0.0.1")
        (listener,) = await nursery.start(serving_tcp)
        port = listener.socket.getsockname()[1]
        with trio.fail_after(60):
            report = await check(
                TcpTarget("127.0.0.1", port),
                only=["envelope", "lifecycle.stdin-eof"],
                options=CheckOptions(timeout=5.0),
            )
        nursery.cancel_scope.cancel()
    verdicts = {f.rule.id: f.verdict.value for f in report.findings}
    assert verdicts.pop("lifecycle.stdin-eof") == "n/a"
    assert set(verdicts.values()) == {"pass"}, report.to_json()
    assert len(verdicts) == 14
