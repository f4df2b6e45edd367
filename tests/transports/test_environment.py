"""DESIGN 3.11: a stdio server sees an allowlisted environment, not the host's."""

from __future__ import annotations

import pytest

from mcpl_host.transports.environment import ALLOWED_VARIABLES, child_environment

HOST = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/user",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "LC_CTYPE": "en_US.UTF-8",
    "https_proxy": "http://proxy:3128",
    "NO_PROXY": "localhost",
    "SSL_CERT_FILE": "/etc/ssl/cert.pem",
    "npm_config_cache": "/home/user/.npm",
    "AWS_SECRET_ACCESS_KEY": "host-aws-secret",
    "GITHUB_TOKEN": "host-github-token",
    "OPENAI_API_KEY": "host-openai-key",
    "DATABASE_URL": "postgres://u:p@db/x",
    "LCX_NOT_LOCALE": "x",
    "path": "lowercase is another variable",
}


def test_only_allowlisted_host_variables_pass() -> None:
    env = child_environment({}, host_env=HOST)
    assert env == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/user",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "LC_CTYPE": "en_US.UTF-8",
        "https_proxy": "http://proxy:3128",
        "NO_PROXY": "localhost",
        "SSL_CERT_FILE": "/etc/ssl/cert.pem",
        "npm_config_cache": "/home/user/.npm",
    }


def test_configured_env_is_added_and_wins() -> None:
    env = child_environment(
        {"GITHUB_TOKEN": "configured-token", "PATH": "/opt/bin", "DEBUG": "1"}, host_env=HOST
    )
    assert env["GITHUB_TOKEN"] == "configured-token"
    assert env["PATH"] == "/opt/bin"
    assert env["DEBUG"] == "1"
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert "OPENAI_API_KEY" not in env


def test_inherit_passes_the_whole_host_environment_plus_configured() -> None:
    env = child_environment({"HOME": "/srv", "EXTRA": "x"}, inherit=True, host_env=HOST)
    assert env == {**HOST, "HOME": "/srv", "EXTRA": "x"}


def test_defaults_to_this_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPL_TEST_HOST_SECRET", "do-not-pass")
    monkeypatch.setenv("TZ", "UTC")
    env = child_environment({})
    assert "MCPL_TEST_HOST_SECRET" not in env
    assert env["TZ"] == "UTC"
    assert child_environment({}, inherit=True)["MCPL_TEST_HOST_SECRET"] == "do-not-pass"


def test_the_result_is_a_fresh_dict() -> None:
    configured = {"A": "1"}
    env = child_environment(configured, host_env=HOST)
    env["B"] = "2"
    assert configured == {"A": "1"}
    assert "B" not in HOST


def test_the_allowlist_names_the_documented_variables() -> None:
    for name in ("PATH", "SYSTEMROOT", "NODE_EXTRA_CA_CERTS", "http_proxy", "XDG_DATA_HOME"):
        assert name in ALLOWED_VARIABLES
    assert not any("TOKEN" in n or "SECRET" in n or "KEY" in n for n in ALLOWED_VARIABLES)
