"""Discovery's URL rules (mcpl_host/auth/metadata.py), the issuer comparison of RFC 8414
section 3.3 (discovery.same_issuer) and PKCE S256 (pkce.py): URLs and strings in, decisions
out."""

from __future__ import annotations

import re

import pytest

from mcpl_host.auth.clients import serves_redirect
from mcpl_host.auth.discovery import same_issuer as _same_issuer
from mcpl_host.auth.metadata import (
    auth_server_urls,
    canonical_resource,
    legacy_endpoints,
    origin,
    protected_resource_urls,
    resource_matches,
    web_url,
)
from mcpl_host.auth.pkce import challenge_of, new_state, new_verifier
from mcpl_host.auth.records import ClientInfo

PRM = "/.well-known/oauth-protected-resource"
OAUTH = "/.well-known/oauth-authorization-server"
OIDC = "/.well-known/openid-configuration"


# -- protected-resource metadata candidates (RFC 9728 section 3.1, MCP discovery) -------


def test_prm_candidates_for_a_server_with_a_path() -> None:
    assert protected_resource_urls("https://rs.example/mcp", None) == [
        f"https://rs.example{PRM}/mcp",
        f"https://rs.example{PRM}",
    ]


def test_prm_candidates_keep_the_whole_path_without_its_trailing_slash_or_query() -> None:
    assert protected_resource_urls("https://RS.example:8443/a/b/mcp/?x=1", None) == [
        f"https://rs.example:8443{PRM}/a/b/mcp",
        f"https://rs.example:8443{PRM}",
    ]


@pytest.mark.parametrize("url", ["https://rs.example", "https://rs.example/"])
def test_prm_candidates_for_a_server_at_the_root(url: str) -> None:
    assert protected_resource_urls(url, None) == [f"https://rs.example{PRM}"]


def test_the_challenges_resource_metadata_comes_first_and_is_never_repeated() -> None:
    given = "https://meta.example/prm.json"
    assert protected_resource_urls("https://rs.example/mcp", given) == [
        given,
        f"https://rs.example{PRM}/mcp",
        f"https://rs.example{PRM}",
    ]
    same = f"https://rs.example{PRM}/mcp"
    assert protected_resource_urls("https://rs.example/mcp", same) == [
        same,
        f"https://rs.example{PRM}",
    ]
    assert protected_resource_urls("https://rs.example/mcp", "") == [
        f"https://rs.example{PRM}/mcp",
        f"https://rs.example{PRM}",
    ]


# -- authorization-server metadata candidates (MCP 2025-11-25, RFC 8414 section 3.1) -----


def test_as_candidates_for_an_issuer_with_a_path_insert_it_after_the_well_known_prefix() -> None:
    assert auth_server_urls("https://as.example/tenant/1") == [
        f"https://as.example{OAUTH}/tenant/1",
        f"https://as.example{OIDC}/tenant/1",
        f"https://as.example/tenant/1{OIDC}",
    ]
    # A trailing slash on the issuer changes nothing about where to look.
    assert auth_server_urls("https://as.example/tenant/1/") == auth_server_urls(
        "https://as.example/tenant/1"
    )


@pytest.mark.parametrize("issuer", ["https://as.example", "https://as.example/"])
def test_as_candidates_for_a_root_issuer(issuer: str) -> None:
    assert auth_server_urls(issuer) == [f"https://as.example{OAUTH}", f"https://as.example{OIDC}"]


def test_as_candidates_keep_the_port_and_lower_the_host() -> None:
    assert auth_server_urls("HTTP://AS.Example:8080/x")[0] == f"http://as.example:8080{OAUTH}/x"


def test_legacy_endpoints_sit_at_the_servers_origin() -> None:
    meta = legacy_endpoints("https://rs.example:9/deep/mcp?q=1")
    assert meta.issuer == "https://rs.example:9"
    assert meta.authorization_endpoint == "https://rs.example:9/authorize"
    assert meta.token_endpoint == "https://rs.example:9/token"
    assert meta.registration_endpoint == "https://rs.example:9/register"


# -- the canonical resource and the resource check (RFC 8707, RFC 9728 section 3.3) ------


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("https://rs.example/mcp", "https://rs.example/mcp"),
        ("HTTPS://RS.Example/mcp", "https://rs.example/mcp"),
        ("https://rs.example/mcp/", "https://rs.example/mcp"),
        ("https://rs.example/mcp//", "https://rs.example/mcp"),
        ("https://rs.example/", "https://rs.example"),
        ("https://rs.example", "https://rs.example"),
        ("https://rs.example:8443/MCP?x=1#frag", "https://rs.example:8443/MCP"),
    ],
)
def test_canonical_resource(url: str, canonical: str) -> None:
    assert canonical_resource(url) == canonical


def test_origin_is_scheme_and_authority_lower_case() -> None:
    assert origin("HTTPS://RS.Example:8443/a?b#c") == "https://rs.example:8443"


@pytest.mark.parametrize(
    ("advertised", "server", "matches"),
    [
        ("https://rs.example/mcp", "https://rs.example/mcp", True),
        # Trailing slashes and case of scheme and host do not matter.
        ("https://rs.example/mcp/", "https://rs.example/mcp", True),
        ("https://rs.example/mcp", "https://rs.example/mcp/", True),
        ("HTTPS://RS.EXAMPLE/mcp", "https://rs.example/mcp", True),
        # A parent path (a server protecting a whole tree), the root included.
        ("https://rs.example/api", "https://rs.example/api/v1/mcp", True),
        ("https://rs.example/", "https://rs.example/mcp", True),
        ("https://rs.example", "https://rs.example/mcp", True),
        # A sibling whose name merely begins like the server's path is not a parent.
        ("https://rs.example/mc", "https://rs.example/mcp", False),
        ("https://rs.example/mcp-admin", "https://rs.example/mcp", False),
        # A child of the server's path, or another path, stands for another resource.
        ("https://rs.example/mcp/sub", "https://rs.example/mcp", False),
        ("https://rs.example/other", "https://rs.example/mcp", False),
        ("https://rs.example/mcp", "https://rs.example/", False),
        # Paths compare with their case.
        ("https://rs.example/MCP", "https://rs.example/mcp", False),
        # Other origins: scheme, host, port, a look-alike host.
        ("http://rs.example/mcp", "https://rs.example/mcp", False),
        ("https://other.example/mcp", "https://rs.example/mcp", False),
        ("https://rs.example:8443/mcp", "https://rs.example/mcp", False),
        ("https://rs.example.evil/mcp", "https://rs.example/mcp", False),
        ("https://evil.example/rs.example/mcp", "https://rs.example/mcp", False),
        ("https://rs.example@evil.example/mcp", "https://rs.example/mcp", False),
    ],
)
def test_resource_matches(advertised: str, server: str, matches: bool) -> None:
    assert resource_matches(advertised, server) is matches


# -- the issuer check (RFC 8414 section 3.3) ---------------------------------------------


@pytest.mark.parametrize(
    ("found", "expected", "same"),
    [
        ("https://as.example", "https://as.example", True),
        ("https://as.example/tenant", "https://as.example/tenant", True),
        # A root issuer with or without its slash: the only leniency.
        ("https://as.example/", "https://as.example", True),
        ("https://as.example", "https://as.example/", True),
        # Anything else is a different string, so a different issuer.
        ("https://as.example/tenant/", "https://as.example/tenant", False),
        ("https://as.example/tenant", "https://as.example/tenant/", False),
        ("https://AS.example", "https://as.example", False),
        ("HTTPS://as.example", "https://as.example", False),
        ("https://as.example:443", "https://as.example", False),
        ("https://as.example//", "https://as.example/", False),
        ("https://as.example/", "https://as.example//", False),
        ("https://as.example/other", "https://as.example", False),
        ("https://evil.example", "https://as.example", False),
        ("", "https://as.example", False),
        (None, "https://as.example", False),
    ],
)
def test_same_issuer(found: str | None, expected: str, same: bool) -> None:
    assert _same_issuer(found, expected) is same


# -- PKCE (RFC 7636) --------------------------------------------------------------------


def test_pkce_s256_matches_the_rfc_7636_appendix_b_vector() -> None:
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert challenge_of(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_pkce_verifiers_are_fresh_and_of_the_allowed_alphabet_and_length() -> None:
    verifiers = {new_verifier() for _ in range(50)}
    assert len(verifiers) == 50
    for verifier in verifiers:
        # RFC 7636 section 4.1: 43 to 128 characters of [A-Z a-z 0-9 - . _ ~].
        assert re.fullmatch(r"[A-Za-z0-9._~-]{43,128}", verifier)
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", challenge_of(verifier))
    assert len({new_state() for _ in range(50)}) == 50


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://as.example/authorize", True),
        ("http://127.0.0.1:8080/token?x=1", True),
        ("HTTPS://AS.example", True),
        ("javascript:alert(1)", False),
        ("file:///etc/passwd", False),
        ("data:text/html,<script>", False),
        ("ftp://as.example/", False),
        ("https://", False),
        ("http:///path", False),
        ("http://[::1", False),
        ("http://as.example:99999/", False),
        ("http://as.example/a b", False),
        ("http://as.example/\x00", False),
        ("http://as.example/\n", False),
        ("https://as.exämple/", False),
        ("/relative/path", False),
        ("", False),
        (None, False),
        (42, False),
    ],
)
def test_web_url(url: object, ok: bool) -> None:
    assert web_url(url) is ok


@pytest.mark.parametrize(
    ("registered", "wanted", "serves"),
    [
        ("http://127.0.0.1:5555/callback", "http://127.0.0.1/callback", True),
        ("http://127.0.0.1:5555/callback", "http://127.0.0.1:6666/callback", True),
        ("http://[::1]:5555/callback", "http://[::1]/callback", True),
        ("http://localhost:5555/callback", "http://localhost:1/callback", True),
        ("http://127.0.0.1:5555/callback", "http://127.0.0.1:5555/other", False),
        ("http://127.0.0.1:5555/callback", "http://localhost:5555/callback", False),
        ("https://app.example/callback", "https://app.example:8443/callback", False),
        ("http://10.0.0.1:5555/callback", "http://10.0.0.1/callback", False),
        ("http://127.0.0.1:5555/callback?x=1", "http://127.0.0.1/callback?x=1", False),
        ("https://app.example/callback", "https://app.example/callback", True),
    ],
)
def test_a_kept_registration_serves_its_loopback_redirect_on_any_port(
    registered: str, wanted: str, serves: bool
) -> None:
    # RFC 8252 section 7.3: only the port of a loopback redirect may differ.
    client = ClientInfo(client_id="c", redirect_uris=(registered,))
    assert serves_redirect(client, wanted) is serves


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("https://H.example:443/mcp", "https://h.example/mcp"),
        ("http://h.example:80/mcp/", "http://h.example/mcp"),
        ("https://h.example:8443/mcp", "https://h.example:8443/mcp"),
        ("http://h.example:443/mcp", "http://h.example:443/mcp"),
    ],
)
def test_the_canonical_uri_drops_the_schemes_default_port(url: str, canonical: str) -> None:
    assert canonical_resource(url) == canonical
    assert resource_matches(canonical, url)
