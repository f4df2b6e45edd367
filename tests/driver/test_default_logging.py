"""Without a structlog configuration, mcpl_host keeps stdout clean and still says what
matters: warnings and errors reach stderr, debug and info go nowhere (a process of its
own, because structlog's configuration is global)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
import trio
from mcpl_host import Connection, StdioTarget

async def main():
    target = StdioTarget.of([sys.executable, "-m", "mcpl_host.demo"])
    async with Connection(target) as conn:
        for _ in range(3):
            assert (await conn.call_tool("echo", {"text": "hi"})).text == "hi"
        await conn.call_tool("log", {"level": "info", "text": "just so you know"})
        await conn.call_tool("log", {"level": "error", "text": "the disk is on fire"})

trio.run(main)
"""


def test_unconfigured_structlog_writes_warnings_to_stderr_and_nothing_to_stdout() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    assert "the disk is on fire" in out.stderr
    assert "just so you know" not in out.stderr
    # no per-message debug events, no info lines such as "connected"
    assert "message" not in out.stderr.replace("the disk is on fire", "")
    assert "connected" not in out.stderr


def test_a_configured_structlog_gets_every_event() -> None:
    configured = (
        "import logging, sys, structlog\n"
        "structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),"
        " logger_factory=structlog.PrintLoggerFactory(sys.stdout))\n" + SCRIPT
    )
    out = subprocess.run(
        [sys.executable, "-c", configured], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert "response-matched" in out.stdout  # the per-message debug event
    assert "connected" in out.stdout
    assert "just so you know" in out.stdout
