"""The player alone, with no I/O: outcomes in, commands out (what every driver runs)."""

from __future__ import annotations

import pytest

from mcpl_host.testing import Expected, Script, ScriptFailed
from mcpl_host.testing._player import (
    EOF,
    TIMEOUT,
    Accept,
    Done,
    Hangup,
    Play,
    Player,
    Receive,
    Refuse,
    Send,
    Sleep,
)
from mcpl_host.testing.steps import Expect, ExpectAll, Reply, ReplyError, ScriptData

NOW = 100.0


def player(script: Script, **kwargs: int) -> tuple[Player, Play]:
    return player_of(script.data(), **kwargs)


def player_of(data: ScriptData, **kwargs: int) -> tuple[Player, Play]:
    p = Player(data, clock=lambda: NOW, **kwargs)
    return p, p.play()


def test_handshake_and_a_reply_as_commands() -> None:
    p, play = player(Script(timeout=5).handshake().expect("tools/list").reply({"tools": []}))
    assert next(play) == Accept(NOW + 5)
    assert play.send(True) == Receive(NOW + 5)
    assert play.send(b'{"jsonrpc":"2.0","id":1,"method":"initialize"}') == Send(
        b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}\n'
    )
    assert play.send(None) == Receive(NOW + 5)
    assert play.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') == Receive(NOW + 5)
    # a ping while waiting is answered with its own id, then the wait goes on
    assert play.send(b'{"jsonrpc":"2.0","id":"p","method":"ping"}') == Send(
        b'{"jsonrpc":"2.0","id":"p","result":{}}\n'
    )
    assert play.send(None) == Receive(NOW + 5)
    assert play.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}') == Send(
        b'{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}\n'
    )
    assert play.send(None) == Done()
    assert play.send(None) == Receive(float("inf"))  # listening until the host hangs up
    assert play.send(EOF) == Hangup(abrupt=False)
    with pytest.raises(StopIteration):
        play.send(None)
    assert (p.connection, p.index) == (1, 3)


def test_a_message_that_came_early_waits_for_its_step() -> None:
    _, play = player(
        Script()
        .handshake()
        .send_request("ping", id=9)
        .expect_answer()
        .expect("tools/call")
        .reply({})
    )
    next(play)
    play.send(True)
    play.send(b'{"jsonrpc":"2.0","id":1,"method":"initialize"}')
    play.send(None)
    assert play.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') == Send(
        b'{"jsonrpc":"2.0","id":9,"method":"ping"}\n'
    )
    play.send(None)
    # the host's next request arrives before its answer to the script's ping
    assert play.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/call"}') == Receive(NOW + 10)
    assert play.send(b'{"jsonrpc":"2.0","id":9,"result":{}}') == Send(
        b'{"jsonrpc":"2.0","id":2,"result":{}}\n'
    )


def test_steps_across_connections() -> None:
    p, play = player(Script().drop().refuse_connections(1).wait(2).crash(), connections=4)
    assert next(play) == Accept(NOW + 10)
    assert play.send(True) == Hangup(abrupt=False)
    assert play.send(None) == Refuse(1)
    assert play.send(None) == Sleep(2)  # no connection open: time just passes
    assert play.send(None) == Accept(NOW + 10)
    assert play.send(True) == Hangup(abrupt=True)
    assert play.send(None) == Done()
    with pytest.raises(StopIteration):
        play.send(None)
    assert p.connection == 6  # counted on from where the previous process left off


def test_timeouts_name_the_step() -> None:
    _, play = player(Script().refuse_connections(1).handshake(timeout=3), start=1)
    assert next(play) == Accept(NOW + 3)
    with pytest.raises(ScriptFailed) as info:
        play.send(TIMEOUT)
    assert info.value.step_number == 2
    assert str(info.value) == (
        "scripted server, step 2 handshake(): the host opened no connection within 3 s"
    )


def test_a_new_connection_needs_a_hangup_first() -> None:
    _, play = player(Script().handshake().wait(5).handshake())
    next(play)
    play.send(True)
    play.send(b'{"jsonrpc":"2.0","id":1,"method":"initialize"}')
    play.send(None)
    assert play.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') == Receive(NOW + 5)
    with pytest.raises(ScriptFailed) as info:
        play.send(EOF)  # the host leaves during the wait, which ends there
    assert str(info.value) == (
        "scripted server, step 3 handshake() on connection 1: the host had closed connection 1 "
        "during step 2; a step on a new connection must come after drop(), crash(), "
        "expect_close() or serve_forever()"
    )


def test_serve_forever_answers_what_was_waiting_first() -> None:
    _, play = player(Script().send_request("ping", id=5).expect_answer().serve_forever())
    assert next(play) == Accept(NOW + 10)
    play.send(True)
    assert play.send(None) == Receive(NOW + 10)
    assert play.send(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}') == Receive(NOW + 10)
    assert play.send(b'{"jsonrpc":"2.0","id":2,"method":"prompts/list"}') == Receive(NOW + 10)
    assert play.send(b'{"jsonrpc":"2.0","id":5,"result":{}}') == Send(
        b'{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}\n'
    )
    assert play.send(None) == Send(
        b'{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found: prompts/list"}}\n'
    )
    assert play.send(None) == Receive(float("inf"))
    assert play.send(EOF) == Hangup(abrupt=False)
    assert play.send(None) == Done()


def _through_handshake(play: Play) -> None:
    next(play)
    play.send(True)
    play.send(b'{"jsonrpc":"2.0","id":1,"method":"initialize"}')
    play.send(None)
    play.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')


def _call(name: str, request_id: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s"}}' % (
        request_id,
        name.encode(),
    )


def test_expect_all_takes_its_messages_in_any_order() -> None:
    _, play = player(
        Script()
        .handshake()
        .expect_all(
            Expected("tools/call", {"name": "a"}, label="a"),
            Expected("tools/call", {"name": "b"}, label="b"),
            "tools/list",
        )
        .reply({"n": "a"}, to="a")
        .reply_error(-1, "b", to="b")
        .reply({"tools": []}, to="tools/list")
    )
    _through_handshake(play)
    # the reverse of the order written, tools/list in between
    assert play.send(_call("b", 7)) == Receive(NOW + 10)
    assert play.send(b'{"jsonrpc":"2.0","id":8,"method":"tools/list"}') == Receive(NOW + 10)
    assert play.send(_call("a", 9)) == Send(b'{"jsonrpc":"2.0","id":9,"result":{"n":"a"}}\n')
    assert play.send(None) == Send(b'{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"b"}}\n')
    assert play.send(None) == Send(b'{"jsonrpc":"2.0","id":8,"result":{"tools":[]}}\n')
    assert play.send(None) == Done()


def test_expect_all_fills_the_member_with_its_params_first() -> None:
    # The call named "a" must not take the member that takes any call: "b" fits only that.
    _, play = player(
        Script()
        .handshake()
        .expect_all(
            Expected("tools/call", label="any"), Expected("tools/call", {"name": "a"}, label="a")
        )
        .reply({"took": "any"}, to="any")
    )
    _through_handshake(play)
    assert play.send(_call("a", 2)) == Receive(NOW + 10)
    assert play.send(_call("b", 3)) == Send(b'{"jsonrpc":"2.0","id":3,"result":{"took":"any"}}\n')


def test_expect_all_failures_say_what_is_missing() -> None:
    script = (
        Script(timeout=2)
        .handshake()
        .expect_all(Expected("tools/call", {"name": "a"}), "tools/list", timeout=4)
    )
    _, play = player(script)
    _through_handshake(play)
    with pytest.raises(ScriptFailed) as info:
        play.send(_call("b", 2))  # a call, but not the one expected
    assert info.value.detail == (
        """the host's 'tools/call' came with params {"name":"b"}, not {"name":"a"}"""
    )
    _, play = player(script)
    _through_handshake(play)
    assert play.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}') == Receive(NOW + 4)
    assert play.send(b'{"jsonrpc":"2.0","method":"notifications/progress"}') == Receive(NOW + 4)
    with pytest.raises(ScriptFailed) as info:
        play.send(TIMEOUT)
    assert str(info.value) == (
        "scripted server, step 2 expect_all('tools/call' params={'name': 'a'}, 'tools/list') "
        "on connection 1: no matching message came within 4 s (still missing 'tools/call' "
        "params={'name': 'a'}); the host sent instead: notification 'notifications/progress'"
    )


def test_a_request_no_step_will_take_is_answered_at_once() -> None:
    _, play = player(
        Script()
        .handshake()
        .expect("tools/list")
        .reply({"tools": []})
        .expect("tools/call")
        .reply({})
        .expect_close()
        .handshake()
        .expect("prompts/list")
    )
    _through_handshake(play)
    # Planned for a later step: it waits, unanswered, for that step.
    assert play.send(_call("x", 2)) == Receive(NOW + 10)
    # Not planned on this connection (a later connection's step does not count): the
    # default answer, naming the line (from 0 on this connection) it answers.
    assert play.send(b'{"jsonrpc":"2.0","id":3,"method":"prompts/list"}') == Send(
        b'{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found: '
        b'prompts/list"}}\n',
        unplanned=3,
    )
    assert play.send(None) == Receive(NOW + 10)
    # One later step takes a tools/call, and one already waits for it: this one is over.
    assert play.send(_call("y", 4)) == Send(
        b'{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found: '
        b'tools/call"}}\n',
        unplanned=4,
    )
    assert play.send(None) == Receive(NOW + 10)
    assert play.send(b'{"jsonrpc":"2.0","id":5,"method":"tools/list"}') == Send(
        b'{"jsonrpc":"2.0","id":5,"result":{"tools":[]}}\n'
    )
    assert play.send(None) == Send(b'{"jsonrpc":"2.0","id":2,"result":{}}\n')  # from the backlog
    assert play.send(None) == Receive(NOW + 10)  # expect_close
    assert play.send(b'{"jsonrpc":"2.0","id":6,"method":"prompts/list"}') == Send(
        b'{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"Method not found: '
        b'prompts/list"}}\n',
        unplanned=6,
    )


def test_unplanned_requests_left_unanswered_are_shown_when_a_step_fails() -> None:
    _, play = player(Script(timeout=1).handshake().expect("tools/call"))
    _through_handshake(play)
    assert play.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}') == Send(
        b'{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found: '
        b'tools/list"}}\n',
        unplanned=2,
    )
    assert play.send(None) == Receive(NOW + 1)
    with pytest.raises(ScriptFailed) as info:
        play.send(TIMEOUT)
    assert info.value.detail == (
        "no matching message came within 1 s; the host sent instead: request 'tools/list' "
        "(id 2), answered as unplanned"
    )


def test_a_reply_needs_a_request_it_can_name() -> None:
    a = b'{"jsonrpc":"2.0","id":1,"method":"a"}'
    b = b'{"jsonrpc":"2.0","id":2,"method":"b"}'
    x = b'{"jsonrpc":"2.0","method":"notifications/x"}'
    failures = []
    # Built as data: a document loaded elsewhere has not been through the builder's checks.
    for steps, lines in (
        ((Expect(method="a"), Reply(result={}, to="slow")), [a]),
        ((ExpectAll(expected=(Expected("a"), Expected("b"))), Reply(result={})), [b, a]),
        (
            (Expect(method="notifications/x", label="n"), ReplyError(code=1, message="m", to="n")),
            [x],
        ),
    ):
        _, play = player_of(ScriptData(steps=steps))
        assert next(play) == Accept(NOW + 10)
        assert play.send(True) == Receive(NOW + 10)
        for line in lines[:-1]:
            assert play.send(line) == Receive(NOW + 10)
        with pytest.raises(ScriptFailed) as info:
            play.send(lines[-1])
        failures.append(info.value.detail)
    assert failures == [
        "no message labelled 'slow' was expected on this connection before it",
        "the last step expected 2 messages: say which to answer with to=",
        "the message labelled 'n', notification 'notifications/x', has no id",
    ]
