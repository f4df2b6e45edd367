"""Typed params and results of the MCPL hooks: JSON in, structs out, and back."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from mcpl_host import ConfigurationError, Mcpl
from mcpl_host.mcpl.methods import INBOUND
from mcpl_host.mcpl.types import (
    PARAMS_TYPES,
    ChannelDescriptor,
    ChannelResult,
    ChannelsChanged,
    ChannelsIncoming,
    ChannelsIncomingResult,
    ChannelsRegister,
    ChannelsRegisterResult,
    HostCommand,
    IncomingResult,
    InferenceChunk,
    InferenceRequest,
    InferenceResult,
    ManifestChanged,
    ModelInfoResult,
    PushEvent,
    PushEventResult,
    StateRollback,
    StateRollbackResult,
    ToolsObserve,
    decode_params,
)


def wire(value: Any) -> bytes:
    return json.dumps(value).encode()


def encoded(value: msgspec.Struct) -> Any:
    return json.loads(msgspec.json.encode(value))


def test_every_inbound_method_has_a_params_type() -> None:
    assert set(PARAMS_TYPES) == set(INBOUND)


def test_push_event_keeps_what_the_spec_leaves_open() -> None:
    params = {
        "featureSet": "gitlab.notifications",
        "eventId": "evt_abc123",
        "timestamp": "2026-01-23T10:30:00Z",
        "origin": {"server": "gitlab", "webhook": "push"},
        "payload": {"content": [{"type": "text", "text": "hi", "extra": 1}], "more": True},
        "tags": ["chat:mention"],
        "coalesce": {"key": "doc:1"},
        "unknownMember": 1,
    }
    event = decode_params("push/event", wire(params))
    assert isinstance(event, PushEvent)
    assert event.feature_set == "gitlab.notifications"
    assert event.event_id == "evt_abc123"
    assert event.content == [{"type": "text", "text": "hi", "extra": 1}]
    assert event.payload["more"] is True
    assert event.origin == {"server": "gitlab", "webhook": "push"}
    assert event.tags == ["chat:mention"]
    assert event.coalesce == {"key": "doc:1"}


NO_CONTENT = "payload.content must be an array of content blocks"


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"featureSet": "f", "eventId": "e", "timestamp": "t", "payload": {}}, NO_CONTENT),
        (
            {"featureSet": "f", "eventId": "e", "timestamp": "t", "payload": {"content": "x"}},
            NO_CONTENT,
        ),
        (
            {"featureSet": "f", "timestamp": "t", "payload": {"content": []}},
            "Object missing required field `eventId`",
        ),
        (
            {"featureSet": "f", "eventId": 1, "timestamp": "t", "payload": {"content": []}},
            "Expected `str`, got `int` - at `$.eventId`",
        ),
    ],
)
def test_a_bad_push_event_fails_validation(params: Any, message: str) -> None:
    with pytest.raises(msgspec.ValidationError) as info:
        decode_params("push/event", wire(params))
    assert str(info.value) == message


def test_results_leave_unset_members_out() -> None:
    assert encoded(PushEventResult(accepted=True)) == {"accepted": True}
    assert encoded(PushEventResult(accepted=False, reason="busy")) == {
        "accepted": False,
        "reason": "busy",
    }
    assert encoded(PushEventResult(accepted=True, inference_id="inf_1")) == {
        "accepted": True,
        "inferenceId": "inf_1",
    }


def test_inference_request_and_result() -> None:
    request = decode_params(
        "inference/request",
        wire(
            {
                "featureSet": "memory.consolidation",
                "conversationId": "conv_123",
                "stream": True,
                "messages": [{"role": "user", "content": "Summarize"}],
                "preferences": {"maxTokens": 500, "modelTier": "fast"},
            }
        ),
    )
    assert request == InferenceRequest(
        feature_set="memory.consolidation",
        messages=[{"role": "user", "content": "Summarize"}],
        stream=True,
        preferences={"maxTokens": 500, "modelTier": "fast"},
        conversation_id="conv_123",
    )
    plain = decode_params("inference/request", wire({"featureSet": "m", "messages": []}))
    assert isinstance(plain, InferenceRequest)
    assert plain.stream is False
    result = InferenceResult(content="ok", model="m", finish_reason="end_turn")
    assert encoded(result) == {"content": "ok", "model": "m", "finishReason": "end_turn"}
    chunk = InferenceChunk(request_id=1, index=0, delta="Con")
    assert encoded(chunk) == {"requestId": 1, "index": 0, "delta": "Con"}


def test_model_info() -> None:
    assert decode_params("model/info", None) == decode_params("model/info", b"{}")
    result = ModelInfoResult(id="claude", vendor="anthropic", context_window=200000)
    assert encoded(result) == {"id": "claude", "vendor": "anthropic", "contextWindow": 200000}


def test_channels_register_and_result() -> None:
    descriptor = {
        "id": "discord:#general",
        "type": "discord",
        "label": "#general",
        "direction": "outbound",
        "address": {"guild": "acme"},
        "metadata": {"serverId": "x"},
    }
    register = decode_params("channels/register", wire({"channels": [descriptor]}))
    assert isinstance(register, ChannelsRegister)
    assert register.channels[0] == ChannelDescriptor(
        id="discord:#general",
        type="discord",
        label="#general",
        direction="outbound",
        address={"guild": "acme"},
        metadata={"serverId": "x"},
    )
    result = ChannelsRegisterResult(
        registered=["discord:#general"],
        results=[
            ChannelResult(id="discord:#general", accepted=True),
            ChannelResult(id="x", accepted=False, reason="not granted"),
        ],
    )
    assert encoded(result) == {
        "registered": ["discord:#general"],
        "results": [
            {"id": "discord:#general", "accepted": True},
            {"id": "x", "accepted": False, "reason": "not granted"},
        ],
    }
    with pytest.raises(msgspec.ValidationError):
        decode_params("channels/register", wire({"channels": [{"id": "x", "direction": "up"}]}))


def test_channels_changed_members_default_to_empty() -> None:
    changed = decode_params("channels/changed", wire({"removed": ["discord:#random"]}))
    assert changed == ChannelsChanged(added=[], removed=["discord:#random"], updated=[])


def test_channels_incoming_and_result() -> None:
    message = {
        "channelId": "discord:#general",
        "messageId": "dmsg_123",
        "threadId": "t_42",
        "author": {"id": "u_777", "name": "Alice"},
        "timestamp": "2026-03-05T10:30:00Z",
        "content": [{"type": "text", "text": "What's the status?"}],
        "metadata": {"mentions": ["@bob"]},
    }
    incoming = decode_params("channels/incoming", wire({"messages": [message]}))
    assert isinstance(incoming, ChannelsIncoming)
    assert incoming.messages[0].message_id == "dmsg_123"
    assert incoming.messages[0].author == {"id": "u_777", "name": "Alice"}
    result = ChannelsIncomingResult(
        results=[IncomingResult(message_id="dmsg_123", accepted=True, conversation_id="c")]
    )
    assert encoded(result) == {
        "results": [{"messageId": "dmsg_123", "accepted": True, "conversationId": "c"}]
    }


def test_state_rollback() -> None:
    params = StateRollback(feature_set="notes.edit", checkpoint="chk_abc")
    assert encoded(params) == {"featureSet": "notes.edit", "checkpoint": "chk_abc"}
    result = msgspec.json.decode(
        b'{"checkpoint":"chk_abc","success":false,"reason":"cannot undo"}',
        type=StateRollbackResult,
    )
    assert result == StateRollbackResult(checkpoint="chk_abc", success=False, reason="cannot undo")


def test_tools_observe_rules() -> None:
    params = {
        "rules": [
            {"match": {"serverTool": "click"}, "input": ["x", "y", "target.window_id"]},
            {"match": {"class": "comms"}, "report": False},
            {"match": {}},
        ],
        "_meta": {"progressToken": 1},
    }
    observe = decode_params("tools/observe", wire(params))
    assert isinstance(observe, ToolsObserve)
    assert observe.rules is not None
    assert observe.rules[0].match.server_tool == "click"
    assert observe.rules[0].input == ["x", "y", "target.window_id"]
    assert observe.rules[1].match.class_ == "comms"
    assert observe.rules[1].report is False
    assert observe.rules[2].input is False
    assert observe.meta == {"progressToken": 1}
    cleared = decode_params("tools/observe", wire({"rules": None}))
    assert isinstance(cleared, ToolsObserve)
    assert cleared.rules is None


@pytest.mark.parametrize(
    ("params", "message"),
    [
        # a misspelled member must never read as "clear the filter"
        ({"ruless": []}, "Object contains unknown field `ruless`"),
        (
            {"rules": [{"match": {"tools": "x"}}]},
            "Object contains unknown field `tools` - at `$.rules[0].match`",
        ),
        (
            {"rules": [{"match": {}, "report": "no"}]},
            "Expected `bool`, got `str` - at `$.rules[0].report`",
        ),
        (
            {"rules": [{"match": {}, "input": [""]}]},
            "input field paths must be non-empty strings - at `$.rules[0]`",
        ),
        (
            {"rules": [{"match": {}, "input": "x"}]},
            "Expected `bool | array`, got `str` - at `$.rules[0].input`",
        ),
        (
            {"rules": [{"match": {}, "extra": 1}]},
            "Object contains unknown field `extra` - at `$.rules[0]`",
        ),
    ],
)
def test_tools_observe_rejects_unknown_and_bad_members(params: Any, message: str) -> None:
    with pytest.raises(msgspec.ValidationError) as info:
        decode_params("tools/observe", wire(params))
    assert str(info.value) == message


def test_host_command_and_manifest_changed() -> None:
    command = decode_params(
        "host/command", wire({"command": "undo", "requesterName": "op", "messages": 2})
    )
    assert command == HostCommand(command="undo", requester_name="op")
    changed = decode_params(
        "mcpl/manifestChanged", wire({"revision": "sha256:x", "domains": ["capabilities"]})
    )
    assert changed == ManifestChanged(revision="sha256:x", domains=["capabilities"])


def test_params_that_are_not_an_object_fail() -> None:
    with pytest.raises(msgspec.ValidationError):
        decode_params("channels/list", b"[1]")
    with pytest.raises(msgspec.DecodeError):
        decode_params("channels/list", b"{bad")
    with pytest.raises(KeyError):
        decode_params("tools/list", b"{}")


def test_mcpl_bounds_below_their_minimum_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError) as queued:
        Mcpl(max_queued_notifications=0)
    assert str(queued.value) == "Mcpl.max_queued_notifications must be at least 1"
    with pytest.raises(ConfigurationError) as held:
        Mcpl(max_held_notifications=-1)
    assert str(held.value) == "Mcpl.max_held_notifications must be at least 0"
    # the minimums themselves are fine
    assert Mcpl(max_queued_notifications=1, max_held_notifications=0).max_held_notifications == 0
