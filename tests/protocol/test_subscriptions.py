"""The wire rules of subscriptions/listen (2026-07-28), bytes in, decisions out."""

from __future__ import annotations

import pytest

from mcpl_host.protocol.errors import ProtocolError
from mcpl_host.protocol.subscriptions import (
    Subscriptions,
    cancelled_request,
    decode_acknowledged,
    decode_carried,
    names,
    wanted,
)

SID = "io.modelcontextprotocol/subscriptionId"


def test_only_kinds_advertising_list_changed_true_are_asked_for() -> None:
    caps = {
        "tools": {"listChanged": True},
        "prompts": {"listChanged": False},
        "resources": {"subscribe": True},  # no listChanged: absent means none is sent
        "completions": {},
    }
    asked = wanted(caps, ["file:///a", "file:///b", "file:///a"])
    assert asked.to_wire() == {
        "toolsListChanged": True,
        "resourceSubscriptions": ["file:///a", "file:///b"],
    }
    assert wanted({"tools": {"listChanged": "yes"}}, []).empty
    assert wanted({"tools": True}, []).empty


def test_an_acknowledgement_honours_no_more_than_was_asked() -> None:
    asked = Subscriptions(tools_list_changed=True, resources=("file:///a", "file:///b"))
    sid, ack = decode_acknowledged(
        b'{"notifications":{"toolsListChanged":true,"promptsListChanged":true,'
        b'"resourceSubscriptions":["file:///b","file:///zzz"]},"_meta":{"'
        + SID.encode()
        + b'":7}}',
        asked,
    )
    assert sid == 7
    assert ack == Subscriptions(tools_list_changed=True, resources=("file:///b",))
    _, none = decode_acknowledged(
        b'{"notifications":{"toolsListChanged":1,"resourceSubscriptions":"file:///a"}}', asked
    )
    assert none == Subscriptions()  # 1 is not true; a string is not a list of URIs
    with pytest.raises(ProtocolError):
        decode_acknowledged(b'{"notifications":[]}', asked)
    with pytest.raises(ProtocolError):
        decode_acknowledged(b"{}", asked)


def test_what_an_acknowledged_set_lets_through() -> None:
    asked = Subscriptions(tools_list_changed=True, resources=("file:///a", "file:///b"))
    ack = Subscriptions(tools_list_changed=True, resources=("file:///a",))
    assert ack.admits("notifications/tools/list_changed", None, asked)
    assert not ack.admits("notifications/prompts/list_changed", None, asked)
    assert ack.admits("notifications/resources/updated", "file:///a", asked)
    assert ack.admits("notifications/resources/updated", "file:///a/sub", asked)
    assert not ack.admits("notifications/resources/updated", "file:///b", asked)  # declined
    assert not Subscriptions().admits("notifications/resources/updated", "file:///a", asked)
    assert not ack.admits("notifications/message", None, asked)


def test_the_subscription_id_is_the_listen_id_as_sent() -> None:
    carried = decode_carried(b'{"uri":"file:///a","_meta":{"' + SID.encode() + b'":3}}')
    assert carried is not None
    assert (carried.subscription_id, carried.uri) == (3, "file:///a")
    assert names(3, 3)
    assert not names("3", 3)
    assert not names(True, 1)
    assert not names(3.0, 3)
    assert decode_carried(b"[1]") is None
    bare = decode_carried(b"{}")
    assert bare is not None
    assert bare.subscription_id is None
    assert cancelled_request(b'{"requestId":5,"reason":"shutting down"}') == 5
    assert cancelled_request(b"nope") is None
