"""WWW-Authenticate parsing (mcpl_host/auth/challenge.py): strings in, challenges out.

RFC 9110 section 11.6.1's grammar with a server's hostile inputs: several challenges in
one value, quoted strings with escapes, token68, garbage, a header far past the bound,
and what ``shown`` makes of a peer's parameter values before an error carries them.
"""

from __future__ import annotations

import time

import pytest

from mcpl_host.auth.challenge import MAX_HEADER, Challenge, bearer_params, parse_challenges, shown
from mcpl_host.protocol.redact import CUT_MARK, Redactor


def test_one_bearer_challenge_with_quoted_and_token_values() -> None:
    header = (
        'Bearer realm="mcp", error=insufficient_scope, scope="files:read files:write", '
        'resource_metadata="https://rs.example/.well-known/oauth-protected-resource/mcp"'
    )
    assert parse_challenges(header) == [
        Challenge(
            "bearer",
            {
                "realm": "mcp",
                "error": "insufficient_scope",
                "scope": "files:read files:write",
                "resource_metadata": "https://rs.example/.well-known/oauth-protected-resource/mcp",
            },
        )
    ]


def test_several_challenges_in_one_value_each_keep_their_own_parameters() -> None:
    # RFC 9110 section 11.6.1's own example, plus a Bearer after a token68 challenge.
    header = (
        'Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple", '
        'DPoP algs="ES256 PS256", Basic dXNlcjpwYXNz==, Bearer scope="a"'
    )
    found = parse_challenges(header)
    assert [c.scheme for c in found] == ["newauth", "basic", "dpop", "basic", "bearer"]
    assert found[0].params == {"realm": "apps", "type": "1", "title": 'Login to "apps"'}
    assert found[1].params == {"realm": "simple"}
    assert found[2].params == {"algs": "ES256 PS256"}
    assert found[3].params == {}  # token68: no parameters
    assert found[4].params == {"scope": "a"}


def test_quoted_string_escapes_and_commas_inside_quotes() -> None:
    header = r'Bearer error_description="a \"quoted\" \\ back\slash, with comma", realm="r"'
    (challenge,) = parse_challenges(header)
    assert challenge.params == {
        "error_description": 'a "quoted" \\ backslash, with comma',
        "realm": "r",
    }


def test_names_and_schemes_are_case_insensitive_and_the_first_repeat_wins() -> None:
    (challenge,) = parse_challenges('BEARER Realm="first", REALM="second", Scope=x')
    assert challenge.scheme == "bearer"
    assert challenge.params == {"realm": "first", "scope": "x"}
    # Values keep their case: they are the server's.
    assert parse_challenges("Bearer error=Invalid_Token")[0].params == {"error": "Invalid_Token"}


def test_whitespace_around_equals_and_commas_is_allowed() -> None:
    (challenge,) = parse_challenges('Bearer  realm = "r" ,scope= x ,  error ="e"')
    assert challenge.params == {"realm": "r", "scope": "x", "error": "e"}


def test_empty_list_elements_are_skipped() -> None:
    # RFC 9110 section 5.6.1: a recipient accepts (and ignores) empty list elements;
    # the parameters after one still belong to the challenge.
    (challenge,) = parse_challenges('Bearer realm="r", , scope="s",, error=e')
    assert challenge.params == {"realm": "r", "scope": "s", "error": "e"}
    found = parse_challenges(', Basic realm="b", , Bearer scope="s"')
    assert [(c.scheme, c.params) for c in found] == [
        ("basic", {"realm": "b"}),
        ("bearer", {"scope": "s"}),
    ]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("", []),
        ("   ,  ,", []),
        ('"quoted first"', []),
        ("=x", []),
        ("Bearer", [Challenge("bearer")]),
        ("Bearer, DPoP", [Challenge("bearer"), Challenge("dpop")]),
        # What cannot be read ends the parse; what was read stays.
        ('Bearer realm="unterminated', [Challenge("bearer")]),
        ('Bearer realm="ok", scope="unterminated', [Challenge("bearer", {"realm": "ok"})]),
        ("Bearer realm=", [Challenge("bearer")]),
        ("Bearer realm=@bad", [Challenge("bearer")]),
        ("Bearer \x00\x01 realm=x", [Challenge("bearer")]),
    ],
)
def test_garbage_never_raises_and_keeps_what_was_read(
    header: str, expected: list[Challenge]
) -> None:
    assert parse_challenges(header) == expected


def test_a_header_of_100_kb_is_read_only_to_the_bound_and_quickly() -> None:
    many = "Bearer " + ", ".join(f'k{i}="{"v" * 20}"' for i in range(4000))
    late = 'Bearer realm="r", ' + "x" * 100_000 + ', resource_metadata="https://evil.example/"'
    quoted = 'Bearer realm="' + "\\\\" * 60_000 + '"'
    assert len(many) > 100_000
    started = time.perf_counter()
    found = parse_challenges(many)
    late_found = parse_challenges(late)
    quoted_found = parse_challenges(quoted)
    assert time.perf_counter() - started < 0.5
    # Only what fits in MAX_HEADER was read: far fewer than 4000 parameters, each whole
    # (no value cut short, no piece of one read as a challenge of its own).
    (challenge,) = found
    assert 100 < len(challenge.params) < MAX_HEADER // 20
    assert set(challenge.params.values()) == {"v" * 20}
    # A parameter past the bound is never seen.
    assert late_found == [Challenge("bearer", {"realm": "r"})]
    assert quoted_found == []  # its quote ends past the bound: nothing whole to read


def test_the_bound_never_cuts_a_value_short() -> None:
    # The bound falls inside "insufficient_scope": the parameter is left out, never read
    # as error=insufficient_sc (nor its tail as a scheme).
    head = 'Bearer realm="r", scope="' + "s" * (MAX_HEADER - 40) + '", error='
    header = head + "insufficient_scope, " + "x" * 100
    assert len(head) < MAX_HEADER < len(head) + len("insufficient_scope")
    (challenge,) = parse_challenges(header)
    assert challenge.scheme == "bearer"
    assert set(challenge.params) == {"realm", "scope"}


def test_bearer_params_takes_the_first_bearer_or_dpop_challenge_of_any_header() -> None:
    headers = ['Basic realm="b"', 'Negotiate, DPoP algs="ES256", Bearer realm="later"']
    assert bearer_params(headers) == {"algs": "ES256"}
    assert bearer_params(['Basic realm="b"']) == {}
    assert bearer_params([]) == {}
    assert bearer_params(['Bearer realm="one"', 'Bearer realm="two"']) == {"realm": "one"}


def test_shown_escapes_control_characters_and_cuts_long_values() -> None:
    params = {
        "error_description": 'line one\nforged="field"\r\x1b[31m\u2028end',
        "realm": "r" * 1000,
        "na\nme": "v",
    }
    out = shown(params)
    assert out["error_description"] == ('line one\\u000aforged="field"\\u000d\\u001b[31m\\u2028end')
    assert out["realm"].endswith(CUT_MARK)
    assert len(out["realm"]) == 256
    assert out["na\\u000ame"] == "v"
    for key, value in out.items():
        assert value.isprintable()
        assert key.isprintable()


def test_shown_keeps_at_most_16_parameters() -> None:
    params = {f"k{i}": str(i) for i in range(100)}
    out = shown(params)
    assert list(out) == [f"k{i}" for i in range(16)]


def test_shown_masks_the_hosts_secrets_a_server_echoes() -> None:
    # A resource server that puts the refused token in its error_description: the
    # challenge an AuthorizationRequired carries never holds a credential of the host's.
    redactor = Redactor(["tok-canary-123456"])
    out = shown({"error_description": "token tok-canary-123456 expired"}, redactor)
    assert out == {"error_description": "token *** expired"}
