"""``call --tool``: whether the result's ``structuredContent`` matches the ``outputSchema``
the tool's listing declared, as the typed client's ``call_tool`` checks it
(:meth:`~mcpl_host.Connection.check_output`; the CLI makes the call itself, to print
the result as the server sent it).

The answer is the report's ``output_schema`` member: ``{"status": "matched"}``,
``{"status": "mismatched", "message": ..., "violations": [...]}`` or
``{"status": "unchecked", "reason": ...}``; None (nothing said) for a tool that declared
no outputSchema, and for a result with ``isError: true`` (its structuredContent, if
any, need not match: MCP's rule, and the library's).
"""

from __future__ import annotations

from typing import Any, Final

from ..client.connection import Connection
from .jsonvalue import ToolOutcome

__all__ = ["LIST_BOUND", "MATCHED", "MISMATCHED", "UNCHECKED", "check_output"]

MATCHED: Final = "matched"
MISMATCHED: Final = "mismatched"
UNCHECKED: Final = "unchecked"
# The result is already in hand: a server slow to list its tools delays the report by at
# most this much (or --timeout, when shorter), and the result is then left unchecked.
LIST_BOUND: Final = 10.0


async def check_output(
    conn: Connection, tool: str, outcome: ToolOutcome, timeout: float
) -> dict[str, Any] | None:
    """The ``output_schema`` member for ``tool``'s result (module docstring). The tool
    list, when the connection has none cached, is read within ``timeout`` but at most
    :data:`LIST_BOUND` per page. Raises nothing but cancellation."""
    if outcome.isError is True:
        return None
    check = await conn.check_output(
        tool, outcome.structuredContent, timeout=min(timeout, LIST_BOUND)
    )
    if check is None:
        return None
    redactor = conn.redactor
    if check.status == UNCHECKED:
        return {"status": UNCHECKED, "reason": redactor.log_value(check.reason or "", 400)}
    if check.status == MATCHED:
        return {"status": MATCHED}
    if not check.violations:
        return {
            "status": MISMATCHED,
            "message": "the tool declared an outputSchema but its result has no structuredContent",
            "violations": [],
        }
    # The library's messages never show the instance's values (only member names and
    # the path, each escaped and cut); redacted still, as any text a server shaped.
    listed = [
        {
            "path": redactor.redact(v.path),
            "keyword": v.keyword,
            "message": redactor.redact(v.message),
        }
        for v in check.violations
    ]
    described = "; ".join(f"{v['path'] or '/'}: {v['message']}" for v in listed)
    return {
        "status": MISMATCHED,
        "message": redactor.log_value(
            f"the structuredContent does not match the tool's outputSchema: {described}", 1024
        ),
        "violations": listed,
    }
