"""The manager's own log events show a connection's failure through that connection's
redactor: a server's text in the error is escaped and cut, its secrets masked."""

from __future__ import annotations

import trio
from structlog.testing import capture_logs

from mcpl_host.manager import ConnectionManager
from mcpl_host.protocol.redact import LOG_VALUE_LIMIT, REDACTION_MARK, log_value, utf16_len
from mcpl_host.testing import Script, serve

from .helpers import POLICY, wait_for

TOKEN = "tok-0d4e8b7c21"


async def test_a_failed_servers_error_is_logged_escaped_and_redacted(
    autojump_clock: trio.abc.Clock,
) -> None:
    # A revision outside the allowlist that echoes the server's secret, with a
    # terminal escape and a line separator after it.
    answered = f"{TOKEN}\x1b[2J\u2028"
    script = (
        Script()
        .expect("initialize")
        .reply({"protocolVersion": answered, "capabilities": {}, "serverInfo": {"name": "x"}})
        .expect_close()
    )
    with trio.fail_after(60), capture_logs() as logs:
        async with (
            serve(script) as server,
            ConnectionManager({"s": server.target}, reconnect=POLICY, secrets=(TOKEN,)) as manager,
        ):
            status = await wait_for(manager, "s", "failed")
    assert status.error is not None
    assert TOKEN not in str(status.error)  # the error itself, not only its log line
    logged = ("connect attempt failed", "server state")
    errors = [e["error"] for e in logs if e["event"] in logged and "error" in e]
    assert len(errors) == 2
    for error in errors:
        assert TOKEN not in error
        assert REDACTION_MARK in error
        assert all(log_value(ch) == ch for ch in error)
        assert utf16_len(error) <= LOG_VALUE_LIMIT
