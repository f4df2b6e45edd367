"""``--header``, ``--bearer`` and ``--bearer-env``: headers for an http(s) TARGET, refused
anywhere else, and never repeated in a message."""

from __future__ import annotations

import pytest

from mcpl_host.cli.args import UsageError, parse, secret_values
from mcpl_host.cli.targets import resolve
from mcpl_host.protocol.errors import ConfigurationError
from mcpl_host.transports.targets import HttpTarget

from .helpers import run, run_json

URL = "https://mcp.example.test/mcp"
SECRET = "s3cret-V4lue-9f"  # every value below is this, so that no message may hold it


@pytest.mark.parametrize(
    ("args", "environ", "headers"),
    [
        (["--header", f"X-Api-Key: {SECRET}"], {}, {"X-Api-Key": SECRET}),
        (["--header", f"X-Api-Key:{SECRET}  "], {}, {"X-Api-Key": SECRET}),
        (["--header=X-A: 1", "--header", "X-B: two words"], {}, {"X-A": "1", "X-B": "two words"}),
        (["--bearer", SECRET], {}, {"Authorization": f"Bearer {SECRET}"}),
        (["--bearer=" + SECRET], {}, {"Authorization": f"Bearer {SECRET}"}),
        (["--bearer-env", "MY_TOKEN"], {"MY_TOKEN": SECRET}, {"Authorization": f"Bearer {SECRET}"}),
        (
            ["--header", "X-Tenant: t1", "--bearer-env=MY_TOKEN"],
            {"MY_TOKEN": SECRET},
            {"X-Tenant": "t1", "Authorization": f"Bearer {SECRET}"},
        ),
        (["--header", f"authorization: Basic {SECRET}"], {}, {"authorization": f"Basic {SECRET}"}),
    ],
)
def test_the_options_become_the_targets_headers(
    args: list[str], environ: dict[str, str], headers: dict[str, str]
) -> None:
    options = parse(["connect", *args, URL], environ)
    assert options.headers == headers
    assert SECRET not in repr(options)
    plan = resolve(options)
    target = plan.servers[0].target
    assert isinstance(target, HttpTarget)
    assert dict(target.headers) == headers
    # Every value is a secret of the run, whatever the header's name (from 4 characters
    # on, as for --env: masking "1" would wreck every line).
    for value in headers.values():
        assert value in plan.servers[0].secrets
        if len(value) >= 4:
            assert plan.redactor.redact(f"x {value} y") == "x *** y"


def test_call_takes_them_too() -> None:
    options = parse(["call", "--tool", "t", "--bearer", SECRET, URL])
    assert options.headers == {"Authorization": f"Bearer {SECRET}"}


@pytest.mark.parametrize(
    ("args", "environ", "says"),
    [
        (["--header", f"Authorization Bearer {SECRET}", URL], {}, "expected 'Name: value'"),
        (["--header", f": {SECRET}", URL], {}, "expected 'Name: value'"),
        (["--header", f"X Key: {SECRET}", URL], {}, "a header name is"),
        (["--header", f"X-Key: {SECRET}\r\nX-Evil: 1", URL], {}, "without CR, LF or NUL"),
        (["--header", f"X-Key: caf\u00e9 {SECRET}", URL], {}, "must be ASCII"),
        (["--header", f"X-Key: {SECRET}", "--header", f"x-key: {SECRET}", URL], {}, "twice"),
        (["--bearer", f"two {SECRET}", URL], {}, "a bearer token is"),
        (["--bearer", SECRET, "--bearer-env", "T", URL], {"T": SECRET}, "not allowed with"),
        (
            ["--bearer", SECRET, "--header", f"Authorization: Bearer {SECRET}", URL],
            {},
            "--bearer and --header Authorization",
        ),
        (
            ["--bearer-env", "T", "--header", f"AUTHORIZATION: x {SECRET}", URL],
            {"T": SECRET},
            "--bearer-env and --header Authorization",
        ),
        (["--bearer-env", "T", URL], {}, "environment variable T is not set or empty"),
        (["--bearer-env", "T", URL], {"T": ""}, "environment variable T is not set or empty"),
        (["--bearer-env", "T", URL], {"T": f"{SECRET} x"}, "--bearer-env T: a bearer token is"),
        # Not an HTTP target: the values would go nowhere, or somewhere unexpected.
        (
            ["--bearer", SECRET, "tcp://127.0.0.1:9"],
            {},
            "for an http(s):// or sse+http(s):// TARGET",
        ),
        (["--header", f"X-K: {SECRET}", "wss://h/mcp"], {}, "for an http(s):// or sse+http(s)://"),
        (["--header", f"X-K: {SECRET}", "unix:/tmp/s"], {}, "for an http(s):// or sse+http(s)://"),
        (["--bearer", SECRET, "--demo"], {}, "for an http(s):// or sse+http(s):// TARGET"),
        (["--bearer-env", "T", "--demo"], {"T": SECRET}, "for an http(s):// or sse+http(s)://"),
        (
            ["--bearer", SECRET, "--config", "c.json", "--all"],
            {},
            "for an http(s):// or sse+http(s)://",
        ),
        (
            ["--header", f"X-K: {SECRET}", "--", "server", URL],
            {},
            "for an http(s):// or sse+http(s)://",
        ),
    ],
)
def test_bad_use_is_refused_without_the_value(
    args: list[str], environ: dict[str, str], says: str
) -> None:
    with pytest.raises(UsageError) as refused:
        parse(["connect", *args], environ)
    assert says in refused.value.message
    assert SECRET not in refused.value.message
    assert refused.value.usage.startswith("usage: mcpl-host connect")


def test_a_header_the_transport_sets_is_a_config_error_without_the_value() -> None:
    options = parse(["connect", "--header", f"Accept: {SECRET}", URL])
    with pytest.raises(ConfigurationError) as refused:
        resolve(options)
    assert "HTTP header Accept is set by the transport" in refused.value.message
    assert SECRET not in refused.value.message


@pytest.mark.parametrize(
    "args",
    [
        ["--env", f"K={SECRET}"],
        ["--env=K=" + SECRET],
        ["--header", f"X-Api-Key: {SECRET}"],
        ["--header", f"Authorization: Bearer {SECRET}"],
        ["--header=X-Api-Key:" + SECRET],
        ["--header", f"not a header line {SECRET}"],
        ["--bearer", SECRET],
        ["--bearer=" + SECRET],
        ["--bearer-env", "VAR"],
        ["--bearer-env=VAR"],
    ],
)
def test_every_value_is_found_before_parsing(args: list[str]) -> None:
    found = secret_values(["connect", *args, "--bogus", URL], {"VAR": SECRET})
    assert any(SECRET in value for value in found)
    assert all(value for value in found)


def test_nothing_after_the_stdio_mark_is_taken_for_a_value() -> None:
    assert secret_values(["connect", "--", "server", "--bearer", "x" * 10]) == []


def test_usage_errors_never_echo_a_value_on_the_real_command() -> None:
    for args in (
        ("--header", f"Authorization Bearer {SECRET}", URL),
        ("--bearer", SECRET, "--demo"),
        ("--bearer", SECRET, URL, "--bogus", SECRET),
        ("--header", f"X-K: {SECRET}", "--timeout", SECRET, URL),
        ("--bearer-env", "MY_VAR", URL, "--bogus", SECRET),
    ):
        report, done = run_json("connect", "--json", *args, env={"MY_VAR": SECRET})
        assert done.returncode == 2, args
        assert report["error"]["kind"] == "config-error"
        assert SECRET not in done.stdout + done.stderr, args


def test_connect_help_documents_the_options() -> None:
    done = run("connect", "--help")
    assert done.returncode == 0
    for text in ("--header 'NAME: VALUE'", "--bearer TOKEN", "--bearer-env VAR", "redacted"):
        assert text in done.stdout
    assert "--bearer-env VAR" in run("call", "--help").stdout
