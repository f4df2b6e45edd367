"""Capability paths: the advertised tree, patterns, the effective grant, the host's tree."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpl_host.mcpl.capabilities import (
    ADVERTISED_PATHS,
    HOST_SUPPORTED,
    MAX_TREE_DEPTH,
    MCPL_VERSION,
    advertised_paths,
    denied,
    effective,
    expand,
    host_advertisement,
    matches,
)
from mcpl_host.protocol.errors import ConfigurationError

CHANNELS = frozenset(p for p in ADVERTISED_PATHS if p.startswith("channels."))
BEFORE_INFERENCE = frozenset(p for p in ADVERTISED_PATHS if p.startswith("contextHooks."))

# ---- expand ------------------------------------------------------------------------


def test_expand_reads_explicit_leaves() -> None:
    tree = {"version": "0.5", "pushEvents": True, "channels": {"register": True, "publish": True}}
    assert expand(tree) == {"pushEvents", "channels.register", "channels.publish"}


def test_true_on_a_parent_means_every_known_leaf_below() -> None:
    assert expand({"channels": True}) == CHANNELS
    assert len(CHANNELS) == 7
    assert expand({"contextHooks": True}) == BEFORE_INFERENCE
    assert expand({"contextHooks": {"beforeInference": True}}) == BEFORE_INFERENCE
    assert expand({"contextHooks": {"beforeInference": {"inject": True}}}) == {
        "contextHooks.beforeInference.inject.system",
        "contextHooks.beforeInference.inject.beforeUser",
        "contextHooks.beforeInference.inject.afterUser",
    }
    assert expand({"toolLifecycle": True}) == {"toolLifecycle.observe", "toolLifecycle.inputs"}


def test_true_on_a_path_with_children_gives_the_path_and_its_children() -> None:
    assert expand({"inferenceRequest": True}) == {
        "inferenceRequest",
        "inferenceRequest.streaming",
    }


def test_an_object_on_a_path_node_advertises_the_node_itself() -> None:
    # §5.1's own example: "inferenceRequest": {"streaming": true}.
    assert expand({"inferenceRequest": {"streaming": True}}) == {
        "inferenceRequest",
        "inferenceRequest.streaming",
    }
    assert expand({"inferenceRequest": {"streaming": False}}) == {"inferenceRequest"}
    # ...but an object on a mere parent advertises only what it holds.
    assert expand({"channels": {}}) == frozenset()
    assert expand({"contextHooks": {"beforeInference": {}}}) == frozenset()


def test_false_and_absent_advertise_nothing() -> None:
    assert expand({"channels": False, "pushEvents": False}) == frozenset()
    assert expand({"channels": {"register": False, "publish": True}}) == {"channels.publish"}
    assert expand({}) == frozenset()


def test_non_path_members_are_ignored() -> None:
    tree = {
        "version": "0.5",
        "revision": "sha256:abc",
        "featureSets": {"memory.retrieval": {"description": "x", "uses": ["pushEvents"]}},
        "modelInfo": True,
    }
    assert expand(tree) == {"modelInfo"}


def test_tools_comes_only_from_mcp_capabilities() -> None:
    assert expand({"tools": True}) == frozenset()
    assert expand({"pushEvents": True}, mcp_tools=True) == {"tools", "pushEvents"}


def test_unknown_paths_are_kept_as_given() -> None:
    assert expand({"futureThing": True}) == {"futureThing"}
    assert expand({"channels": {"newLeaf": True}}) == {"channels.newLeaf"}
    assert expand({"a": {"b": {"c": True}}}) == {"a.b.c"}
    # Unknown leaves below a known parent are not invented by the parent's ``true``.
    assert "channels.newLeaf" not in expand({"channels": True})


@pytest.mark.parametrize(
    "tree",
    [
        None,
        True,
        "pushEvents",
        ["pushEvents"],
        3,
        {"pushEvents": 1},
        {"pushEvents": "yes"},
        {"pushEvents": None},
        {"channels": ["register"]},
        {"channels": {"register": "true"}},
        {"channels": {"register": 1.0}},
    ],
)
def test_malformed_values_advertise_nothing(tree: Any) -> None:
    assert expand(tree) == frozenset()


def test_malformed_members_do_not_spoil_the_good_ones() -> None:
    tree = {"pushEvents": True, "channels": {"register": "yes", "publish": True}, "x": [1]}
    assert expand(tree) == {"pushEvents", "channels.publish"}


def test_members_naming_a_wildcard_are_ignored() -> None:
    assert expand({"*": True, "channels": {"*": True, "publish": True}}) == {"channels.publish"}


def test_members_with_an_empty_name_are_ignored() -> None:
    assert expand({"": True, "channels": {"": True, "publish": True}}) == {"channels.publish"}


def test_a_deep_tree_is_cut_and_never_raises() -> None:
    tree: dict[str, Any] = {"leaf": True}
    for _ in range(5000):
        tree = {"n": tree}
    assert expand(tree) == frozenset()
    shallow: dict[str, Any] = {"leaf": True}
    for _ in range(MAX_TREE_DEPTH - 1):
        shallow = {"n": shallow}
    assert expand(shallow) == {".".join(["n"] * (MAX_TREE_DEPTH - 1) + ["leaf"])}
    # One level more than MAX_TREE_DEPTH is not read.
    assert expand({"n": shallow}) == frozenset()


def test_advertised_paths_reads_initialize_capabilities() -> None:
    caps = {"tools": {}, "experimental": {"mcpl": {"version": "0.5", "pushEvents": True}}}
    assert advertised_paths(caps) == frozenset({"tools", "pushEvents"})
    assert advertised_paths({"tools": {}}) is None  # plain MCP
    assert advertised_paths({"experimental": {"mcpl": True}}) is None
    assert advertised_paths(None) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)


@given(json_values)
def test_expand_never_raises_and_returns_strings(tree: Any) -> None:
    paths = expand(tree)
    assert all(isinstance(p, str) and "*" not in p for p in paths)


# ---- matches -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("channels.publish", "channels.publish", True),
        ("channels.publish", "channels.register", False),
        ("channels.*", "channels.publish", True),
        ("channels.*", "channels.register", True),
        # * is one segment: not two...
        ("channels.*", "channels.publish.anything", False),
        ("contextHooks.*", "contextHooks.beforeInference.inject.system", False),
        ("contextHooks.*.*.*", "contextHooks.beforeInference.inject.system", True),
        # ...and not zero.
        ("channels.*", "channels", False),
        ("*", "pushEvents", True),
        ("*", "channels.publish", False),
        ("*.publish", "channels.publish", True),
        ("*.*", "channels.publish", True),
        # A bare parent grants none of its leaves.
        ("channels", "channels.publish", False),
        ("contextHooks.beforeInference", "contextHooks.beforeInference.observe", False),
        ("inferenceRequest", "inferenceRequest.streaming", False),
        ("inferenceRequest", "inferenceRequest", True),
        # * is a whole segment, never a glob inside one.
        ("chan*.publish", "channels.publish", False),
        ("channels.pub*", "channels.publish", False),
        ("", "pushEvents", False),
    ],
)
def test_matches(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern, path) is expected


segments = st.text(alphabet="abc", min_size=1, max_size=2)


@given(st.lists(segments, min_size=1, max_size=5), st.lists(segments, min_size=1, max_size=5))
def test_a_pattern_matches_only_paths_of_its_own_depth(pattern: list[str], path: list[str]) -> None:
    starred = [("*" if i % 2 else s) for i, s in enumerate(pattern)]
    if matches(".".join(starred), ".".join(path)):
        assert len(starred) == len(path)
    assert matches(".".join(path), ".".join(path))


# ---- effective ---------------------------------------------------------------------


def test_effective_is_grants_intersected_with_advertised() -> None:
    advertised = frozenset({"pushEvents", "channels.register", "channels.publish", "modelInfo"})
    grants = ["pushEvents", "channels.*", "inferenceRequest"]
    # inferenceRequest is granted but not advertised; modelInfo advertised, not granted.
    assert effective(grants, advertised) == {"pushEvents", "channels.register", "channels.publish"}


def test_absence_is_denial() -> None:
    advertised = frozenset(ADVERTISED_PATHS)
    assert effective([], advertised) == frozenset()
    assert effective(["channels", "contextHooks"], advertised) == frozenset()
    assert effective(["contextHooks.*"], advertised) == frozenset()


def test_a_bare_star_grants_depth_one_paths_only() -> None:
    assert effective(["*"], ADVERTISED_PATHS) == {
        "pushEvents",
        "tools",
        "modelInfo",
        "inferenceRequest",
        "inferenceLifecycle",
    }


def test_tool_lifecycle_needs_an_explicit_grant() -> None:
    advertised = frozenset({"toolLifecycle.observe", "toolLifecycle.inputs"})
    assert effective(["toolLifecycle.*", "*.*"], advertised) == frozenset()
    assert effective(["toolLifecycle.observe"], advertised) == {"toolLifecycle.observe"}


def test_host_command_is_granted_by_configuration_alone() -> None:
    assert effective(["hostCommand"], frozenset()) == {"hostCommand"}
    assert effective(["*"], frozenset({"pushEvents"})) == {"pushEvents"}


@pytest.mark.parametrize(
    ("grants", "message"),
    [
        ("pushEvents", "capability grants must be a list of patterns, not a string"),
        ([1], "a capability grant pattern must be a string, not int"),
        ([None], "a capability grant pattern must be a string, not NoneType"),
    ],
)
def test_bad_grant_configuration_is_refused(grants: Any, message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        effective(grants, frozenset({"pushEvents"}))
    assert str(info.value) == message


@given(
    st.lists(st.sampled_from([*sorted(ADVERTISED_PATHS), "*", "channels.*", "x.*", "hostCommand"])),
    st.frozensets(st.sampled_from(sorted(ADVERTISED_PATHS))),
)
def test_effective_never_exceeds_what_was_advertised(grants: list[str], advertised: Any) -> None:
    chosen = effective(grants, advertised)
    assert chosen - {"hostCommand"} <= advertised
    assert all(any(matches(g, p) for g in grants) for p in chosen)


def test_denied_is_advertised_minus_granted() -> None:
    advertised = frozenset({"pushEvents", "modelInfo"})
    assert denied(advertised, frozenset({"pushEvents", "hostCommand"})) == {"modelInfo"}


# ---- host advertisement ------------------------------------------------------------


def test_host_advertisement_lists_what_the_host_supports() -> None:
    tree = host_advertisement()
    assert tree["version"] == MCPL_VERSION == "0.5"
    assert tree["inferenceRequest"] == {"streaming": True}
    assert tree["channels"] == dict.fromkeys(
        ["register", "lifecycle", "publish", "incoming", "streaming", "acknowledge", "typing"],
        True,
    )
    assert tree["toolLifecycle"] == {"observe": True}
    assert tree["pushEvents"] is True
    assert tree["modelInfo"] is True
    assert expand(tree) == HOST_SUPPORTED
    json.dumps(tree)


def test_host_advertisement_never_claims_unsupported_children() -> None:
    tree = host_advertisement({"inferenceRequest", "pushEvents"})
    assert tree == {"version": "0.5", "inferenceRequest": {"streaming": False}, "pushEvents": True}
    assert expand(tree) == {"inferenceRequest", "pushEvents"}


@given(st.frozensets(st.sampled_from(sorted(ADVERTISED_PATHS - {"tools"}))))
def test_host_advertisement_round_trips(paths: frozenset[str]) -> None:
    if "inferenceRequest.streaming" in paths:
        paths |= {"inferenceRequest"}
    assert expand(host_advertisement(paths)) == paths


@pytest.mark.parametrize(
    ("supported", "message"),
    [
        ({"tools"}, "the host cannot advertise 'tools': not an MCPL path"),
        ({"hostCommand"}, "the host cannot advertise 'hostCommand': not an MCPL path"),
        ({"nope"}, "the host cannot advertise 'nope': not an MCPL path"),
        (
            {"inferenceRequest.streaming"},
            "'inferenceRequest.streaming' is advertised without 'inferenceRequest'",
        ),
        ("pushEvents", "capability grants must be a list of patterns, not a string"),
    ],
)
def test_host_advertisement_refuses_what_it_cannot_say(supported: Any, message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        host_advertisement(supported)
    assert str(info.value) == message
