"""A scripted authorization server and the MCP server it protects, in one stdlib HTTP
server on 127.0.0.1 (threads), for the tests that need a server to answer what no real
one would: every route is a function of the request the test may replace.

    with ScriptedAuth() as server, trio.fail_after(10):
        server.routes["POST /token"] = lambda seen: Reply(400, {"error": "invalid_grant"})
        async with Connection(server.target(OAuth(authorize=server.browser))) as conn: ...
    assert server.lines() == ["POST /mcp", "GET /.well-known/...", ...]

By default it behaves: protected-resource metadata for ``/mcp`` naming itself as the
authorization server, RFC 8414 metadata, dynamic registration (a public client, or a
secret one when its metadata offers only secret methods), an authorization endpoint that
approves at once (302 to the redirect URI with code, state and iss), a token endpoint
that checks the code, the PKCE verifier and the refresh token, and ``/mcp``, which
answers 401 with a ``resource_metadata`` challenge unless the request's bearer token is
one it issued and has not revoked. Every request is recorded (:attr:`ScriptedAuth.seen`).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from mcpl_host import HttpTarget
from mcpl_host.auth import OAuth

PROTOCOL_VERSION = "2025-11-25"


@dataclass
class Seen:
    """One request as it arrived."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names lower case
    body: bytes

    @property
    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(self.body.decode()).items()}

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def line(self) -> str:
        return f"{self.method} {self.path}"


@dataclass
class Reply:
    """An answer: ``body`` a JSON value (bytes are sent as they are), ``hang`` never
    answers (until the server stops), ``size`` streams a JSON document of that many
    bytes (for documents past the host's bound)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    size: int | None = None


Route = Callable[[Seen], Reply]


class ScriptedAuth:
    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.valid_tokens: set[str] = set()
        self.token_scopes: dict[str, str] = {}  # access token -> the scope it was granted
        self.refresh_tokens: set[str] = set()
        self.codes: dict[str, dict[str, str]] = {}  # code -> the authorization request
        self.clients: dict[str, dict[str, Any]] = {}
        self.token_answers: list[dict[str, Any]] = []  # every successful token answer
        self.token_type = "Bearer"
        self.token_lifetime = 3600
        # What the issued values are made of (a test may put canaries in them).
        self.code_prefix = "code"
        self.access_prefix = "access"
        self.refresh_prefix = "refresh"
        self.big_bytes_sent = 0
        self._count = itertools.count(1)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self.base = f"http://127.0.0.1:{self._http.server_address[1]}"
        self.issuer = self.base
        self.mcp_url = f"{self.base}/mcp"
        self.prm_url = f"{self.base}/.well-known/oauth-protected-resource/mcp"
        self.asm_url = f"{self.base}/.well-known/oauth-authorization-server"
        self.routes: dict[str, Route] = {
            f"GET {urlsplit(self.prm_url).path}": self.prm,
            f"GET {urlsplit(self.asm_url).path}": self.asm,
            "POST /register": self.register,
            "GET /authorize": self.authorize,
            "POST /token": self.token,
            "POST /mcp": self.mcp,
            "GET /mcp": self.mcp_get,
            "DELETE /mcp": lambda _seen: Reply(200),
        }
        # Decides whether an /mcp request is let through: None lets it, a Reply refuses.
        self.guard: Route | None = None
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> ScriptedAuth:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._http.shutdown()
        self._http.server_close()

    # -- what the tests read ----------------------------------------------------------

    def lines(self) -> list[str]:
        """``METHOD /path`` of every request so far, in order."""
        with self._lock:
            return [s.line for s in self.seen]

    def requests(self, line: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.line == line]

    def target(self, auth: OAuth | None, timeout: float = 5.0) -> HttpTarget:
        return HttpTarget(self.mcp_url, auth=auth, timeout=timeout)

    async def browser(self, url: str) -> str:
        """An ``authorize`` hook: what a browser and a consenting person do."""
        async with httpx.AsyncClient() as client:
            response = await client.get(url, follow_redirects=False)
        location = response.headers.get("location")
        if location is None:
            raise AssertionError(f"/authorize answered {response.status_code}")
        return str(location)

    # -- the default routes -----------------------------------------------------------

    def prm(self, _seen: Seen) -> Reply:
        return Reply(body={"resource": self.mcp_url, "authorization_servers": [self.issuer]})

    def asm(self, _seen: Seen) -> Reply:
        return Reply(body=self.metadata())

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.base}/authorize",
            "token_endpoint": f"{self.base}/token",
            "registration_endpoint": f"{self.base}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
            "authorization_response_iss_parameter_supported": True,
        }

    def register(self, seen: Seen) -> Reply:
        asked = seen.json
        client_id = f"client-{next(self._count)}"
        answer = {**asked, "client_id": client_id}
        if asked.get("token_endpoint_auth_method", "client_secret_basic") != "none":
            answer["client_secret"] = f"secret-{uuid.uuid4().hex}"
        self.clients[client_id] = answer
        return Reply(201, answer)

    def authorize(self, seen: Seen) -> Reply:
        code = f"{self.code_prefix}-{next(self._count)}-{uuid.uuid4().hex[:8]}"
        self.codes[code] = seen.query
        answer = {"code": code, "state": seen.query.get("state", ""), "iss": self.issuer}
        location = f"{seen.query['redirect_uri']}?{urlencode(answer)}"
        return Reply(302, headers={"Location": location})

    def token(self, seen: Seen) -> Reply:
        form = seen.form
        if self.token_type == "DPoP" and "dpop" not in seen.headers:
            # RFC 9449 section 5: every token request of a DPoP client carries a proof
            # (a public client's refresh token is bound to its key).
            return Reply(400, {"error": "invalid_dpop_proof"})
        if form.get("grant_type") == "authorization_code":
            asked = self.codes.pop(form.get("code", ""), None)
            if asked is None:
                return Reply(400, {"error": "invalid_grant", "error_description": "bad code"})
            digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if challenge != asked.get("code_challenge"):
                return Reply(400, {"error": "invalid_grant", "error_description": "PKCE"})
            return Reply(body=self.issue(asked.get("scope")))
        if form.get("grant_type") == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return Reply(400, {"error": "invalid_grant"})
            return Reply(body=self.issue(None))
        return Reply(400, {"error": "unsupported_grant_type"})

    def issue(self, scope: str | None) -> dict[str, Any]:
        n = next(self._count)
        access = f"{self.access_prefix}-{n}-{uuid.uuid4().hex[:8]}"
        refresh = f"{self.refresh_prefix}-{n}-{uuid.uuid4().hex[:8]}"
        self.valid_tokens.add(access)
        self.token_scopes[access] = scope or ""
        self.refresh_tokens.add(refresh)
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": self.token_type,
            "expires_in": self.token_lifetime,
            "refresh_token": refresh,
        }
        if scope:
            answer["scope"] = scope
        self.token_answers.append(answer)
        return answer

    def revoke_all(self) -> None:
        self.valid_tokens.clear()
        self.refresh_tokens.clear()

    def unauthorized(self, seen: Seen) -> Reply | None:
        if self.guard is not None:
            return self.guard(seen)
        return self.token_check(seen)

    def token_check(self, seen: Seen) -> Reply | None:
        """The default guard: a token this server issued and has not revoked."""
        scheme, _, token = seen.headers.get("authorization", "").partition(" ")
        if scheme.lower() in ("bearer", "dpop") and token in self.valid_tokens:
            return None
        challenge = f'Bearer resource_metadata="{self.prm_url}"'
        return Reply(401, {"error": "unauthorized"}, {"WWW-Authenticate": challenge})

    def mcp(self, seen: Seen) -> Reply:
        refused = self.unauthorized(seen)
        if refused is not None:
            return refused
        message = seen.json
        if "id" not in message:
            return Reply(202)
        if message.get("method") == "initialize":
            result: Any = {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted-auth", "version": "1"},
            }
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            return Reply(body=reply, headers={"Mcp-Session-Id": "session-1"})
        result = {"tools": []} if message.get("method") == "tools/list" else {}
        return Reply(body={"jsonrpc": "2.0", "id": message["id"], "result": result})

    def mcp_get(self, seen: Seen) -> Reply:
        return self.unauthorized(seen) or Reply(405)

    # -- the HTTP side ----------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                seen = Seen(
                    method=self.command,
                    path=parts.path,
                    query={k: v[0] for k, v in parse_qs(parts.query).items()},
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                with server._lock:
                    server.seen.append(seen)
                route = server.routes.get(seen.line)
                reply = route(seen) if route is not None else Reply(404, {"error": "nope"})
                if reply.hang:
                    server._stopping.wait(30)
                    self.close_connection = True
                    return
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                data = (
                    reply.body
                    if isinstance(reply.body, bytes)
                    else b""
                    if reply.body is None
                    else json.dumps(reply.body).encode()
                )
                self.send_response(reply.status)
                if reply.body is not None or reply.size is not None:
                    self.send_header("Content-Type", "application/json")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.size is not None:
                    self.send_header("Content-Length", str(reply.size))
                    self.end_headers()
                    self._stream(reply.size)
                    return
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, size: int) -> None:
                # {"issuer": "aaaa...."}: a valid document, if it were read to its end.
                head, tail = b'{"issuer": "', b'"}'
                chunk = b"a" * 65536
                self.close_connection = True
                try:
                    self.wfile.write(head)
                    left = size - len(head) - len(tail)
                    while left > 0:
                        piece = chunk[: min(left, len(chunk))]
                        self.wfile.write(piece)
                        left -= len(piece)
                        server.big_bytes_sent += len(piece)
                    self.wfile.write(tail)
                except OSError:
                    return

            do_GET = do_POST = do_DELETE = _serve

        return Handler
