"""The checker's proof: real servers checked, each against docs/check.md's table.

The table (written by scripts/check_servers.py) says which rules each server fails and
warns on; each test checks its server again and compares. The demo server fails and
warns on nothing. A change in a server's verdicts, or in a rule, shows here: rerun
``scripts/check_servers.py --write`` when the change is right.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import trio

from mcpl_host.check import Verdict

from .real_servers import SERVERS, RealServer, run

DOC = Path(__file__).resolve().parents[2] / "docs" / "check.md"
_ROW = re.compile(r"^\| `(?P<key>[^`]+)` \|.*\| (?P<fails>[^|]+) \| (?P<warns>[^|]+) \|$")


def _table() -> dict[str, tuple[set[str], set[str]]]:
    text = DOC.read_text()
    begin = text.index("<!-- check-results: begin")
    end = text.index("<!-- check-results: end -->")
    rows: dict[str, tuple[set[str], set[str]]] = {}
    for line in text[begin:end].splitlines():
        if (row := _ROW.match(line)) is not None:
            fails, warns = (set(re.findall(r"`([^`]+)`", row[name])) for name in ("fails", "warns"))
            rows[row["key"]] = (fails, warns)
    return rows


def test_the_table_lists_every_real_server() -> None:
    assert set(_table()) == {server.key for server in SERVERS}


@pytest.mark.timeout(150)
@pytest.mark.parametrize("server", SERVERS, ids=[server.key for server in SERVERS])
async def test_a_real_server_gets_the_verdicts_the_table_shows(server: RealServer) -> None:
    with trio.fail_after(120):
        report = await run(server)
    fails = {f.rule.id for f in report.findings if f.verdict is Verdict.FAIL}
    warns = {f.rule.id for f in report.findings if f.verdict is Verdict.WARN}
    assert (fails, warns) == _table()[server.key], report.to_json()
    if server.key == "demo":
        assert not fails
        assert not warns
