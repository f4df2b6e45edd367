"""The OAuth flow from a Connection against a scripted authorization server and MCP
server (tests/auth/scripted_as.py): what goes on the wire, in which order, and what the
host does with each hostile or edge answer: a protected-resource document for another
server, a wrong issuer, refusals, a token answer without a token, a document of 5 MB, a
server that never answers, a token refused the moment it was issued, a scope never
enough, a refresh token refused, and no person to authorize."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest
import trio
from structlog.testing import capture_logs

from mcpl_host import Connection
from mcpl_host.auth import OAuth
from mcpl_host.protocol.errors import AuthorizationError, AuthorizationRequired

from .scripted_as import PROTOCOL_VERSION, Reply, ScriptedAuth, Seen

VERSIONS = [PROTOCOL_VERSION]
REDIRECT = "http://127.0.0.1:1/callback"  # never contacted: the hook reads the redirect

PRM_PATH = "/.well-known/oauth-protected-resource/mcp"
ASM_PATH = "/.well-known/oauth-authorization-server"


def connection(server: ScriptedAuth, oauth: OAuth, timeout: float = 5.0) -> Connection:
    return Connection(server.target(oauth, timeout), versions=VERSIONS)


def oauth_for(server: ScriptedAuth, **options: Any) -> OAuth:
    return OAuth(authorize=server.browser, redirect_uri=REDIRECT, **options)


def flow_requests(server: ScriptedAuth) -> list[str]:
    """The requests of the authorization side (no /mcp)."""
    return [line for line in server.lines() if not line.endswith(" /mcp")]


async def test_the_whole_flow_on_the_wire() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        # Only secret methods: registration asks for client_secret_basic and gets a secret.
        metadata = server.metadata()
        metadata["token_endpoint_auth_methods_supported"] = ["client_secret_basic"]
        server.routes[f"GET {ASM_PATH}"] = lambda _seen: Reply(body=metadata)
        async with connection(server, oauth_for(server)) as conn:
            assert await conn.request("tools/list", {}) == {"tools": []}
        lines = server.lines()
        (registration,) = server.requests("POST /register")
        (authorization,) = server.requests("GET /authorize")
        (token,) = server.requests("POST /token")
        mcp = server.requests("POST /mcp")

    # Discovery in the spec's order: the 401, the resource's metadata, the authorization
    # server's, registration, the person's authorization, the code exchange, the retry.
    assert lines[:7] == [
        "POST /mcp",
        f"GET {PRM_PATH}",
        f"GET {ASM_PATH}",
        "POST /register",
        "GET /authorize",
        "POST /token",
        "POST /mcp",
    ]
    assert "authorization" not in mcp[0].headers

    asked = registration.json
    assert asked["redirect_uris"] == [REDIRECT]
    assert asked["token_endpoint_auth_method"] == "client_secret_basic"
    assert asked["grant_types"] == ["authorization_code", "refresh_token"]
    client_id = server.clients[next(iter(server.clients))]["client_id"]
    secret = server.clients[client_id]["client_secret"]

    query = authorization.query
    assert query["response_type"] == "code"
    assert query["client_id"] == client_id
    assert query["redirect_uri"] == REDIRECT
    assert query["resource"] == server.mcp_url  # RFC 8707 on the authorization request
    assert query["code_challenge_method"] == "S256"
    assert query["state"]

    form = token.form
    assert form["grant_type"] == "authorization_code"
    assert form["redirect_uri"] == REDIRECT
    assert form["resource"] == server.mcp_url  # and on the token request
    # PKCE: the challenge sent first is BASE64URL(SHA256(the verifier sent now)).
    digest = hashlib.sha256(form["code_verifier"].encode()).digest()
    assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == query["code_challenge"]
    assert 43 <= len(form["code_verifier"]) <= 128
    # client_secret_basic: the credentials in the header, never in the form.
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    assert token.headers["authorization"] == f"Basic {basic}"
    assert "client_secret" not in form
    assert "client_id" not in form

    access = server.token_answers[0]["access_token"]
    assert all(m.headers["authorization"] == f"Bearer {access}" for m in mcp[1:])
    assert len(mcp) >= 3  # initialize, initialized, tools/list


async def test_a_resource_document_for_another_server_is_refused_before_any_grant() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        server.routes[f"GET {PRM_PATH}"] = lambda _seen: Reply(
            body={
                "resource": "http://127.0.0.1:1/mcp",
                "authorization_servers": [server.issuer],
            }
        )
        with pytest.raises(AuthorizationError) as caught:
            async with connection(server, oauth_for(server)):
                pass
        lines = flow_requests(server)
    assert caught.value.step == "protected-resource-metadata"
    assert caught.value.rule == "RFC 9728 section 3.3"
    assert lines == [f"GET {PRM_PATH}"]  # no metadata, registration, authorization, token


async def test_a_resource_document_without_its_resource_is_refused() -> None:
    # RFC 9728 section 2: "resource" is REQUIRED; without it nothing says whose it is.
    with ScriptedAuth() as server, trio.fail_after(10):
        server.routes[f"GET {PRM_PATH}"] = lambda _seen: Reply(
            body={"authorization_servers": [server.issuer]}
        )
        with pytest.raises(AuthorizationError) as caught:
            async with connection(server, oauth_for(server)):
                pass
        lines = flow_requests(server)
    assert caught.value.step == "protected-resource-metadata"
    assert caught.value.rule == "RFC 9728 section 2"
    assert lines == [f"GET {PRM_PATH}"]


@pytest.mark.parametrize("methods", [None, ["plain"]])
async def test_metadata_without_pkce_s256_is_refused_before_the_person_is_asked(
    methods: list[str] | None,
) -> None:
    # MCP 2025-06-18 on: no code_challenge_methods_supported means no PKCE: refuse.
    with ScriptedAuth() as server, trio.fail_after(10):
        metadata = server.metadata()
        if methods is None:
            del metadata["code_challenge_methods_supported"]
        else:
            metadata["code_challenge_methods_supported"] = methods
        server.routes[f"GET {ASM_PATH}"] = lambda _seen: Reply(body=metadata)
        with pytest.raises(AuthorizationError) as caught:
            async with connection(server, oauth_for(server)):
                pass
        lines = server.lines()
    assert caught.value.step == "authorization"
    assert "PKCE" in caught.value.message
    assert "GET /authorize" not in lines


async def test_a_resource_document_naming_a_parent_path_is_accepted_and_sent() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        server.routes[f"GET {PRM_PATH}"] = lambda _seen: Reply(
            body={"resource": server.base + "/", "authorization_servers": [server.issuer]}
        )
        async with connection(server, oauth_for(server)):
            pass
        (authorization,) = server.requests("GET /authorize")
        (token,) = server.requests("POST /token")
    assert authorization.query["resource"] == server.base + "/"
    assert token.form["resource"] == server.base + "/"


async def test_authorization_server_metadata_for_another_issuer_is_refused() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        metadata = {**server.metadata(), "issuer": "http://127.0.0.1:1"}
        server.routes[f"GET {ASM_PATH}"] = lambda _seen: Reply(body=metadata)
        with pytest.raises(AuthorizationError) as caught:
            async with connection(server, oauth_for(server)):
                pass
        lines = flow_requests(server)
    assert caught.value.step == "authorization-server-metadata"
    assert caught.value.rule == "RFC 8414 section 3.3"
    assert lines == [f"GET {PRM_PATH}", f"GET {ASM_PATH}"]


async def test_a_wrong_iss_on_the_authorization_response_is_refused_before_the_token() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        default = server.authorize

        def wrong_iss(seen: Seen) -> Reply:
            reply = default(seen)
            reply.headers["Location"] = reply.headers["Location"].replace("iss=http", "iss=https")
            return reply

        server.routes["GET /authorize"] = wrong_iss
        with pytest.raises(AuthorizationError) as caught:
            async with connection(server, oauth_for(server)):
                pass
        assert server.requests("POST /token") == []
    assert caught.value.step == "authorization"
    assert caught.value.rule == "RFC 9207 section 2.4"


async def test_a_token_refusal_names_the_servers_error_escaped() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        server.routes["POST /token"] = lambda _seen: Reply(
            400,
            {
                "error": "invalid_grant",
                "error_description": "code expired\r\nlevel=error forged=1\x07",
            },
        )
        with pytest.raises(AuthorizationError) as caught:
            async with connection(server, oauth_for(server)):
                pass
        tokens = server.requests("POST /token")
    error = caught.value
    assert error.error == "invalid_grant"
    assert error.step == "token"
    assert "code expired\\u000d\\u000alevel=error forged=1\\u0007" in error.message
    assert "\n" not in str(error)
    assert len(tokens) == 1  # a refused code is not tried again


@pytest.mark.parametrize(
    "body",
    [
        {"token_type": "Bearer", "expires_in": 60},
        {"access_token": "", "token_type": "Bearer"},
        {"access_token": ["x"], "token_type": "Bearer"},
        b"<html>not json</html>",
    ],
)
async def test_a_token_answer_without_an_access_token_is_an_error(body: Any) -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        server.routes["POST /token"] = lambda _seen: Reply(body=body)
        with pytest.raises(AuthorizationError) as caught:
            async with connection(server, oauth_for(server)):
                pass
        tokens = server.requests("POST /token")
        initializes = server.requests("POST /mcp")
    assert caught.value.step == "token"
    assert "no access_token" in caught.value.message
    assert len(tokens) == 1
    assert len(initializes) == 1  # never sent again without a token


async def test_a_metadata_document_of_5_mb_is_refused() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        server.routes[f"GET {ASM_PATH}"] = lambda _seen: Reply(size=5 * 1024 * 1024)
        with pytest.raises(AuthorizationError) as caught:
            async with connection(server, oauth_for(server)):
                pass
        lines = flow_requests(server)
    assert caught.value.step == "authorization-server-metadata"
    assert "is over 1048576 bytes" in caught.value.message
    # Refused, not tried elsewhere (the OpenID Connect URL) nor carried on with.
    assert lines == [f"GET {PRM_PATH}", f"GET {ASM_PATH}"]


async def test_an_authorization_server_that_never_answers_fails_within_the_timeout() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        server.routes[f"GET {ASM_PATH}"] = lambda _seen: Reply(hang=True)
        started = trio.current_time()
        with pytest.raises(AuthorizationError) as caught:
            async with connection(server, oauth_for(server), timeout=0.5):
                pass
        elapsed = trio.current_time() - started
    assert caught.value.step == "authorization-server-metadata"
    assert "no answer" in caught.value.message
    assert 0.5 <= elapsed < 3


async def test_a_token_refused_as_soon_as_it_is_issued_ends_in_authorization_required() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        challenge = f'Bearer error="invalid_token", resource_metadata="{server.prm_url}"'
        refusal = Reply(401, {}, {"WWW-Authenticate": challenge})
        server.guard = lambda _seen: refusal
        with pytest.raises(AuthorizationRequired) as caught:
            async with connection(server, oauth_for(server)):
                pass
        tokens = server.requests("POST /token")
        authorizations = server.requests("GET /authorize")
        posts = server.requests("POST /mcp")
    assert caught.value.status == 401
    assert caught.value.challenge["error"] == "invalid_token"
    # One flow, one refresh of its token, then the host gives up: no loop.
    assert len(authorizations) == 1
    assert [t.form["grant_type"] for t in tokens] == ["authorization_code", "refresh_token"]
    assert len(posts) == 3


@pytest.mark.parametrize("max_step_ups", [0, 2])
async def test_insufficient_scope_forever_steps_up_a_bounded_number_of_times(
    max_step_ups: int,
) -> None:
    with ScriptedAuth() as server, trio.fail_after(10):

        def guard(seen: Seen) -> Reply | None:
            if "authorization" not in seen.headers:
                return server.token_check(seen)
            challenge = 'Bearer error="insufficient_scope", scope="admin:all"'
            return Reply(403, {}, {"WWW-Authenticate": challenge})

        server.guard = guard
        oauth = oauth_for(server, max_step_ups=max_step_ups)
        with pytest.raises(AuthorizationRequired) as caught:
            async with connection(server, oauth):
                pass
        authorizations = server.requests("GET /authorize")
    assert caught.value.status == 403
    assert caught.value.challenge == {"error": "insufficient_scope", "scope": "admin:all"}
    assert len(authorizations) == max_step_ups + 1
    # Each step-up asks for the scope the server named.
    for step_up in authorizations[1:]:
        assert "admin:all" in step_up.query["scope"].split()


async def test_a_refused_refresh_token_falls_back_to_a_full_authorization() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        async with connection(server, oauth_for(server)) as conn:
            server.revoke_all()  # the access token and the refresh token both
            before = len(server.seen)
            assert await conn.request("tools/list", {}) == {"tools": []}
            after = [(s.line, s.form.get("grant_type")) for s in server.seen[before:]]
            tokens = server.requests("POST /token")
    assert after[0] == ("POST /mcp", None)  # refused: 401
    assert after[1] == ("POST /token", "refresh_token")  # refused: invalid_grant
    assert ("GET /authorize", None) in after
    assert after[-2:] == [("POST /token", "authorization_code"), ("POST /mcp", None)]
    assert [t.form["grant_type"] for t in tokens] == [
        "authorization_code",
        "refresh_token",
        "authorization_code",
    ]


async def test_a_token_about_to_expire_is_refreshed_before_the_request() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        # Refreshed a tenth of its life before its end: at 0.9 s of a 1 s token.
        server.token_lifetime = 1
        async with connection(server, oauth_for(server)) as conn:
            await trio.sleep(0.95)
            before = len(server.seen)
            assert await conn.request("tools/list", {}) == {"tools": []}
            after = [(s.line, s.form.get("grant_type")) for s in server.seen[before:]]
            used = server.requests("POST /mcp")[-1].headers["authorization"]
            fresh = server.token_answers[-1]["access_token"]
    # Refreshed first, then sent once with the new token: no 401 on the way.
    assert after == [("POST /token", "refresh_token"), ("POST /mcp", None)]
    assert used == f"Bearer {fresh}"


async def test_without_a_person_the_flow_stops_before_the_authorization_endpoint() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        oauth = OAuth(authorize=None, redirect_uri=REDIRECT)
        with pytest.raises(AuthorizationRequired) as caught:
            async with connection(server, oauth):
                pass
        lines = server.lines()
    assert caught.value.status == 401
    assert caught.value.challenge == {"resource_metadata": server.prm_url}
    assert "POST /register" not in lines  # nothing registered that nobody would use
    assert "GET /authorize" not in lines
    assert "POST /token" not in lines
    assert lines.count("POST /mcp") == 1


async def test_a_stored_token_is_used_again_by_a_new_connection_without_a_flow() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        oauth = oauth_for(server)
        async with connection(server, oauth):
            pass
        first = len(server.requests("GET /authorize"))
        async with connection(server, oauth) as conn:
            assert await conn.request("tools/list", {}) == {"tools": []}
        assert len(server.requests("GET /authorize")) == first == 1
        assert len(server.requests("POST /register")) == 1


HOSTILE_URLS = [
    "javascript:alert(1)",
    "file:///etc/passwd",
    "http://[::1",
    "http://127.0.0.1:99999/x",
    "http:///no-host",
    "http://127.0.0.1/a b",
    "http://\x00/",
]


@pytest.mark.parametrize("url", HOSTILE_URLS)
@pytest.mark.parametrize(
    "member", ["authorization_endpoint", "token_endpoint", "registration_endpoint"]
)
async def test_an_endpoint_that_is_not_a_web_url_is_refused_before_any_use(
    member: str, url: str
) -> None:
    # A hostile authorization server must never get a javascript: or file: URL to the
    # person's browser (the authorize hook), nor a URL that breaks the flow's own parsing.
    opened: list[str] = []
    with ScriptedAuth() as server, trio.fail_after(10):
        metadata = {**server.metadata(), member: url}
        server.routes[f"GET {ASM_PATH}"] = lambda _seen: Reply(body=metadata)

        async def browser(link: str) -> str:
            opened.append(link)
            return await server.browser(link)

        oauth = OAuth(authorize=browser, redirect_uri=REDIRECT)
        with pytest.raises(AuthorizationError) as caught:
            async with connection(server, oauth):
                pass
        lines = flow_requests(server)
    assert caught.value.step == "authorization-server-metadata"
    assert caught.value.rule == "RFC 8414 section 2"
    assert opened == []
    assert lines == [f"GET {PRM_PATH}", f"GET {ASM_PATH}"]


@pytest.mark.parametrize("url", [*HOSTILE_URLS, ""])
async def test_an_authorization_server_that_is_not_a_web_url_is_refused(url: str) -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        body = {"resource": server.mcp_url, "authorization_servers": [url]}
        server.routes[f"GET {PRM_PATH}"] = lambda _seen: Reply(body=body)
        with pytest.raises(AuthorizationError) as caught:
            async with connection(server, oauth_for(server)):
                pass
        lines = flow_requests(server)
    assert caught.value.step == "protected-resource-metadata"
    assert lines == [f"GET {PRM_PATH}"]


@pytest.mark.parametrize("url", HOSTILE_URLS)
async def test_a_resource_that_is_not_a_web_url_is_refused(url: str) -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        body = {"resource": url, "authorization_servers": [server.issuer]}
        server.routes[f"GET {PRM_PATH}"] = lambda _seen: Reply(body=body)
        with pytest.raises(AuthorizationError) as caught:
            async with connection(server, oauth_for(server)):
                pass
    assert caught.value.step == "protected-resource-metadata"
    assert caught.value.rule == "RFC 9728 section 3.3"


@pytest.mark.parametrize("url", HOSTILE_URLS[:-1])  # a NUL cannot go in a header
async def test_a_challenges_resource_metadata_that_is_not_a_web_url_is_ignored(url: str) -> None:
    # Treated as absent: discovery goes on at the well-known URLs and succeeds.
    with ScriptedAuth() as server, trio.fail_after(10):
        escaped = url.replace("\\", "\\\\").replace('"', '\\"')
        challenge = f'Bearer resource_metadata="{escaped}"'

        def guard(seen: Seen) -> Reply | None:
            refused = server.token_check(seen)
            return None if refused is None else Reply(401, {}, {"WWW-Authenticate": challenge})

        server.guard = guard
        async with connection(server, oauth_for(server)) as conn:
            assert await conn.request("tools/list", {}) == {"tools": []}
        lines = flow_requests(server)
    assert lines[0] == f"GET {PRM_PATH}"


class BrowserClosed(Exception):
    pass


@pytest.mark.parametrize("outcome", ["raises", "returns None", "returns no code"])
async def test_an_authorize_hook_that_fails_ends_the_flow_with_an_authorization_error(
    outcome: str,
) -> None:
    with ScriptedAuth() as server, trio.fail_after(10):

        async def hook(url: str) -> Any:
            if outcome == "raises":
                raise BrowserClosed("the person closed the window")
            if outcome == "returns None":
                return None
            return REDIRECT + "?state=wrong"

        with capture_logs() as logs, pytest.raises(AuthorizationError) as caught:
            async with connection(server, OAuth(authorize=hook, redirect_uri=REDIRECT)):
                pass
        assert server.requests("POST /token") == []
    assert caught.value.step == "authorization"
    if outcome == "raises":
        assert "BrowserClosed" in caught.value.message
        assert isinstance(caught.value.__cause__, BrowserClosed)
    # A refusal of the flow, not a broken transport.
    assert not [e for e in logs if e["event"] == "HTTP request failed"]


async def test_an_authorize_hooks_own_authorization_required_is_raised_as_it_is() -> None:
    # LoopbackRedirect says "no redirect in time" so: the person is still needed, which
    # is not a failure of the authorization server.
    with ScriptedAuth() as server, trio.fail_after(10):

        async def hook(url: str) -> str:
            raise AuthorizationRequired("no authorization redirect arrived within 1 s")

        with pytest.raises(AuthorizationRequired) as caught:
            async with connection(server, OAuth(authorize=hook, redirect_uri=REDIRECT)):
                pass
    assert "no authorization redirect" in caught.value.message


@pytest.mark.parametrize("configured", [None, "files:read"])
async def test_a_step_up_asks_for_the_scope_the_server_named(configured: str | None) -> None:
    # SEP-835: the union of what was asked before and what the 403 names, whether or
    # not the host was configured with a scope of its own.
    with ScriptedAuth() as server, trio.fail_after(10):

        def guard(seen: Seen) -> Reply | None:
            refused = server.token_check(seen)
            if refused is not None:
                return refused
            token = seen.headers["authorization"].partition(" ")[2]
            if "files:write" not in server.token_scopes[token].split():
                challenge = 'Bearer error="insufficient_scope", scope="files:write"'
                return Reply(403, {}, {"WWW-Authenticate": challenge})
            return None

        server.guard = guard
        async with connection(server, oauth_for(server, scopes=configured)) as conn:
            assert await conn.request("tools/list", {}) == {"tools": []}
        authorizations = server.requests("GET /authorize")
    assert len(authorizations) == 2
    asked = authorizations[1].query["scope"].split()
    assert "files:write" in asked
    if configured is not None:
        assert configured in asked
        assert authorizations[0].query["scope"] == configured


async def test_a_token_a_header_cannot_carry_is_refused_not_a_broken_transport() -> None:
    with ScriptedAuth() as server, trio.fail_after(10):
        token = "at-secret-part\r\nX-Injected: 1"
        answer = {"access_token": token, "token_type": "Bearer"}
        server.routes["POST /token"] = lambda _seen: Reply(body=answer)
        with capture_logs() as logs, pytest.raises(AuthorizationError) as caught:
            async with connection(server, oauth_for(server)):
                pass
        posts = server.requests("POST /mcp")
    assert caught.value.step == "token"
    assert caught.value.rule == "RFC 6750 section 2.1"
    assert len(posts) == 1
    assert not [e for e in logs if e["event"] == "HTTP request failed"]
    assert "at-secret-part" not in repr(logs)
