"""Catalogue names, pure: prefixes, collisions, stability (the same rule for every
kind: a tool's or prompt's name, a resource's URI, a template's uriTemplate)."""

from __future__ import annotations

from typing import Any

from mcpl_host.manager import Named, qualify


def _tools(*names: str) -> list[str]:
    return list(names)


def _names(servers: list[str], listings: dict[str, list[str]], **kw: Any) -> list[str]:
    return [entry.name for entry in qualify(servers, listings, **kw)]


def test_the_same_tool_on_two_servers_is_told_apart_by_the_prefix() -> None:
    listings = {"a": _tools("echo", "add"), "b": _tools("echo")}
    assert _names(["a", "b"], listings) == ["a__echo", "a__add", "b__echo"]


def test_configuration_order_wins_over_the_order_of_answers() -> None:
    listings = {"b": _tools("two"), "a": _tools("one")}
    assert _names(["a", "b"], listings) == ["a__one", "b__two"]


def test_a_collision_suffixes_every_member_by_its_servers_place() -> None:
    servers = ["a", "other", "a__b"]
    listings = {"a": _tools("b__c", "d"), "a__b": _tools("c"), "other": _tools("c")}
    entries = qualify(servers, listings)
    assert [(e.name, e.server, e.key) for e in entries] == [
        ("a__b__c_1", "a", "b__c"),
        ("a__d", "a", "d"),
        ("other__c", "other", "c"),
        ("a__b__c_3", "a__b", "c"),
    ]


def test_a_stale_name_never_leads_to_another_servers_tool() -> None:
    servers = ["a", "a__b"]
    # "a" down: "a__b"'s tool has the bare name...
    alone = _names(servers, {"a__b": _tools("c")})
    assert alone == ["a__b__c"]
    # ...and once "a" is back, that bare name is nobody's: it is not handed to "a".
    both = _names(servers, {"a": _tools("b__c"), "a__b": _tools("c")})
    assert both == ["a__b__c_1", "a__b__c_2"]
    assert "a__b__c" not in both
    # A suffixed name keeps meaning the same server whoever else answers.
    three = _names(["a", "x", "a__b"], {"a": _tools("b__c"), "a__b": _tools("c")})
    assert three == ["a__b__c_1", "a__b__c_3"]


def test_a_suffix_that_is_already_a_real_name_is_extended() -> None:
    servers = ["a", "a__b"]
    listings = {"a": _tools("b__c", "b__c_2"), "a__b": _tools("c")}
    assert _names(servers, listings) == ["a__b__c_1", "a__b__c_2", "a__b__c_2_2"]


def test_every_name_is_unique_even_when_a_server_lists_one_twice() -> None:
    names = _names(["s"], {"s": _tools("t", "t")})
    assert names == ["s__t_1", "s__t_1_1"]
    assert len(set(names)) == len(names)


def test_another_separator() -> None:
    assert _names(["a"], {"a": _tools("t")}, separator=".") == ["a.t"]


def test_uris_and_templates_are_keys_like_any_other() -> None:
    servers = ["files", "web"]
    keys = {"files": ["file:///a.txt", "file:///{path}"], "web": ["https://x/{id}"]}
    assert qualify(servers, keys) == [
        Named("files__file:///a.txt", "files", "file:///a.txt"),
        Named("files__file:///{path}", "files", "file:///{path}"),
        Named("web__https://x/{id}", "web", "https://x/{id}"),
    ]
