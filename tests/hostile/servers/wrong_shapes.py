"""Every listing and every call answered with members of the wrong type: a tool call's
``"content": 5``, a read's ``"contents": 5``, a prompt's ``"messages": 5``, a listed
prompt's ``"arguments": 5``."""

from __future__ import annotations

import _stdio

RESULTS = {
    "tools/list": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]},
    "tools/call": {"content": 5},
    "resources/list": {"resources": [{"uri": "file:///r", "name": "r"}]},
    "resources/templates/list": {"resourceTemplates": []},
    "resources/read": {"contents": 5},
    "prompts/list": {"prompts": [{"name": "p", "arguments": 5}]},
    "prompts/get": {"messages": 5},
}


def main() -> None:
    parser = _stdio.parser(__doc__)
    args = parser.parse_args()
    stats = _stdio.Stats(args.stats)
    _stdio.handshake(capabilities={"tools": {}, "resources": {}, "prompts": {}})

    def on_message(message: object) -> bool:
        if not isinstance(message, dict) or message.get("method") not in RESULTS:
            return False
        result = RESULTS[message["method"]]
        _stdio.send({"jsonrpc": "2.0", "id": message.get("id"), "result": result})
        return True

    _stdio.serve_host(stats, on_message)


if __name__ == "__main__":
    main()
