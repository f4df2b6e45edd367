"""A server entry's catalogue filter keys: includeTools / excludeTools (Gemini CLI's
names), includeResources / excludeResources, includePrompts / excludePrompts."""

from __future__ import annotations

import pytest

from mcpl_host.config import CatalogueFilter, parse_document


def test_the_keys_become_the_entrys_filter_without_warnings() -> None:
    document = parse_document(
        {
            "mcpServers": {
                "gh": {
                    "command": "gh-mcp",
                    "includeTools": ["get_*", "search_*"],
                    "excludeTools": ["get_secret"],
                    "includeResources": ["repo://*"],
                    "excludeResources": ["repo://*/private/*"],
                    "includePrompts": [],
                    "excludePrompts": ["x"],
                },
                "plain": {"url": "tcp://127.0.0.1:9000"},
            }
        },
        source="servers.json",
    )
    assert list(document.warnings) == []
    assert document.servers["gh"].filter == CatalogueFilter(
        include_tools=("get_*", "search_*"),
        exclude_tools=("get_secret",),
        include_resources=("repo://*",),
        exclude_resources=("repo://*/private/*",),
        include_prompts=(),
        exclude_prompts=("x",),
    )
    assert document.servers["plain"].filter.admits_all


@pytest.mark.parametrize(
    ("key", "value"),
    [("includeTools", "get_*"), ("excludePrompts", [1]), ("excludeResources", {"a": "b"})],
)
def test_a_key_of_the_wrong_type_is_that_entrys_problem(key: str, value: object) -> None:
    servers = parse_document(
        {"mcpServers": {"bad": {"command": "x", key: value}, "good": {"command": "y"}}},
        source="servers.json",
    ).servers
    assert servers["bad"].problem == f"key 'mcpServers.bad'.{key} must be an array of strings"
    assert servers["bad"].target is None
    assert servers["good"].problem is None
