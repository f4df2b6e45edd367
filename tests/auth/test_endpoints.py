"""The flow's HTTP exchanges and endpoint requests (mcpl_host/auth/fetch.py,
endpoints.py) over httpx's MockTransport: what goes on the wire for each client
authentication, what a refusal's error says (and never says), and the byte bound."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable
from urllib.parse import parse_qs

import httpx
import pytest
import trio

from mcpl_host.auth.endpoints import read_tokens, register, token_request
from mcpl_host.auth.fetch import MAX_DOCUMENT, Exchanges
from mcpl_host.auth.records import ClientInfo
from mcpl_host.protocol.errors import AuthorizationError
from mcpl_host.protocol.redact import Redactor

TOKEN_URL = "https://as.example/token"


def reply(status: int, body: object = None, *, raw: bytes | None = None) -> httpx.Response:
    """An answer streamed as a socket's would be (MockTransport's own JSON answers come
    already read, which a streaming client cannot take)."""
    data = raw if raw is not None else json.dumps(body).encode()

    async def stream() -> AsyncIterator[bytes]:
        yield data

    return httpx.Response(status, content=stream(), headers={"content-type": "application/json"})


def exchanges(
    handler: Callable[[httpx.Request], httpx.Response], redactor: Redactor | None = None
) -> Exchanges:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return Exchanges(client, timeout=5.0, redactor=redactor or Redactor())


def form_of(request: httpx.Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.content.decode()).items()}


async def test_client_secret_basic_form_urlencodes_both_parts_before_base64() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return reply(200, {"access_token": "at-1234", "token_type": "bearer"})

    client = ClientInfo(
        client_id="my client:1",
        client_secret="s3cr+t/=&%",
        token_endpoint_auth_method="client_secret_basic",
    )
    http = exchanges(handler)
    answer = await token_request(http, TOKEN_URL, {"grant_type": "x"}, client, step="token")
    assert answer.status == 200
    (request,) = seen
    scheme, _, encoded = request.headers["authorization"].partition(" ")
    assert scheme == "Basic"
    # RFC 6749 section 2.3.1: each part application/x-www-form-urlencoded, then joined.
    assert base64.b64decode(encoded).decode() == "my%20client%3A1:s3cr%2Bt%2F%3D%26%25"
    form = form_of(request)
    assert "client_secret" not in form
    assert "client_id" not in form
    assert request.headers["accept"] == "application/json"
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"


async def test_client_secret_post_and_none_put_the_client_in_the_form() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return reply(200, {"access_token": "at-1234", "token_type": "Bearer"})

    http = exchanges(handler)
    post = ClientInfo("cid", "csecret-1", "client_secret_post")
    public = ClientInfo("pub", None, "none")
    await token_request(http, TOKEN_URL, {"grant_type": "x"}, post, step="token")
    await token_request(http, TOKEN_URL, {"grant_type": "x"}, public, step="token")
    assert form_of(seen[0]) == {"grant_type": "x", "client_id": "cid", "client_secret": "csecret-1"}
    assert form_of(seen[1]) == {"grant_type": "x", "client_id": "pub"}
    assert all("authorization" not in r.headers for r in seen)


async def test_a_secret_method_without_a_secret_is_refused_before_anything_is_sent() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500)

    client = ClientInfo("cid", None, "client_secret_basic")
    with pytest.raises(AuthorizationError) as caught:
        await token_request(exchanges(handler), TOKEN_URL, {}, client, step="token")
    assert caught.value.step == "token"
    assert seen == []


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (200, {"token_type": "Bearer"}, "no access_token"),
        (200, {"access_token": "", "token_type": "Bearer"}, "no access_token"),
        (200, {"access_token": 12345, "token_type": "Bearer"}, "no access_token"),
        (200, {"access_token": "at-1234"}, "no usable token_type"),
        (200, {"access_token": "at-1234", "token_type": "mac"}, "no usable token_type"),
        (200, [1, 2], "no access_token"),
        # The token goes in a header: what a header cannot carry is refused here, not
        # left to fail every request as a broken transport.
        (200, {"access_token": "at\r\nX-Injected: 1", "token_type": "Bearer"}, "header"),
        (200, {"access_token": "at-with space", "token_type": "Bearer"}, "header"),
        (200, {"access_token": "at-t\u00e9l\u00e9phone", "token_type": "Bearer"}, "header"),
        (200, {"access_token": "at-secret\u0000rest", "token_type": "Bearer"}, "header"),
        (200, "not json", "no access_token"),
        (500, "oops", "HTTP 500"),
    ],
)
async def test_token_answers_the_host_cannot_use_are_typed_errors(
    status: int, body: object, message: str
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if body in ("not json", "oops"):
            return reply(status, raw=b"<html>" + str(body).encode())
        return reply(status, body)

    http = exchanges(handler)
    answer = await token_request(http, TOKEN_URL, {}, None, step="token")
    with pytest.raises(AuthorizationError) as caught:
        read_tokens(answer, "token", redactor=http.redactor)
    assert message in caught.value.message
    assert caught.value.step == "token"


@pytest.mark.parametrize(
    ("status", "body", "permanent"),
    [
        (400, {"error": "invalid_grant"}, True),
        (401, {"error": "invalid_client"}, True),
        (400, {"error": "temporarily_unavailable"}, False),
        (400, {"error": "server_error"}, False),
        (429, {}, False),
        (503, {"error": "busy"}, False),
    ],
)
async def test_a_refusal_is_permanent_and_a_failure_is_not(
    status: int, body: dict[str, str], permanent: bool
) -> None:
    """A reconnect policy retries what a busy or failing server may answer later."""
    http = exchanges(lambda request: reply(status, body))
    answer = await token_request(http, TOKEN_URL, {}, None, step="token")
    with pytest.raises(AuthorizationError) as caught:
        read_tokens(answer, "token", redactor=http.redactor)
    assert caught.value.permanent is permanent


async def test_a_refusal_names_the_servers_error_escaped_and_masks_the_hosts_secrets() -> None:
    code = "code-canary-5a1f"
    secret = "secret-canary-77c2"
    described = f"bad code {code} for secret {secret}\nforged: line\x1b[0m"

    def handler(request: httpx.Request) -> httpx.Response:
        body = {"error": f"invalid_grant\r\n{secret}", "error_description": described}
        return reply(400, body)

    redactor = Redactor([secret])
    redactor.learn(code)
    http = exchanges(handler, redactor)
    answer = await token_request(http, TOKEN_URL, {"code": code}, None, step="token")
    with pytest.raises(AuthorizationError) as caught:
        read_tokens(answer, "token", redactor=redactor)
    error = caught.value
    text = str(error)
    assert code not in text
    assert secret not in text
    assert "\n" not in text
    assert "\x1b" not in text
    assert "bad code *** for secret ***\\u000aforged: line\\u001b[0m" in text
    assert error.error == "invalid_grant\\u000d\\u000a***"
    assert error.step == "token"


async def test_a_registered_client_secret_stays_masked_behind_many_learnt_secrets() -> None:
    # A long-lived host learns a code, a verifier, tokens and DPoP proofs per flow and
    # refresh; the client secret registered once must not age out of the redactor.
    secret = "dcr-secret-canary-3e9d"

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/register":
            return reply(201, {"client_id": "cid", "client_secret": secret})
        return reply(400, {"error": "invalid_client", "error_description": f"who is {secret}?"})

    redactor = Redactor()
    http = exchanges(handler, redactor)
    metadata = {
        "redirect_uris": ["http://127.0.0.1/cb"],
        "token_endpoint_auth_method": "client_secret_post",
    }
    client = await register(http, "https://as.example/register", metadata, learn=redactor.learn)
    assert client.client_secret == secret
    # RFC 7591 section 2: the method left out of the answer is the one asked for.
    assert client.token_endpoint_auth_method == "client_secret_post"
    for i in range(200):
        redactor.learn(f"one-off-secret-{i:04d}")
    answer = await token_request(http, TOKEN_URL, {}, client, step="refresh")
    with pytest.raises(AuthorizationError) as caught:
        read_tokens(answer, "refresh", redactor=redactor)
    assert secret not in str(caught.value)
    assert "who is ***?" in str(caught.value)


async def test_registration_refused_or_without_client_id_is_a_typed_error() -> None:
    answers = iter(
        [
            reply(400, {"error": "invalid_redirect_uri"}),
            reply(201, {"client_secret": "s-1234"}),
            reply(201, {"client_id": "c", "token_endpoint_auth_method": "tls"}),
        ]
    )
    http = exchanges(lambda _request: next(answers))
    metadata = {"redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none"}
    for expected in ("invalid_redirect_uri", "no client_id", "'tls'"):
        with pytest.raises(AuthorizationError) as caught:
            await register(http, "https://as.example/register", metadata, learn=lambda _s: None)
        assert caught.value.step == "registration"
        assert expected in caught.value.message


async def test_a_document_past_the_bound_is_refused_without_being_held() -> None:
    pulled = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal pulled
        chunk = b" " * 65536
        while True:
            await trio.lowlevel.checkpoint()  # as a socket's read would
            pulled += len(chunk)
            yield chunk

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=endless(), headers={"content-type": "application/json"})

    with trio.fail_after(10):
        with pytest.raises(AuthorizationError) as caught:
            await exchanges(handler).send(
                "GET", "https://as.example/.well-known/x", step="authorization-server-metadata"
            )
    assert f"over {MAX_DOCUMENT} bytes" in caught.value.message
    assert caught.value.step == "authorization-server-metadata"
    assert MAX_DOCUMENT < pulled <= MAX_DOCUMENT + 2 * 65536


async def test_an_unreachable_server_is_a_typed_error_with_the_url_without_its_query() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    lines: list[str] = []
    http = exchanges(handler)
    http.on_http = lines.append
    with pytest.raises(AuthorizationError) as caught:
        await http.send("GET", "https://as.example/meta?code=c0de-1234", step="registration")
    assert caught.value.step == "registration"
    assert "ConnectError" in caught.value.message
    assert "c0de-1234" not in caught.value.message
    assert lines == ["HTTP GET https://as.example/meta -> ConnectError"]


async def test_a_server_that_never_answers_fails_within_the_timeout() -> None:
    async def never(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()
        raise AssertionError

    client = httpx.AsyncClient(transport=httpx.MockTransport(never))
    http = Exchanges(client, timeout=0.2, redactor=Redactor())
    started = trio.current_time()
    with trio.fail_after(5), pytest.raises(AuthorizationError) as caught:
        await http.send("POST", TOKEN_URL, step="token", form={"a": "b"})
    assert trio.current_time() - started < 2
    assert "no answer" in caught.value.message
    assert json.dumps(caught.value.step) == '"token"'
