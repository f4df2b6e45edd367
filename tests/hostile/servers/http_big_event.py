"""Answers ``tools/call`` with an event stream whose one event is ``--bytes`` long
(the answer itself, padded with a long text), then keeps the stream open, sending
nothing more."""

from __future__ import annotations

import argparse
import json
from typing import Any

import _http


class BigEvent(_http.Handler):
    def on_request(self, message: dict[str, Any]) -> None:
        if message.get("method") != "tools/call":
            super().on_request(message)
            return
        head = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": {"text": ""}})
        padding = "x" * max(_http.ARGS.bytes - len(head), 0)
        data = head.replace('"text": ""', f'"text": "{padding}"')
        self.sse_start()
        try:
            self.wfile.write(b"data: " + data.encode() + b"\n\n")
            self.wfile.flush()
        except OSError:
            return  # the host stopped reading and closed: fine
        self.hold()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bytes", type=int, default=50 * 1024 * 1024)
    _http.serve(BigEvent, parser)
