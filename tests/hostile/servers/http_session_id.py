"""Gives a session id that is not ASCII: ``Mcp-Session-Id: sess-ü`` (UTF-8 bytes on the
wire), which the host must send back on every later request."""

from __future__ import annotations

import argparse

import _http


class BadSession(_http.Handler):
    # http.server writes header values as Latin-1: these two characters go out as the
    # bytes C3 BC, "ü" in UTF-8.
    session_id = "sess-\u00c3\u00bc"


if __name__ == "__main__":
    _http.serve(BadSession, argparse.ArgumentParser(description=__doc__))
