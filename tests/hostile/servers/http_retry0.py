"""Ends the GET stream at once, every time, with ``retry: 0``: a host that takes the
server's word reopens it as fast as it can. ``gets`` in the stats counts them."""

from __future__ import annotations

import argparse

import _http


class RetryZero(_http.Handler):
    def on_get(self) -> None:
        self.sse_start()
        self.wfile.write(b"retry: 0\n\n")
        self.wfile.flush()


if __name__ == "__main__":
    _http.serve(RetryZero, argparse.ArgumentParser(description=__doc__))
