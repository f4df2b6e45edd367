"""Socket transports over real loopback TCP and Unix sockets."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import trio

from mcpl_host.protocol.errors import ConfigurationError, TransportError
from mcpl_host.protocol.redact import Redactor
from mcpl_host.transports import Transport, open_transport
from mcpl_host.transports.sockets import SocketTransport, open_tcp, open_unix
from mcpl_host.transports.targets import TcpTarget, UnixTarget

unix_only = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix sockets")


async def echo(stream: trio.abc.Stream) -> None:
    async with stream:
        async for chunk in stream:
            await stream.send_all(chunk)


async def serve_tcp(nursery: trio.Nursery, host: str = "127.0.0.1") -> int:
    listeners = await trio.open_tcp_listeners(0, host=host)
    nursery.start_soon(trio.serve_listeners, echo, listeners)
    sock = listeners[0].socket
    return int(sock.getsockname()[1])


async def serve_unix(nursery: trio.Nursery, path: Path) -> None:
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    await sock.bind(str(path))
    sock.listen()
    nursery.start_soon(trio.serve_listeners, echo, [trio.SocketListener(sock)])


async def round_trip(transport: Transport) -> None:
    await transport.stream.send_all(b'{"jsonrpc":"2.0","method":"ping"}\n')
    received = b""
    while not received.endswith(b"\n"):
        chunk = await transport.stream.receive_some()
        assert chunk
        received += chunk
    assert received == b'{"jsonrpc":"2.0","method":"ping"}\n'


async def test_tcp_round_trip_and_idempotent_close() -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await serve_tcp(nursery)
            transport = await open_tcp(TcpTarget("127.0.0.1", port))
            assert transport.description == f"tcp://127.0.0.1:{port}"
            await round_trip(transport)
            await transport.aclose()
            await transport.aclose()
            with pytest.raises(trio.ClosedResourceError):
                await transport.stream.send_all(b"x")
            nursery.cancel_scope.cancel()


async def test_tcp_over_ipv6_loopback() -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            try:
                port = await serve_tcp(nursery, host="::1")
            except OSError:
                pytest.skip("no IPv6 loopback here")
            transport = await open_tcp(TcpTarget("::1", port))
            assert transport.description == f"tcp://[::1]:{port}"
            await round_trip(transport)
            await transport.aclose()
            nursery.cancel_scope.cancel()


@unix_only
async def test_unix_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "server.sock"
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await serve_unix(nursery, path)
            transport = await open_unix(UnixTarget(str(path)))
            assert transport.description == f"unix:{path}"
            await round_trip(transport)
            await transport.aclose()
            await transport.aclose()
            nursery.cancel_scope.cancel()


async def test_tcp_connection_refused_is_a_transport_error() -> None:
    # A port that was just bound and released has nobody listening on it.
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with trio.fail_after(10), pytest.raises(TransportError) as info:
        await open_tcp(TcpTarget("127.0.0.1", port))
    assert info.value.reason == "connect-failed"
    assert f"tcp://127.0.0.1:{port}" in str(info.value)
    assert not info.value.permanent


async def test_an_unresolvable_host_is_a_transport_error() -> None:
    with trio.fail_after(10), pytest.raises(TransportError) as info:
        await open_tcp(TcpTarget("no-such-host.invalid", 80))
    assert info.value.reason == "connect-failed"
    assert "no-such-host.invalid" in str(info.value)


@unix_only
async def test_unix_missing_socket_is_a_transport_error(tmp_path: Path) -> None:
    path = tmp_path / "missing.sock"
    with trio.fail_after(10), pytest.raises(TransportError) as info:
        await open_unix(UnixTarget(str(path)))
    assert info.value.reason == "connect-failed"
    assert str(path) in str(info.value)


@unix_only
async def test_unix_path_that_is_not_a_socket_is_a_transport_error(tmp_path: Path) -> None:
    path = tmp_path / "plain-file"
    path.write_text("")
    with trio.fail_after(10), pytest.raises(TransportError, match=r"cannot connect to unix:"):
        await open_unix(UnixTarget(str(path)))


async def test_close_after_the_peer_broke_the_socket_raises_nothing() -> None:
    async def hang_up(stream: trio.abc.Stream) -> None:
        await stream.aclose()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
            nursery.start_soon(trio.serve_listeners, hang_up, listeners)
            port = listeners[0].socket.getsockname()[1]
            transport = await open_tcp(TcpTarget("127.0.0.1", port))
            assert await transport.stream.receive_some() == b""

            async def write_until_broken() -> None:
                for _ in range(100):
                    await transport.stream.send_all(b"x" * 65536)

            with pytest.raises(trio.BrokenResourceError):
                await write_until_broken()
            await transport.aclose()
            nursery.cancel_scope.cancel()


async def test_open_transport_dispatches_by_target(tmp_path: Path) -> None:
    lines: list[str] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await serve_tcp(nursery)
            tcp = await open_transport(
                TcpTarget("127.0.0.1", port),
                nursery=nursery,
                on_stderr=lines.append,
                redactor=Redactor(),
            )
            assert isinstance(tcp, SocketTransport)
            await round_trip(tcp)
            await tcp.aclose()
            if hasattr(socket, "AF_UNIX"):
                path = tmp_path / "s.sock"
                await serve_unix(nursery, path)
                unix = await open_transport(
                    UnixTarget(str(path)),
                    nursery=nursery,
                    on_stderr=lines.append,
                    redactor=Redactor(),
                )
                await round_trip(unix)
                await unix.aclose()
            with pytest.raises(ConfigurationError, match="unsupported transport target"):
                await open_transport(
                    "tcp://127.0.0.1:1",  # type: ignore[arg-type]
                    nursery=nursery,
                    on_stderr=lines.append,
                    redactor=Redactor(),
                )
            nursery.cancel_scope.cancel()
    assert lines == []
