"""The host's ``initialize`` capabilities: only the hooks given, in the offered revision's
shape."""

from __future__ import annotations

from typing import Any

import pytest

from mcpl_host.protocol.capabilities import client_capabilities
from mcpl_host.protocol.profiles import PROFILES

R1, R2, R3, R4 = "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"
ALL = {"roots": True, "sampling": True, "elicitation": True}
ROOTS = {"listChanged": True}


@pytest.mark.parametrize(
    ("offered", "url", "expected"),
    [
        (R4, True, {"roots": ROOTS, "sampling": {}, "elicitation": {"form": {}, "url": {}}}),
        (R4, False, {"roots": ROOTS, "sampling": {}, "elicitation": {"form": {}}}),
        (R3, True, {"roots": ROOTS, "sampling": {}, "elicitation": {}}),
        (R2, True, {"roots": ROOTS, "sampling": {}}),
        (R1, True, {"roots": ROOTS, "sampling": {}}),
    ],
)
def test_capabilities_follow_the_offered_revision(
    offered: str, url: bool, expected: dict[str, Any]
) -> None:
    assert client_capabilities(PROFILES[offered], url_elicitation=url, **ALL) == expected


@pytest.mark.parametrize("offered", [R1, R2, R3, R4])
def test_no_hook_no_capability(offered: str) -> None:
    assert client_capabilities(PROFILES[offered]) == {}
    # URL mode is a mode of the elicitation hook: alone it promises nothing.
    assert client_capabilities(PROFILES[offered], url_elicitation=True) == {}


@pytest.mark.parametrize(
    ("hook", "offered", "expected"),
    [
        ("roots", R1, {"roots": ROOTS}),
        ("roots", R4, {"roots": ROOTS}),
        ("sampling", R1, {"sampling": {}}),
        ("sampling", R4, {"sampling": {}}),
        ("elicitation", R2, {}),  # no elicitation before 2025-06-18
        ("elicitation", R3, {"elicitation": {}}),
        ("elicitation", R4, {"elicitation": {"form": {}}}),
    ],
)
def test_each_hook_alone(hook: str, offered: str, expected: dict[str, Any]) -> None:
    assert client_capabilities(PROFILES[offered], **{hook: True}) == expected


def test_the_stateless_revision_names_the_tasks_extension_whatever_the_hooks() -> None:
    # The host follows any task a 2026-07-28 server makes, so it always says so; the
    # 2025-11-25 ``tasks`` capability (the host running tasks for the server) never.
    extension = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    assert client_capabilities(PROFILES["2026-07-28"]) == extension
    assert (
        client_capabilities(PROFILES["2026-07-28"], sampling=True) == {"sampling": {}} | extension
    )
    assert "tasks" not in client_capabilities(PROFILES[R4], **ALL)
