"""Takes requests and never answers them (pings excepted): ``--mode open`` starts an
event stream and sends no event on it; ``--mode silent`` sends not even a status line.
Either way it holds the connection until the host closes it; ``holding`` in the stats
counts the connections the host still has open."""

from __future__ import annotations

import argparse
from typing import Any

import _http


class Hang(_http.Handler):
    def on_request(self, message: dict[str, Any]) -> None:
        if message.get("method") == "ping":
            super().on_request(message)
            return
        if _http.ARGS.mode == "open":
            self.sse_start()
        self.hold()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["open", "silent"], default="open")
    _http.serve(Hang, parser)
