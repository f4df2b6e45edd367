"""A 2026-07-28 stdio server for the faces' tests: input rounds and a task.

tools/call "ask" answers ``input_required`` (an elicitation) and, on the retry, the
name the hook gave; "slow" is run as a task (the tasks extension) that is done at the
second tasks/get; "echo" answers its text at once.
"""

import json
import sys

EXT = "io.modelcontextprotocol/tasks"
ASK = {
    "resultType": "input_required",
    "requestState": "s1",
    "inputRequests": {
        "who": {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "Name?", "requestedSchema": {"type": "object"}},
        }
    },
}


def task(status: str, **more: object) -> dict[str, object]:
    return {
        "resultType": "complete",
        "taskId": "t-1",
        "status": status,
        "createdAt": "2026-07-28T10:00:00Z",
        "lastUpdatedAt": "2026-07-28T10:00:00Z",
        "ttlMs": 60000,
        "pollIntervalMs": 20,
    } | more


def text(value: str) -> dict[str, object]:
    return {"resultType": "complete", "content": [{"type": "text", "text": value}]}


def answer(message: dict[str, object], polls: list[int]) -> dict[str, object] | None:
    method, params = message.get("method"), message.get("params") or {}
    assert isinstance(params, dict)
    if method == "server/discover":
        return {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "extensions": {EXT: {}}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "stateless", "version": "1"}},
        }
    if method == "tools/list":
        return {"resultType": "complete", "tools": [], "ttlMs": 0}
    if method == "tools/call" and params.get("name") == "ask":
        responses = params.get("inputResponses")
        if responses is None:
            return ASK
        return text(responses["who"]["content"]["name"])
    if method == "tools/call" and params.get("name") == "slow":
        return task("working") | {"resultType": "task"}
    if method == "tools/call":
        return text(params["arguments"]["text"])
    if method == "tasks/get":
        polls.append(1)
        if len(polls) < 2:
            return task("working")
        return task("completed", result=text("done"))
    return None


def main() -> None:
    polls: list[int] = []
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        result = answer(message, polls)
        reply: dict[str, object] = {"jsonrpc": "2.0", "id": message["id"]}
        if result is None:
            reply["error"] = {"code": -32601, "message": "Method not found"}
        else:
            reply["result"] = result
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
