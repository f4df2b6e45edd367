"""The check report's rendering keeps the server's secrets masked, even in what the
server says it is (written by a review against the first version, and failed on it)."""

from __future__ import annotations

import io

import pytest

from mcpl_host.check import Report
from mcpl_host.check.context import Facts
from mcpl_host.cli.checkrender import render_check
from mcpl_host.cli.output import write_json
from mcpl_host.cli.render import Style
from mcpl_host.protocol.redact import Redactor

pytestmark = pytest.mark.timeout(10)

SECRET = "tok-8c1f2e9a7b"


def _report(redactor: Redactor) -> Report:
    # A server that puts its configured token in serverInfo.name (as the LEAKY server of
    # tests/cli/test_check.py does), between 110 characters of padding and 21 more.
    info = {"name": "a" * 110 + SECRET + " " + "b" * 20, "version": "1.0"}
    facts = Facts(version="2025-11-25", initialize={"serverInfo": info, "capabilities": {}})
    return Report("stdio:leaky", facts, (), redactor)


def test_a_secret_cut_in_the_server_name_is_still_masked() -> None:
    # docs/check.md and cli/checkrun.py: "no --env value, header value or token reaches
    # the report". check/report.py's _text cuts the server's name at 128 characters with
    # the module-level log_value, before any redactor sees it; the secret straddles the
    # cut, so its first 12 characters survive, and neither the text renderer's redaction
    # nor write_json's can match what is left of it.
    redactor = Redactor([SECRET])
    text = render_check(_report(redactor), redactor, Style(False))
    out = io.StringIO()
    write_json(_report(redactor).to_json(), redactor, out)
    for shown in (text, out.getvalue()):
        assert SECRET[:8] not in shown, shown
