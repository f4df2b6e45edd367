"""The MCPL method tables and the admission decision for inbound messages."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from mcpl_host.mcpl.capabilities import KNOWN_PATHS
from mcpl_host.mcpl.grant import Grant
from mcpl_host.mcpl.methods import (
    CAPABILITY_DENIED,
    CHANNEL_NOT_PERMITTED,
    CHANNEL_OPEN_FAILED,
    CHECKPOINT_NOT_FOUND,
    FEATURE_SET_NOT_ENABLED,
    INBOUND,
    OUTBOUND,
    UNKNOWN_CHANNEL,
    UNKNOWN_FEATURE_SET,
    Admit,
    Kind,
    Plane,
    Refuse,
    Removed,
    Unknown,
    admit,
    may_send,
    required_capabilities,
)
from mcpl_host.protocol.errors import INVALID_REQUEST, METHOD_NOT_FOUND

EVERYTHING = frozenset(KNOWN_PATHS)

# method, kind, capability, plane: the table as the spec digest states it.
EXPECTED_INBOUND = [
    ("push/event", Kind.REQUEST, "pushEvents", Plane.DATA),
    ("inference/request", Kind.REQUEST, "inferenceRequest", Plane.DATA),
    ("model/info", Kind.REQUEST, "modelInfo", Plane.DATA),
    ("channels/register", Kind.REQUEST, "channels.register", Plane.CONTROL),
    ("channels/changed", Kind.EITHER, "channels.register", Plane.CONTROL),
    ("channels/list", Kind.REQUEST, "channels.register", Plane.CONTROL),
    ("channels/incoming", Kind.REQUEST, "channels.incoming", Plane.DATA),
    ("tools/observe", Kind.REQUEST, "toolLifecycle.observe", Plane.CONTROL),
    ("host/command", Kind.REQUEST, "hostCommand", Plane.CONTROL),
    ("mcpl/manifestChanged", Kind.NOTIFICATION, None, Plane.CONTROL),
]
GATED = [row for row in EXPECTED_INBOUND if row[2] is not None]


def test_error_codes() -> None:
    assert FEATURE_SET_NOT_ENABLED == -32001
    assert CAPABILITY_DENIED == -32002
    assert UNKNOWN_FEATURE_SET == -32003
    assert CHECKPOINT_NOT_FOUND == -32005
    assert (CHANNEL_NOT_PERMITTED, UNKNOWN_CHANNEL, CHANNEL_OPEN_FAILED) == (-32017, -32023, -32024)


def test_the_inbound_table() -> None:
    assert {m: (s.kind, s.capability, s.plane) for m, s in INBOUND.items()} == {
        m: (k, c, p) for m, k, c, p in EXPECTED_INBOUND
    }
    assert all(s.capability is None or s.capability in KNOWN_PATHS for s in INBOUND.values())


def test_the_outbound_table_names_known_paths() -> None:
    assert "state/rollback" in OUTBOUND
    assert "state/rollback" not in INBOUND  # host → server only
    for spec in OUTBOUND.values():
        assert all(path in KNOWN_PATHS for path in spec.any_of)


@pytest.mark.parametrize(("method", "kind", "capability", "plane"), GATED)
def test_a_granted_method_is_admitted(
    method: str, kind: Kind, capability: str, plane: Plane
) -> None:
    decision = admit(method, {}, frozenset({capability}), request=kind is not Kind.NOTIFICATION)
    assert decision == Admit(method, INBOUND[method], (capability,))
    assert decision.spec.plane is plane


@pytest.mark.parametrize(("method", "kind", "capability", "plane"), GATED)
def test_a_method_not_granted_is_refused_with_32002(
    method: str, kind: Kind, capability: str, plane: Plane
) -> None:
    allowed = EVERYTHING - {capability}
    decision = admit(method, {}, allowed)
    assert decision == Refuse(-32002, "Capability denied", {"capability": capability})


@pytest.mark.parametrize(("method", "kind", "capability", "plane"), GATED)
def test_nothing_is_admitted_before_the_first_receipt(
    method: str, kind: Kind, capability: str, plane: Plane
) -> None:
    grant = Grant()
    grant.propose(EVERYTHING)
    decision = admit(method, {}, grant)
    assert isinstance(decision, Refuse)
    assert decision.code == CAPABILITY_DENIED
    assert decision.data == {"capability": capability}


def test_admission_reads_the_live_grant() -> None:
    grant = Grant()
    update = grant.propose({"pushEvents"})
    assert isinstance(admit("push/event", {}, grant), Refuse)
    grant.receipt(update.update_id, {"accepted": True})
    assert isinstance(admit("push/event", {}, grant), Admit)
    grant.propose(set())  # a reduction: refused at once
    assert isinstance(admit("push/event", {}, grant), Refuse)


def test_model_info_is_refused_with_an_error_not_silence() -> None:
    decision = admit("model/info", {}, frozenset())
    assert decision == Refuse(CAPABILITY_DENIED, "Capability denied", {"capability": "modelInfo"})


def test_manifest_changed_is_never_gated() -> None:
    decision = admit("mcpl/manifestChanged", {"revision": "x"}, frozenset(), request=False)
    assert decision == Admit("mcpl/manifestChanged", INBOUND["mcpl/manifestChanged"], ())


def test_channels_changed_may_be_a_request_or_a_notification() -> None:
    allowed = frozenset({"channels.register"})
    assert isinstance(admit("channels/changed", {}, allowed, request=True), Admit)
    assert isinstance(admit("channels/changed", {}, allowed, request=False), Admit)
    refused = admit("channels/changed", {}, frozenset(), request=False)
    assert isinstance(refused, Refuse)
    assert refused.code == CAPABILITY_DENIED


# ---- inference/request streaming -------------------------------------------------------

BASE = frozenset({"inferenceRequest"})
STREAMING = BASE | {"inferenceRequest.streaming"}


@pytest.mark.parametrize("params", [{}, {"stream": False}, {"stream": None}, None, [], "x"])
def test_inference_without_streaming_needs_only_the_base_path(params: Any) -> None:
    assert required_capabilities("inference/request", params) == ("inferenceRequest",)
    assert isinstance(admit("inference/request", params, BASE), Admit)


@pytest.mark.parametrize("params", [{"stream": True}, {"stream": "yes"}, {"stream": 1}])
def test_streaming_inference_needs_the_streaming_leaf(params: Any) -> None:
    assert required_capabilities("inference/request", params) == (
        "inferenceRequest",
        "inferenceRequest.streaming",
    )
    refused = admit("inference/request", params, BASE)
    assert refused == Refuse(
        CAPABILITY_DENIED, "Capability denied", {"capability": "inferenceRequest.streaming"}
    )
    admitted = admit("inference/request", params, STREAMING)
    assert isinstance(admitted, Admit)
    assert admitted.capabilities == ("inferenceRequest", "inferenceRequest.streaming")


def test_the_base_path_is_named_first_when_both_are_missing() -> None:
    refused = admit("inference/request", {"stream": True}, frozenset())
    assert isinstance(refused, Refuse)
    assert refused.data == {"capability": "inferenceRequest"}


def test_streaming_is_read_from_raw_params() -> None:
    raw = msgspec.Raw(b'{"featureSet":"m","messages":[],"stream":true}')
    assert isinstance(admit("inference/request", raw, BASE), Refuse)
    assert isinstance(admit("inference/request", raw, STREAMING), Admit)
    assert isinstance(admit("inference/request", b'{"stream":false}', BASE), Admit)
    assert isinstance(admit("inference/request", b"[1]", BASE), Admit)  # -32602 later
    assert isinstance(admit("inference/request", b"{bad", BASE), Admit)


# ---- removed, unknown, wrong kind ----------------------------------------------------


@pytest.mark.parametrize("method", ["scope/elevate", "featureSets/changed"])
@pytest.mark.parametrize("request_", [True, False])
def test_removed_methods_are_answered_32601(method: str, request_: bool) -> None:
    decision = admit(method, {}, EVERYTHING, request=request_)
    assert isinstance(decision, Removed)
    assert decision.code == METHOD_NOT_FOUND == -32601
    assert "removed in MCPL 0.5" in decision.message


@pytest.mark.parametrize(
    "method",
    ["tools/list", "ping", "state/rollback", "featureSets/update", "push/render", "nope", ""],
)
def test_other_methods_are_left_to_mcp(method: str) -> None:
    assert admit(method, {}, EVERYTHING) == Unknown()


def test_a_request_only_method_sent_as_a_notification_is_refused() -> None:
    decision = admit("push/event", {}, EVERYTHING, request=False)
    assert isinstance(decision, Refuse)
    assert decision.code == INVALID_REQUEST
    assert "must be a request" in decision.message


def test_a_notification_sent_as_a_request_is_refused() -> None:
    decision = admit("mcpl/manifestChanged", {}, EVERYTHING, request=True)
    assert isinstance(decision, Refuse)
    assert decision.code == INVALID_REQUEST
    assert "is a notification" in decision.message


def test_the_kind_is_checked_before_the_grant() -> None:
    decision = admit("push/event", {}, frozenset(), request=False)
    assert isinstance(decision, Refuse)
    assert decision.code == INVALID_REQUEST


# ---- outbound ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("inference/chunk", "inferenceRequest.streaming"),
        ("inference/lifecycle", "inferenceLifecycle"),
        ("channels/open", "channels.lifecycle"),
        ("channels/close", "channels.lifecycle"),
        ("channels/publish", "channels.publish"),
        ("channels/acknowledge", "channels.acknowledge"),
        ("channels/outgoing/chunk", "channels.streaming"),
        ("channels/outgoing/complete", "channels.streaming"),
        ("channels/typing", "channels.typing"),
        ("channels/list", "channels.register"),
        ("tools/lifecycle", "toolLifecycle.observe"),
        ("push/render", "pushEvents"),
    ],
)
def test_outbound_methods_need_their_path(method: str, path: str) -> None:
    assert not may_send(method, EVERYTHING - {path})
    assert may_send(method, frozenset({path}))


@pytest.mark.parametrize("method", ["featureSets/update", "mcpl/manifest", "state/rollback"])
def test_some_outbound_methods_are_ungated(method: str) -> None:
    assert may_send(method, frozenset())
    assert may_send(method, Grant())


def test_before_inference_goes_to_a_server_granted_any_of_its_leaves() -> None:
    assert not may_send("context/beforeInference", frozenset())
    inject_only = frozenset({"contextHooks.beforeInference.inject.beforeUser"})
    assert may_send("context/beforeInference", inject_only)
    assert may_send("context/beforeInference", frozenset({"contextHooks.beforeInference.observe"}))


def test_plain_mcp_methods_are_not_mcpl_to_gate() -> None:
    assert may_send("tools/call", frozenset())
