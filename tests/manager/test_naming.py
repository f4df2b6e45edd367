"""Catalogue names, pure: one reading per name (the same rule for every kind: a tool's
or prompt's name, a resource's URI, a template's uriTemplate)."""

from __future__ import annotations

import itertools

import pytest

from mcpl_host.manager import qualify, split
from mcpl_host.manager.naming import name_problem


def test_a_name_is_the_server_the_separator_and_the_key() -> None:
    assert qualify("demo", "add") == "demo__add"
    assert qualify("files", "file:///{path}") == "files__file:///{path}"
    assert qualify("a", "t", ".") == "a.t"
    # A key may hold the separator: the first one ends the server's name.
    assert split("a__b__c") == ("a", "b__c")
    assert split("files__file:///a__b") == ("files", "file:///a__b")
    assert split("a.b.c", ".") == ("a", "b.c")
    assert split("no-separator") is None


@pytest.mark.parametrize(
    ("server", "separator", "refused"),
    [
        ("a__b", "__", True),  # holds it: a__b's c and a's b__c would both be a__b__c
        ("a_", "__", True),  # ends with its start: a_'s _c and a's __c are both a____c
        ("_a", "__", False),
        ("a_b", "__", False),
        ("a", "__", False),
        ("a.b", ".", True),
        ("a-b", "::", False),
        ("a:", "::", True),
    ],
)
def test_which_server_names_are_refused(server: str, separator: str, refused: bool) -> None:
    assert (name_problem(server, separator) is not None) == refused


def test_names_of_admitted_servers_never_collide_and_read_back() -> None:
    # Every pair (server, key) over a small alphabet that has the separator's pieces in
    # it: distinct pairs give distinct names, and each name reads back as its pair.
    alphabet = ["", "a", "_", "__", "a_", "_a"]
    words = {"".join(p) for n in range(3) for p in itertools.product(alphabet, repeat=n)}
    servers = [w for w in words if w and name_problem(w) is None]
    seen: dict[str, tuple[str, str]] = {}
    for server, key in itertools.product(servers, words):
        name = qualify(server, key)
        assert split(name) == (server, key)
        assert seen.setdefault(name, (server, key)) == (server, key)
