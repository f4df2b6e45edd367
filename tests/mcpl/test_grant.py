"""The grant state machine: featureSets/update proposals, receipts, failures, epochs."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpl_host.mcpl.grant import (
    UPDATE_METHOD,
    Applied,
    Failed,
    Grant,
    GrantState,
    Refused,
    Stale,
    UnavailableFeature,
)
from mcpl_host.protocol.errors import ProtocolError

A, B, C = "pushEvents", "channels.register", "channels.publish"
OK: dict[str, Any] = {"accepted": True}


def active(paths: set[str]) -> Grant:
    grant = Grant()
    update = grant.propose(paths)
    outcome = grant.receipt(update.update_id, OK)
    assert isinstance(outcome, Applied)
    return grant


# ---- the start -----------------------------------------------------------------------


def test_nothing_is_granted_before_the_first_receipt() -> None:
    grant = Grant()
    assert grant.granted == frozenset()
    assert grant.released is False
    assert grant.state is GrantState.AWAITING
    assert not grant.allows(A)
    grant.propose({A, B})
    assert not grant.allows(A)
    assert not grant.released


def test_the_first_update_is_sent_even_when_empty() -> None:
    grant = Grant()
    update = grant.propose(frozenset())
    assert update.method == UPDATE_METHOD == "featureSets/update"
    assert update.params == {"effectiveCapabilities": []}
    assert update.proposed == frozenset()
    outcome = grant.receipt(update.update_id, OK)
    assert isinstance(outcome, Applied)
    assert outcome.released
    assert grant.released
    assert grant.state is GrantState.ACTIVE
    assert grant.granted == frozenset()


def test_update_params_are_sorted_and_carry_the_optional_members() -> None:
    grant = Grant()
    update = grant.propose(
        {C, A, B}, denied={"modelInfo"}, enabled=["memory.retrieval"], disabled=["memory.x"]
    )
    assert update.params == {
        "effectiveCapabilities": sorted([A, B, C]),
        "deniedCapabilities": ["modelInfo"],
        "enabled": ["memory.retrieval"],
        "disabled": ["memory.x"],
    }
    msgspec.json.encode(update.params)


def test_a_path_both_granted_and_denied_is_refused() -> None:
    with pytest.raises(ValueError, match=f"^paths both granted and denied: {B}, {A}$"):
        Grant().propose({A, B, C}, denied={A, B})


def test_host_local_paths_are_granted_but_never_sent() -> None:
    grant = Grant()
    update = grant.propose({"hostCommand", A}, denied={"hostCommand"})
    assert update.params == {"effectiveCapabilities": [A]}
    grant.receipt(update.update_id, OK)
    assert grant.allows("hostCommand")


def test_update_ids_increase() -> None:
    grant = Grant()
    first = grant.propose(set()).update_id
    second = grant.propose(set()).update_id
    grant.reset()
    third = grant.propose(set()).update_id
    assert first < second < third
    assert grant.outstanding == (third,)


# ---- reduction and expansion -------------------------------------------------------------


def test_an_expansion_applies_only_after_an_accepted_receipt() -> None:
    grant = active({A})
    update = grant.propose({A, B})
    assert update.expansion == {B}
    assert update.reduced == frozenset()
    assert not grant.allows(B)
    assert grant.allows(A)
    outcome = grant.receipt(update.update_id, OK)
    assert isinstance(outcome, Applied)
    assert outcome.added == {B}
    assert outcome.removed == frozenset()
    assert not outcome.released  # the hold ended with the first receipt
    assert grant.allows(B)


def test_a_reduction_applies_before_the_request_is_sent() -> None:
    grant = active({A, B})
    update = grant.propose({A})
    assert update.reduced == {B}
    assert not grant.allows(B)  # right after propose, before anything is written
    assert grant.allows(A)
    grant.receipt(update.update_id, OK)
    assert grant.granted == {A}


def test_a_change_both_ways_reduces_now_and_expands_later() -> None:
    grant = active({A})
    update = grant.propose({B})
    assert update.reduced == {A}
    assert update.expansion == {B}
    assert grant.granted == frozenset()
    grant.receipt(update.update_id, OK)
    assert grant.granted == {B}


def test_an_unanswered_expansion_never_applies() -> None:
    grant = active({A, B})
    update = grant.propose({A, C})
    assert grant.failed(update.update_id) == Failed(update.update_id, released=False)
    assert grant.granted == {A}  # the reduction of B stays; C never came
    # A late answer for it changes nothing.
    late = grant.receipt(update.update_id, OK)
    assert isinstance(late, Stale)
    assert grant.granted == {A}
    assert isinstance(grant.failed(update.update_id), Stale)


def test_the_hold_ends_when_every_update_of_the_epoch_failed() -> None:
    grant = Grant()
    first = grant.propose({A})
    second = grant.propose({A})
    assert grant.failed(first.update_id) == Failed(first.update_id, released=False)
    assert not grant.released
    assert grant.failed(second.update_id) == Failed(second.update_id, released=True)
    assert grant.released
    assert grant.granted == frozenset()
    assert grant.state is GrantState.AWAITING
    # The host may try again; the grant still expands only on a receipt.
    retry = grant.propose({A})
    assert not grant.allows(A)
    grant.receipt(retry.update_id, OK)
    assert grant.allows(A)


# ---- receipts ------------------------------------------------------------------------


def test_a_degraded_receipt_removes_the_unavailable_paths() -> None:
    grant = Grant()
    update = grant.propose({A, B, C})
    outcome = grant.receipt(
        update.update_id,
        {
            "accepted": True,
            "mode": "degraded",
            "unavailableFeatures": [
                C,
                {
                    "featureSet": "memory.extraction",
                    "missingCapabilities": ["inferenceLifecycle"],
                    "effect": "disabled",
                },
            ],
            "notes": [],
        },
    )
    assert outcome == Applied(
        update_id=update.update_id,
        granted=frozenset({A, B}),
        added=frozenset({A, B}),
        removed=frozenset(),
        degraded=True,
        unavailable_features=(
            UnavailableFeature("memory.extraction", "disabled", ("inferenceLifecycle",)),
        ),
        released=True,
    )
    assert grant.granted == {A, B}


def test_an_unavailable_feature_may_name_no_missing_capabilities() -> None:
    grant = Grant()
    update = grant.propose({A})
    entry = {"featureSet": "memory.extraction", "effect": "degraded"}
    outcome = grant.receipt(update.update_id, {"accepted": True, "unavailableFeatures": [entry]})
    assert isinstance(outcome, Applied)
    assert outcome.unavailable_features == (
        UnavailableFeature("memory.extraction", "degraded", ()),
    )


def test_feature_testimony_takes_nothing_from_the_grant() -> None:
    grant = Grant()
    update = grant.propose({A})
    entry = {"featureSet": "x", "missingCapabilities": [A], "effect": "disabled"}
    outcome = grant.receipt(update.update_id, {"accepted": True, "unavailableFeatures": [entry]})
    assert isinstance(outcome, Applied)
    assert not outcome.degraded
    assert grant.granted == {A}


def test_a_receipt_never_widens_the_grant() -> None:
    grant = Grant()
    update = grant.propose({A})
    outcome = grant.receipt(
        update.update_id,
        {
            "accepted": True,
            "effectiveCapabilities": [A, B, "modelInfo"],
            "grantedCapabilities": ["inferenceRequest"],
            "missingCapabilities": [C],
            "unavailableFeatures": ["modelInfo"],  # not proposed: nothing to remove
        },
    )
    assert isinstance(outcome, Applied)
    assert grant.granted == {A}


def test_a_receipt_may_be_json_text() -> None:
    grant = Grant()
    first = grant.propose({A})
    assert isinstance(grant.receipt(first.update_id, b'{"accepted": true}'), Applied)
    second = grant.propose({A, B})
    raw = msgspec.Raw(b'{"accepted":true}')
    assert isinstance(grant.receipt(second.update_id, raw), Applied)
    assert grant.granted == {A, B}


@pytest.mark.parametrize("fallback", ["mcp-only", "close"])
def test_a_refusal_turns_mcpl_off(fallback: str) -> None:
    grant = active({A, B})
    update = grant.propose({A, B, C})
    outcome = grant.receipt(
        update.update_id,
        {
            "accepted": False,
            "fallback": fallback,
            "missingCapabilities": ["contextHooks.beforeInference.inject.system"],
            "reason": "needs\ninject",
        },
    )
    assert isinstance(outcome, Refused)
    assert outcome.update_id == update.update_id
    assert outcome.fallback == fallback
    assert outcome.error is None
    assert outcome.reason == "needs\\u000ainject"  # a peer's text is escaped for logs
    assert outcome.missing_capabilities == ("contextHooks.beforeInference.inject.system",)
    assert grant.granted == frozenset()
    assert not grant.allows(A)
    assert grant.state is (GrantState.CLOSE if fallback == "close" else GrantState.MCP_ONLY)
    assert grant.released
    with pytest.raises(RuntimeError, match="reset"):
        grant.propose({A})


def test_a_refusal_never_widens_either() -> None:
    grant = Grant()
    update = grant.propose({A})
    outcome = grant.receipt(update.update_id, {"accepted": False, "fallback": "mcp-only"})
    assert isinstance(outcome, Refused)
    assert outcome.released
    assert outcome.reason is None


NOT_AN_OBJECT = "the result must be an object, not "
NOT_BOOLEAN = "accepted must be a boolean, not "
NO_FALLBACK = 'a refusal must name fallback "mcp-only" or "close", not '
BAD_MODE = 'mode must be "degraded" or absent, not '
BAD_ENTRY = "] must be a capability path or an object with string featureSet and effect members"

MALFORMED: list[tuple[Any, str]] = [
    (None, NOT_AN_OBJECT + "null"),
    ([], NOT_AN_OBJECT + "an array"),
    ("accepted", NOT_AN_OBJECT + "a string"),
    (True, NOT_AN_OBJECT + "a boolean"),
    (2.5, NOT_AN_OBJECT + "a number"),
    (object(), NOT_AN_OBJECT + "object"),  # not JSON at all: named by its type
    ({}, NOT_BOOLEAN + "null"),
    ({"accepted": "true"}, NOT_BOOLEAN + "a string"),
    ({"accepted": 1}, NOT_BOOLEAN + "a number"),
    ({"accepted": None}, NOT_BOOLEAN + "null"),
    ({"accepted": {}}, NOT_BOOLEAN + "an object"),
    ({"accepted": False}, NO_FALLBACK + "null"),  # fallback is required on a refusal
    ({"accepted": False, "fallback": "degrade"}, NO_FALLBACK + "degrade"),
    ({"accepted": False, "fallback": None}, NO_FALLBACK + "null"),
    ({"accepted": False, "fallback": []}, NO_FALLBACK + "an array"),
    # The server's text is escaped and cut at 64 UTF-16 units.
    ({"accepted": False, "fallback": "y\n" * 40}, NO_FALLBACK + "y\\u000a" * 8 + "y…[cut]"),
    ({"accepted": False, "fallback": "y" * 100}, NO_FALLBACK + "y" * 58 + "…[cut]"),
    ({"accepted": True, "mode": "full"}, BAD_MODE + "full"),
    ({"accepted": True, "mode": None}, BAD_MODE + "null"),
    ({"accepted": True, "mode": 3}, BAD_MODE + "a number"),
    ({"accepted": True, "mode": "x" * 100}, BAD_MODE + "x" * 58 + "…[cut]"),
    (
        {"accepted": True, "unavailableFeatures": "channels.publish"},
        "unavailableFeatures must be an array, not a string",
    ),
    (
        {"accepted": True, "unavailableFeatures": {}},
        "unavailableFeatures must be an array, not an object",
    ),
    ({"accepted": True, "unavailableFeatures": [1]}, "unavailableFeatures[0" + BAD_ENTRY),
    ({"accepted": True, "unavailableFeatures": [C, 2]}, "unavailableFeatures[1" + BAD_ENTRY),
    (
        {"accepted": True, "unavailableFeatures": [{"featureSet": "x"}]},  # effect is required
        "unavailableFeatures[0" + BAD_ENTRY,
    ),
    (
        {"accepted": True, "unavailableFeatures": [{"featureSet": 1, "effect": "disabled"}]},
        "unavailableFeatures[0" + BAD_ENTRY,
    ),
    (
        {
            "accepted": True,
            "unavailableFeatures": [{"featureSet": "x", "effect": "d", "missingCapabilities": [1]}],
        },
        "unavailableFeatures[0" + BAD_ENTRY,
    ),
    (b"not json", "not JSON"),
    (b"[1]", NOT_AN_OBJECT + "an array"),
    (msgspec.Raw(b'"x"'), NOT_AN_OBJECT + "a string"),
]


@pytest.mark.parametrize(("result", "what"), MALFORMED)
def test_a_malformed_receipt_is_a_refusal_with_a_protocol_error(result: Any, what: str) -> None:
    grant = active({A})
    update = grant.propose({A, B})
    outcome = grant.receipt(update.update_id, result)
    assert isinstance(outcome, Refused)
    assert (outcome.update_id, outcome.fallback, outcome.reason) == (
        update.update_id,
        "mcp-only",
        None,
    )
    assert outcome.missing_capabilities == ()
    assert outcome.released is False  # the first receipt of the epoch released the hold
    assert type(outcome.error) is ProtocolError
    assert str(outcome.error) == f"malformed featureSets/update receipt: {what}"
    assert grant.granted == frozenset()
    assert grant.state is GrantState.MCP_ONLY


def test_a_receipt_for_no_outstanding_update_is_stale() -> None:
    grant = Grant()
    outcome = grant.receipt(99, OK)
    assert outcome == Stale(
        99,
        "no outstanding featureSets/update with this id "
        "(already settled, superseded, failed, or sent on an earlier epoch)",
    )
    assert grant.failed(99) == outcome
    assert not grant.released
    update = grant.propose({A})
    grant.receipt(update.update_id, OK)
    assert isinstance(grant.receipt(update.update_id, OK), Stale)  # answered twice


# ---- overlapping proposals -----------------------------------------------------------


def test_an_older_receipt_applies_nothing_the_newest_proposal_left_out() -> None:
    grant = Grant()
    older = grant.propose({A, B})
    newer = grant.propose({A})
    outcome = grant.receipt(older.update_id, OK)
    assert isinstance(outcome, Applied)
    assert grant.granted == {A}
    assert grant.outstanding == (newer.update_id,)
    grant.receipt(newer.update_id, OK)
    assert grant.granted == {A}


def test_an_older_receipt_leaves_the_newer_expansion_waiting() -> None:
    grant = Grant()
    older = grant.propose({A})
    newer = grant.propose({A, B})
    grant.receipt(older.update_id, OK)
    assert grant.granted == {A}
    grant.receipt(newer.update_id, OK)
    assert grant.granted == {A, B}


def test_an_intermediate_removal_is_never_undone_by_an_older_receipt() -> None:
    grant = Grant()
    first = grant.propose({A})
    grant.propose(set())  # A revoked...
    grant.propose({A})  # ...and proposed again: only its own receipt brings A back
    grant.receipt(first.update_id, OK)
    assert grant.granted == frozenset()


def test_a_newer_receipt_supersedes_the_older_proposals() -> None:
    grant = Grant()
    older = grant.propose({A, B})
    newer = grant.propose({B})
    grant.receipt(newer.update_id, OK)
    assert grant.granted == {B}
    assert grant.outstanding == ()
    assert isinstance(grant.receipt(older.update_id, OK), Stale)
    assert grant.granted == {B}


def test_a_refusal_of_an_older_proposal_turns_mcpl_off() -> None:
    grant = Grant()
    older = grant.propose({A})
    grant.propose({A, B})
    outcome = grant.receipt(older.update_id, {"accepted": False, "fallback": "close"})
    assert isinstance(outcome, Refused)
    assert grant.outstanding == ()
    assert grant.state is GrantState.CLOSE


# ---- epochs --------------------------------------------------------------------------


def test_reset_starts_a_new_epoch_with_nothing_granted() -> None:
    grant = active({A, B})
    pending = grant.propose({A})
    assert grant.released
    grant.reset()
    assert grant.epoch == 1
    assert grant.granted == frozenset()
    assert grant.released is False
    assert grant.state is GrantState.AWAITING
    assert grant.latest is None
    # The old epoch's answer can never apply to the new one.
    assert isinstance(grant.receipt(pending.update_id, OK), Stale)
    update = grant.propose({A, B})
    assert not grant.allows(A)
    outcome = grant.receipt(update.update_id, OK)
    assert isinstance(outcome, Applied)
    assert outcome.released
    assert grant.granted == {A, B}


def test_reset_turns_mcpl_back_on_after_a_refusal() -> None:
    grant = Grant()
    update = grant.propose({A})
    grant.receipt(update.update_id, {"accepted": False, "fallback": "mcp-only"})
    grant.reset()
    assert grant.epoch == 1
    update = grant.propose({A})
    grant.receipt(update.update_id, OK)
    assert grant.allows(A)
    grant.reset()
    assert grant.epoch == 2


# ---- properties ----------------------------------------------------------------------

PATHS = [A, B, C, "modelInfo", "hostCommand"]
path_sets = st.frozensets(st.sampled_from(PATHS))
results = st.one_of(
    st.builds(
        lambda unavailable, extra: {
            "accepted": True,
            "unavailableFeatures": sorted(unavailable),
            "effectiveCapabilities": sorted(extra),
        },
        path_sets,
        path_sets,
    ),
    st.sampled_from(
        [
            OK,
            {"accepted": True, "mode": "degraded"},
            {"accepted": False, "fallback": "mcp-only"},
            {"accepted": False, "fallback": "close"},
            {"accepted": "yes"},
        ]
    ),
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("propose"), path_sets),
        st.tuples(st.just("receipt"), st.integers(0, 6), results),
        st.tuples(st.just("failed"), st.integers(0, 6)),
        st.tuples(st.just("reset")),
    ),
    max_size=25,
)


@given(operations)
def test_the_grant_never_exceeds_the_proposals(ops: list[tuple[Any, ...]]) -> None:
    grant = Grant()
    proposals: dict[int, frozenset[str]] = {}
    for op in ops:
        if op[0] == "propose":
            if grant.state in (GrantState.MCP_ONLY, GrantState.CLOSE):
                with pytest.raises(RuntimeError):
                    grant.propose(op[1])
                continue
            before = grant.granted
            update = grant.propose(op[1])
            proposals[update.update_id] = op[1]
            assert grant.granted == before & op[1]  # a reduction is immediate...
            assert update.expansion == op[1] - grant.granted  # ...an expansion waits
        elif op[0] == "receipt":
            ids = sorted(proposals) or [1]
            update_id = ids[op[1] % len(ids)]
            before = grant.granted
            outcome = grant.receipt(update_id, op[2])
            if isinstance(outcome, Applied):
                assert outcome.granted <= proposals[update_id]
            elif isinstance(outcome, Stale):
                assert grant.granted == before
        elif op[0] == "failed":
            ids = sorted(proposals) or [1]
            before = grant.granted
            grant.failed(ids[op[1] % len(ids)])
            assert grant.granted == before  # a failure never changes the grant
        else:
            grant.reset()
        # The grant is always a subset of the newest proposal of the epoch...
        latest = grant.latest if grant.latest is not None else frozenset()
        assert grant.granted <= latest
        # ...and nothing at all before a receipt, or after a refusal.
        if grant.state is not GrantState.ACTIVE:
            assert grant.granted == frozenset()
        assert all(grant.allows(p) == (p in grant.granted) for p in PATHS)


@given(path_sets, path_sets, results)
def test_a_receipt_never_widens_a_single_proposal(
    start: frozenset[str], proposed: frozenset[str], result: dict[str, Any]
) -> None:
    grant = active(set(start))
    update = grant.propose(proposed)
    grant.receipt(update.update_id, result)
    assert grant.granted <= proposed
    assert grant.granted <= start | proposed
