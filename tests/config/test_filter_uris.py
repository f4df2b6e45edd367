"""``CatalogueFilter.admits`` on resource URIs: judged as written and normalised. The
normalised spelling must mean what was written, and a pattern must not be passed by
the very spelling it names, nor by another spelling of the same file."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from mcpl_host.config import CatalogueFilter
from mcpl_host.config._uri import normalised_uri


@pytest.mark.parametrize(
    ("pattern", "uri"),
    [
        # The server lists these spellings; the person copied them into the exclude list.
        ("file:///home/%7Ealice/*", "file:///home/%7Ealice/secret"),
        ("file:///caf%c3%a9/*", "file:///caf%c3%a9/secret"),
    ],
)
def test_the_spelling_an_exclude_pattern_names_is_excluded(pattern: str, uri: str) -> None:
    # The pattern is matched against the normalised URI, but the pattern itself is not
    # normalised: "%7E" becomes "~", "%c3" becomes "%C3", and the exclude no longer
    # matches the very URI it was written for (without patterns the raw text matched).
    assert CatalogueFilter(exclude_resources=[pattern]).admits("resources", uri) is False


@pytest.mark.parametrize(
    "uri",
    ["file:////etc/passwd", "file:///a/..//etc/passwd", "file:/..//etc/passwd"],
)
def test_normalising_never_makes_a_path_segment_the_host(uri: str) -> None:
    # urlunsplit() writes an empty authority and a path starting "//" as
    # "file://etc/passwd": the URI sent names host "etc", which the caller never wrote.
    normal = normalised_uri(uri)
    assert normal is None or urlsplit(normal).netloc == ""


def test_file_localhost_is_the_same_file_as_no_host() -> None:
    # RFC 8089 2: "localhost" and an empty authority both mean this machine: the same
    # /etc/passwd to every file-URI reader (node's fileURLToPath, urllib).
    hidden = CatalogueFilter(exclude_resources=["file:///etc/*"])
    assert hidden.admits("resources", "file://localhost/etc/passwd") is False


@pytest.mark.parametrize(
    "uri",
    [
        "file:///pub/x?/../../etc/passwd",  # dot segments are removed from the path only
        "file:///pub/x#/../../etc/passwd",
        "file:///pub//etc/passwd",  # os.path.join("/pub", "/etc/passwd") is /etc/passwd
    ],
)
def test_an_include_pattern_cannot_be_left_by_a_query_or_an_empty_segment(uri: str) -> None:
    # A server matching "file:///pub/{+path}" against the whole URI (no query parsing)
    # and joining the path to its root reads /etc/passwd: refused as %2F is.
    assert CatalogueFilter(include_resources=["file:///pub/*"]).admits("resources", uri) is False


def test_normalising_never_makes_a_rootless_path_absolute() -> None:
    # urlunsplit() gives a scheme it knows to have an authority ("file") one: the
    # relative "file:notes.txt" is sent as "file:///notes.txt", a file at the root.
    normal = normalised_uri("file:notes.txt")
    assert normal is None or not urlsplit(normal).path.startswith("/")
