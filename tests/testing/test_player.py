"""The player alone, with no I/O: outcomes in, commands out (what every driver runs)."""

from __future__ import annotations

import pytest

from mcpl_host.testing import Script, ScriptFailed
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

NOW = 100.0


def player(script: Script, **kwargs: int) -> tuple[Player, Play]:
    p = Player(script.data(), clock=lambda: NOW, **kwargs)
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
