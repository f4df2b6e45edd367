"""``call --tool``: whether the result's ``structuredContent`` matches the ``outputSchema``
the tool's listing declared, checked as the typed client's ``call_tool`` checks it: the
connection's cached tool list and :func:`~mcpl_host.client.schema.validator_for`
(jsonschema-rs, no second validator here).

The answer is the report's ``output_schema`` member: ``{"status": "matched"}``,
``{"status": "mismatched", "message": ..., "violations": [...]}`` or
``{"status": "unchecked", "reason": ...}``; None (nothing said) for a tool that declared
no outputSchema, and for a result with ``isError: true`` (its structuredContent, if
any, need not match: MCP's rule, and the library's).
"""

from __future__ import annotations

from typing import Any, Final

from ..client.connection import Connection
from ..client.schema import UnsupportedSchema, validator_for
from ..protocol.errors import McplHostError
from .jsonvalue import ToolOutcome

__all__ = ["LIST_BOUND", "MATCHED", "MISMATCHED", "UNCHECKED", "check_output"]

MATCHED: Final = "matched"
MISMATCHED: Final = "mismatched"
UNCHECKED: Final = "unchecked"
# Violations listed in the report: the first few say what is wrong.
_VIOLATIONS: Final = 10
# The result is already in hand: a server slow to list its tools delays the report by at
# most this much (or --timeout, when shorter), and the result is then left unchecked.
LIST_BOUND: Final = 10.0


async def check_output(
    conn: Connection, tool: str, outcome: ToolOutcome, timeout: float
) -> dict[str, Any] | None:
    """The ``output_schema`` member for ``tool``'s result (module docstring). Reads the
    tool list when the connection has none cached (the call may have read it already, to
    learn whether the tool runs as a task), each page within ``timeout`` but at most
    :data:`LIST_BOUND`. Raises nothing but cancellation: a list that cannot be read
    leaves the result unchecked, as the library leaves it."""
    if outcome.isError is True:
        return None
    redactor = conn.redactor
    try:
        tools = await conn.list_tools(timeout=min(timeout, LIST_BOUND))
    except McplHostError as exc:
        reason = f"the tool list could not be read ({type(exc).__name__}: {exc.message})"
        return {"status": UNCHECKED, "reason": redactor.log_value(reason, 400)}
    declared = next((t for t in tools if t.name == tool), None)
    if declared is None or declared.output_schema is None:
        return None
    try:
        validator = validator_for(declared.output_schema)
    except UnsupportedSchema as exc:
        reason = f"the outputSchema cannot be checked: {exc}"
        return {"status": UNCHECKED, "reason": redactor.log_value(reason, 400)}
    if outcome.structuredContent is None:
        return {
            "status": MISMATCHED,
            "message": "the tool declared an outputSchema but its result has no structuredContent",
            "violations": [],
        }
    violations = validator.errors(outcome.structuredContent, _VIOLATIONS)
    if not violations:
        return {"status": MATCHED}
    # The library's messages never show the instance's values (only member names and
    # the path, each escaped and cut); redacted still, as any text a server shaped.
    listed = [
        {
            "path": redactor.redact(v.path),
            "keyword": v.keyword,
            "message": redactor.redact(v.message),
        }
        for v in violations
    ]
    described = "; ".join(f"{v['path'] or '/'}: {v['message']}" for v in listed)
    return {
        "status": MISMATCHED,
        "message": redactor.log_value(
            f"the structuredContent does not match the tool's outputSchema: {described}", 1024
        ),
        "violations": listed,
    }
