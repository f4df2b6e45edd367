"""DESIGN 3.3: the profile registry, the allowlist, and negotiation."""

from __future__ import annotations

import pytest

from mcpl_host.protocol.errors import ConfigurationError, McplHostError, VersionError
from mcpl_host.protocol.profiles import KNOWN_REVISIONS, PROFILES, negotiate, validate_allowlist


def test_known_revisions() -> None:
    assert KNOWN_REVISIONS == (
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
    )


@pytest.mark.parametrize(
    ("revision", "batches"),
    [
        ("2024-11-05", True),
        ("2025-03-26", True),
        ("2025-06-18", False),
        ("2025-11-25", False),
        ("2026-07-28", False),
    ],
)
def test_batching_by_revision(revision: str, batches: bool) -> None:
    assert PROFILES[revision].accepts_batches is batches


def test_profile_facts() -> None:
    assert [r for r, p in PROFILES.items() if p.may_send_batches] == ["2025-03-26"]
    assert [r for r, p in PROFILES.items() if p.version_header] == [
        "2025-06-18",
        "2025-11-25",
        "2026-07-28",
    ]
    assert [r for r, p in PROFILES.items() if p.error_without_id] == ["2025-11-25", "2026-07-28"]
    assert [r for r, p in PROFILES.items() if p.stateless] == ["2026-07-28"]
    # Servers of the stateless revision send no requests: input comes through results.
    assert PROFILES["2026-07-28"].server_requests == frozenset()
    assert not PROFILES["2026-07-28"].tasks
    assert "elicitation/create" not in PROFILES["2025-03-26"].server_requests
    assert "elicitation/create" in PROFILES["2025-06-18"].server_requests
    assert "tasks/get" in PROFILES["2025-11-25"].server_requests
    assert "tasks/get" not in PROFILES["2025-06-18"].server_requests
    assert PROFILES["2025-11-25"].url_elicitation
    assert not PROFILES["2024-11-05"].progress_message


def test_default_allowlist_is_everything_newest_first() -> None:
    assert validate_allowlist() == (
        "2026-07-28",
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
    )


def test_allowlist_is_deduplicated_and_sorted() -> None:
    assert validate_allowlist(["2024-11-05", "2025-03-26", "2024-11-05"]) == (
        "2025-03-26",
        "2024-11-05",
    )


KNOWN = "known: 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28"


@pytest.mark.parametrize(
    ("versions", "text"),
    [
        ([], "the version allowlist is empty: allow at least one revision"),
        (
            ["2025-03-26", "2099-01-01"],
            f"unknown protocol revision in the allowlist: '2099-01-01'; {KNOWN}",
        ),
        (
            ["2099-01-01", "2026-07-29"],
            f"unknown protocol revision in the allowlist: '2099-01-01', '2026-07-29'; {KNOWN}",
        ),
        ("2025-03-26", "the version allowlist must be a list of revisions, not a string"),
    ],
)
def test_bad_allowlist_is_a_permanent_configuration_error(versions: object, text: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        validate_allowlist(versions)  # type: ignore[arg-type]
    assert str(info.value) == text
    assert info.value.permanent
    assert isinstance(info.value, McplHostError)


def test_negotiation_accepts_any_allowed_answer() -> None:
    allow = validate_allowlist(["2025-06-18", "2025-03-26"])
    assert allow[0] == "2025-06-18"  # the offer
    assert negotiate(allow, "2025-03-26") is PROFILES["2025-03-26"]


@pytest.mark.parametrize("answered", ["2024-11-05", "2025-99-99", None, 20250326])
def test_answer_outside_allowlist_is_a_permanent_version_error(answered: object) -> None:
    allow = validate_allowlist(["2025-06-18", "2025-03-26"])
    error = negotiate(allow, answered)
    assert isinstance(error, VersionError)
    assert error.permanent
    assert error.offered == "2025-06-18"
    assert error.answered == answered
    assert error.allowed == allow


def test_version_error_escapes_the_servers_text() -> None:
    error = negotiate(("2025-06-18",), "2025\nlevel=critical")
    assert isinstance(error, VersionError)
    assert "\n" not in str(error)
    assert "2025\\u000alevel=critical" in str(error)


@pytest.mark.parametrize(
    ("answered", "what"),
    [
        ("2025-99-99", "protocol revision 2025-99-99, which is not allowed"),
        # The server's text is cut at 64 UTF-16 units, mark included.
        ("9" * 100, "protocol revision " + "9" * 58 + "…[cut], which is not allowed"),
        (None, "no protocol revision (protocolVersion must be a string)"),
    ],
)
def test_version_error_says_what_the_server_chose(answered: object, what: str) -> None:
    error = negotiate(("2025-06-18", "2025-03-26"), answered)
    assert isinstance(error, VersionError)
    assert str(error) == f"the server chose {what} (allowed: 2025-06-18, 2025-03-26)"
