"""The demo server's additions, through ``handle()`` (the countdown's progress and
cancellation through a recording session)."""

from __future__ import annotations

from typing import Any

from mcpl_host.demo import Session, handle


class Recording(Session):
    def __init__(self, cancel_after: int | None = None) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.pauses: list[tuple[float, Any]] = []
        self.cancel_after = cancel_after

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.sent.append((method, params))

    def pause(self, seconds: float, request_id: Any) -> bool:
        self.pauses.append((seconds, request_id))
        return self.cancel_after is None or len(self.pauses) <= self.cancel_after


def _request(method: str, params: dict[str, Any], id_: Any = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def _countdown(args: dict[str, Any], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "countdown", "arguments": args}
    if meta is not None:
        params["_meta"] = meta
    return _request("tools/call", params)


def test_capabilities_and_lists() -> None:
    answer = handle(_request("initialize", {"protocolVersion": "2025-06-18"}))
    assert answer is not None
    assert answer["result"]["capabilities"] == {
        "tools": {},
        "resources": {"subscribe": True},
        "prompts": {},
        "logging": {},
        "completions": {},
    }
    tools = handle(_request("tools/list", {}))
    assert tools is not None
    assert [t["name"] for t in tools["result"]["tools"]] == [
        "echo",
        "add",
        "sleep",
        "countdown",
        "wrong_shape",
        "log",
        "touch",
        "ask",
    ]


def test_countdown_reports_progress_with_the_token() -> None:
    session = Recording()
    answer = handle(_countdown({"steps": 3, "delay": 0.5}, {"progressToken": "tok"}), session)
    assert answer == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"content": [{"type": "text", "text": "liftoff after 3 steps"}]},
    }
    assert session.pauses == [(0.5, 7)] * 3  # watching for a cancel of its own id
    assert [params["progress"] for _, params in session.sent] == [1, 2, 3]
    assert all(method == "notifications/progress" for method, _ in session.sent)
    assert session.sent[0][1] == {
        "progressToken": "tok",
        "progress": 1,
        "total": 3,
        "message": "2 to go",
    }


def test_countdown_without_a_token_sends_no_progress() -> None:
    session = Recording()
    answer = handle(_countdown({"steps": 2, "delay": 0}), session)
    assert answer is not None
    assert "result" in answer
    assert session.sent == []


def test_a_cancelled_countdown_gets_no_answer() -> None:
    session = Recording(cancel_after=1)
    assert handle(_countdown({"steps": 5, "delay": 0.1}, {"progressToken": 1}), session) is None
    assert len(session.sent) == 1


def test_countdown_checks_its_arguments() -> None:
    for args in ({"steps": -1}, {"steps": True}, {"steps": 2, "delay": 11}, {}):
        answer = handle(_countdown(args), Recording())
        assert answer is not None
        assert answer["result"]["isError"] is True, args


def test_resources() -> None:
    listed = handle(_request("resources/list", {}))
    assert listed is not None
    assert [r["uri"] for r in listed["result"]["resources"]] == ["demo://readme"]
    readme = handle(_request("resources/read", {"uri": "demo://readme"}))
    assert readme is not None
    assert readme["result"]["contents"][0]["text"].startswith("# mcpl-host demo server")
    echoed = handle(_request("resources/read", {"uri": "demo://echo/a%20b"}))
    assert echoed is not None
    assert echoed["result"]["contents"][0]["text"] == "a b"
    missing = handle(_request("resources/read", {"uri": "demo://nope"}))
    assert missing is not None
    assert missing["error"]["code"] == -32002
    templates = handle(_request("resources/templates/list", {}))
    assert templates is not None
    assert templates["result"]["resourceTemplates"][0]["uriTemplate"] == "demo://echo/{text}"


def test_prompts() -> None:
    listed = handle(_request("prompts/list", {}))
    assert listed is not None
    assert listed["result"]["prompts"][0]["name"] == "greet"
    got = handle(_request("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}))
    assert got is not None
    assert got["result"]["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Please greet Ada."}}
    ]
    for params in ({"name": "greet"}, {"name": "other", "arguments": {"name": "x"}}):
        refused = handle(_request("prompts/get", params))
        assert refused is not None
        assert refused["error"]["code"] == -32602


def test_an_unknown_tool_is_still_invalid_params() -> None:
    answer = handle(_request("tools/call", {"name": "nope"}))
    assert answer == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32602, "message": "Unknown tool: nope"},
    }
