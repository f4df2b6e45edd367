"""``mcpl-host check``, run as a real subprocess: the demo passes, a faulty server fails
with its rule, detail and evidence, the JSON report keeps its schema, ``--only`` and
``--skip`` select, secrets never show, and the exit statuses (docs/check.md)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from mcpl_host.auth import FileTokenStore, TokenSet
from mcpl_host.check import GROUPS, RULES, SCHEMA, Finding, Line, Report, Verdict
from mcpl_host.cli.checkrender import render_check, style_for
from mcpl_host.cli.render import Style
from mcpl_host.protocol.profiles import KNOWN_REVISIONS
from mcpl_host.protocol.redact import Redactor

from .helpers import (
    CLI,
    TIMEOUT,
    closed_port_url,
    refusing_http_server,
    run,
    run_in_process,
    run_json,
    server,
)

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[")
SUMMARY = re.compile(
    r"^(\d+) rules?: (\d+) passed, (\d+) failed, (\d+) warnings?, (\d+) not applicable$", re.M
)
# Short bounds: the demo answers at once; the whole battery stays within seconds.
# A passing check never waits its timeout out (each probe ends on the answer it waits for),
# so a long one costs nothing and keeps a busy machine's slow spawn from failing a rule.
FAST = ("--timeout", "10", "--exit-grace", "5")
NEWEST = "lifecycle.initialize-newest"
PING = "lifecycle.ping-after-initialize"
FAULTY = [sys.executable, "-m", "tests.check.faulty_stdio"]


def _ids(report: dict[str, Any]) -> list[str]:
    return [entry["id"] for entry in report["rules"]]


# --list's order, and the report's: by group, then as each group declares them.
LISTED = [rule_id for group in GROUPS for rule_id in RULES if RULES[rule_id].group == group]


def _in_group(group: str) -> list[str]:
    return [rule_id for rule_id, rule in RULES.items() if rule.group == group]


def test_the_demo_passes_every_rule() -> None:
    done = run("check", *FAST, "--demo")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FAIL" not in done.stdout
    found = SUMMARY.search(done.stdout)
    assert found is not None, done.stdout
    assert int(found[1]) == len(RULES)
    assert int(found[3]) == 0
    assert "server      mcpl-host-demo" in done.stdout
    for group in {rule.group for rule in RULES.values()}:
        assert re.search(rf"^{group}$", done.stdout, re.M), group


def test_json_is_one_object_of_the_documented_schema() -> None:
    report, done = run_json("check", "--json", *FAST, "--only", "lifecycle", "--demo")
    assert done.returncode == 0, done.stderr
    assert set(report) == {"schema", "target", "server", "ok", "summary", "rules"}
    assert report["schema"] == SCHEMA == "mcpl-host-check/1"
    assert isinstance(report["target"], str)
    assert report["ok"] is True
    server_ = report["server"]
    assert set(server_) == {"name", "version", "revision", "modern"}
    assert server_["name"] == "mcpl-host-demo"
    assert isinstance(server_["version"], str)
    assert isinstance(server_["revision"], str)
    assert isinstance(server_["modern"], bool)
    assert set(report["summary"]) == {"pass", "fail", "warn", "n/a"}
    assert all(isinstance(n, int) for n in report["summary"].values())
    assert sum(report["summary"].values()) == len(report["rules"])
    assert _ids(report) == _in_group("lifecycle")
    for entry in report["rules"]:
        assert set(entry) == {
            "id",
            "group",
            "title",
            "level",
            "revision",
            "section",
            "verdict",
            "detail",
            "evidence",
        }
        assert entry["group"] in GROUPS
        assert entry["level"] in ("MUST", "SHOULD")
        assert entry["verdict"] in ("pass", "fail", "warn", "n/a")
        assert all(isinstance(entry[k], str) for k in ("title", "revision", "section", "detail"))
        for line in entry["evidence"]:
            assert set(line) == {"direction", "text"}
            assert line["direction"] in ("sent", "received", "note")
            assert isinstance(line["text"], str)


# Parsing and selecting need no subprocess of their own: these run main() in process
# (the demo server is still a real process).
@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (("--only", PING), [PING]),
        (("--only", PING, "--only", f"{NEWEST},{PING}"), [NEWEST, PING]),
        (("--only", "lifecycle", "--skip", PING), [r for r in _in_group("lifecycle") if r != PING]),
        (("--only", NEWEST, "--skip", "lifecycle"), []),
    ],
)
def test_only_and_skip_select_by_rule_and_group(
    capsys: pytest.CaptureFixture[str], options: tuple[str, ...], expected: list[str]
) -> None:
    status, out, err = run_in_process(capsys, "check", "--json", *FAST, *options, "--demo")
    assert status == 0, err
    assert _ids(json.loads(out)) == expected


@pytest.mark.parametrize("name", ["nope", "lifecycle.nope", "lifecycles"])
def test_an_unknown_rule_or_group_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    status, out, _ = run_in_process(capsys, "check", "--only", name, "--demo")
    assert status == 2
    assert f"unknown rule or group {name!r}" in out
    status, out, _ = run_in_process(capsys, "check", "--json", "--skip", name, "--demo")
    assert status == 2
    report = json.loads(out)
    assert (report["ok"], report["error"]["kind"]) == (False, "config-error")


def test_list_shows_every_rule_and_connects_to_nothing() -> None:
    done = run("check", "--list")
    assert done.returncode == 0, done.stderr
    listed = re.findall(r"^  (\S+)\s+(MUST|SHOULD)\s+(\S+)\s+(.+)$", done.stdout, re.M)
    assert [rule_id for rule_id, *_ in listed] == LISTED
    for rule_id, level, revision, title in listed:
        assert (level, revision, title) == (
            RULES[rule_id].level,
            RULES[rule_id].revision,
            RULES[rule_id].title,
        )


def test_list_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_in_process(capsys, "check", "--list", "--json")
    assert status == 0
    report = json.loads(out)
    assert report["schema"] == SCHEMA
    assert [entry["id"] for entry in report["rules"]] == LISTED
    assert all(
        set(entry) == {"id", "group", "title", "level", "revision", "section"}
        for entry in report["rules"]
    )


def test_a_failing_server_exits_1_with_the_rule_detail_and_evidence() -> None:
    done = subprocess.run(
        [*CLI, "check", *FAST, "--only", NEWEST, "--", *FAULTY, "no-server-info"],
        check=False,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=ROOT,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert re.search(rf"^  FAIL  {re.escape(NEWEST)}  ", out, re.M), out
    assert "the result has no serverInfo with a name and a version" in out
    assert re.search(r'^        → \{"jsonrpc":"2.0","id":1,"method":"initialize"', out, re.M)
    assert re.search(r'^        ← \{"jsonrpc":"2.0","id":1,"result":', out, re.M)
    assert SUMMARY.search(out) is not None
    assert "1 failed" in out


def test_passing_evidence_only_with_v(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_in_process(capsys, "check", *FAST, "-v", "--only", PING, "--demo")
    assert status == 0
    assert re.search(r'^        → \{"jsonrpc":"2.0","id":\d+,"method":"ping"\}$', out, re.M)
    assert "        answered {}" in out


def test_color_always_and_never(capsys: pytest.CaptureFixture[str]) -> None:
    always = run("check", *FAST, "--color", "always", "--only", NEWEST, "--demo")
    assert "\x1b[32mPASS\x1b[0m" in always.stdout
    status, out, _ = run_in_process(
        capsys, "check", *FAST, "--color", "never", "--only", PING, "--demo"
    )
    assert status == 0
    assert not ANSI.search(out)
    assert "PASS" in out
    assert '"method":"ping"' not in out  # a passing rule's evidence needs -v


class _Terminal:
    def isatty(self) -> bool:
        return True


def test_auto_colour_is_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", _Terminal())
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert style_for("auto").enabled
    monkeypatch.setenv("NO_COLOR", "1")
    assert not style_for("auto").enabled
    assert style_for("always").enabled
    assert not style_for("never").enabled


LEAKY = """\
secret = os.environ["PROBE_TOKEN"]
for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        continue
    if not isinstance(request, dict) or "id" not in request:
        continue
    if request.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {}, "instructions": "token " + secret,
            "serverInfo": {"name": "leaky " + secret, "version": secret}}})
    else:
        send({"jsonrpc": "2.0", "id": request["id"],
              "error": {"code": -32601, "message": "no " + secret}})
"""


def test_an_env_secret_never_shows_even_when_the_server_echoes_it(tmp_path: Path) -> None:
    secret = "tok-8c1f2e9a7b"
    argv = server(tmp_path, "leaky", LEAKY)
    env = ("--env", f"PROBE_TOKEN={secret}")
    text = run("check", *FAST, "-v", *env, "--only", "lifecycle", "--", *argv)
    # The server answers ping with an error naming the secret: that rule fails, and its
    # evidence is shown with the secret masked.
    assert text.returncode == 1, text.stdout + text.stderr
    assert secret not in text.stdout + text.stderr
    assert "server      leaky *** ***" in text.stdout
    assert '"message": "no ***"' in text.stdout
    report, done = run_json("check", "--json", *FAST, *env, "--only", "lifecycle", "--", *argv)
    assert done.returncode == 1
    assert secret not in done.stdout + done.stderr
    assert report["server"]["name"] == "leaky ***"


def test_a_missing_program_exits_as_connect_does() -> None:
    report, done = run_json("check", "--json", *FAST, "--", "/nonexistent/mcp-server")
    connect = run("connect", "--json", "--timeout", "2", "--", "/nonexistent/mcp-server")
    assert done.returncode == connect.returncode == 6
    assert report["error"]["kind"] == json.loads(connect.stdout)["error"]["kind"] == "spawn-failed"
    assert report["schema"] == SCHEMA
    assert report["ok"] is False


def test_a_server_that_exits_at_once_is_unreachable(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_in_process(capsys, "check", *FAST, "--", sys.executable, "-c", "pass")
    assert status == 6, out + err
    assert "transport-closed" in out


def test_no_http_server_is_unreachable(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_in_process(capsys, "check", "--json", *FAST, closed_port_url())
    assert status == 6
    error = json.loads(out)["error"]
    assert (error["kind"], error["reason"]) == ("transport-closed", "connect-failed")


def test_an_http_server_asking_for_authorization_exits_4_and_never_shows_the_token() -> None:
    token = "bearer-5e0d41c7aa"
    with refusing_http_server() as refusing:
        report, done = run_json(
            "check", "--json", "--timeout", "0.5", "--bearer", token, refusing.url
        )
        assert refusing.seen, "the checker sent nothing"
        assert all(seen.get("authorization") == f"Bearer {token}" for seen in refusing.seen)
    assert done.returncode == 4, done.stdout
    assert report["error"]["kind"] == "auth-required"
    assert token not in done.stdout + done.stderr


def test_an_oauth_config_entry_without_a_stored_token_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(
        json.dumps({"mcpServers": {"corp": {"url": "http://127.0.0.1:9/mcp", "auth": "oauth"}}})
    )
    report, done = run_json("check", "--json", "--config", str(config), "--server", "corp")
    assert done.returncode == 2
    assert report["error"]["kind"] == "config-error"
    assert "mcpl-host auth login" in report["error"]["message"]


@pytest.mark.parametrize(
    "args",
    [
        ("--call", "add", "[1, 2]", "--demo"),
        ("--call", "add", "{", "--demo"),
        ("--exit-grace", "0", "--demo"),
        ("--color", "sometimes", "--demo"),
        ("--only", PING),
    ],
)
def test_bad_check_options_are_usage_errors(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    status, out, err = run_in_process(capsys, "check", *args)
    assert status == 2, out + err
    assert "mcpl-host: error:" in err
    status, out, err = run_in_process(capsys, "check", "--json", *args)
    assert status == 2, out + err
    report = json.loads(out)
    assert (report["schema"], report["ok"], report["error"]["kind"]) == (
        SCHEMA,
        False,
        "config-error",
    )


SILENT = """\
open(sys.argv[1], "w").close()
for line in sys.stdin:
    pass  # never answers: the check waits until the signal
"""


def test_sigint_during_a_check_exits_130_with_one_json_object(tmp_path: Path) -> None:
    started = tmp_path / "started"
    argv = server(tmp_path, "silent", SILENT)
    process = subprocess.Popen(
        [
            *CLI,
            "check",
            "--json",
            "--timeout",
            "30",
            "--exit-grace",
            "1",
            "--",
            *argv,
            str(started),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + TIMEOUT
    while not started.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 130, out + err
    assert "Traceback" not in err
    report = json.loads(out)
    assert (report["ok"], report["error"]["kind"], report["error"]["signal"]) == (
        False,
        "cancelled",
        "SIGINT",
    )


DOCS = ROOT / "docs" / "check.md"
_ROW = re.compile(r"^\| `([^`]+)` \| (MUST|SHOULD) \| ([^ |]+) \| \[([^\]]+)\]\(([^)]+)\) \|", re.M)


def test_the_docs_table_lists_exactly_the_rules() -> None:
    text = DOCS.read_text()
    section = text[text.index("\n## Rules\n") : text.index("\n## Real servers\n")]
    rows = {m[1]: m for m in _ROW.finditer(section)}
    missing = [rule_id for rule_id in RULES if rule_id not in rows]
    extra = [rule_id for rule_id in rows if rule_id not in RULES]
    assert not missing, f"docs/check.md's rule table lacks {missing}"
    assert not extra, f"docs/check.md's rule table lists rules that do not exist: {extra}"
    assert list(rows) == LISTED, "docs/check.md's rule table is not in --list's order"
    for rule_id, row in rows.items():
        rule = RULES[rule_id]
        assert (row[2], row[3], row[4]) == (rule.level, rule.revision, rule.section), rule_id
        # JSON-RPC's own rules (revision "all") link to the newest revision's page.
        revision = rule.revision if rule.revision != "all" else KNOWN_REVISIONS[-1]
        assert row[5] == (
            f"https://modelcontextprotocol.io/specification/{revision}/{rule.section}"
        ), rule_id


def test_a_stored_oauth_token_is_sent_as_a_static_header() -> None:
    token = "stored-access-71d0c3"
    with refusing_http_server() as refusing:
        # The test's own token file (conftest), which the subprocess inherits.
        store = FileTokenStore(os.environ["MCPL_HOST_AUTH_FILE"])
        tokens = TokenSet(access_token=token, expires_at=time.time() + 3600)
        trio.run(store.set_tokens, "https://as.example", "client-1", refusing.url, tokens)
        report, done = run_json("check", "--json", "--timeout", "0.5", refusing.url)
        assert refusing.seen, "the checker sent nothing"
        assert all(seen.get("authorization") == f"Bearer {token}" for seen in refusing.seen)
    assert done.returncode == 4, done.stdout
    assert report["error"]["kind"] == "auth-required"
    assert token not in done.stdout + done.stderr


def _report(evidence: int, detail: str) -> Report:
    rule = RULES[NEWEST]
    lines = tuple(Line("←", f"line {n}") for n in range(evidence))
    return Report("stdio:x", None, (Finding(rule, Verdict.FAIL, detail, lines),))


def test_a_finding_shows_its_last_12_evidence_lines_unless_v() -> None:
    style, redactor = Style(enabled=False), Redactor(["hunter2"])
    short = render_check(_report(20, "bad \x1b[2J hunter2"), redactor, style)
    shown = re.findall(r"^        ← line (\d+)$", short, re.M)
    assert shown == [str(n) for n in range(8, 20)]
    assert "… 8 earlier lines (-v shows them)" in short
    # A control character left in a detail is escaped; a secret in it masked.
    assert "bad \\u001b[2J ***" in short
    assert "\x1b" not in short
    whole = render_check(_report(20, "bad"), redactor, style, show_passing=True)
    assert re.findall(r"^        ← line (\d+)$", whole, re.M) == [str(n) for n in range(20)]
    assert "1 rule: 0 passed, 1 failed, 0 warnings, 0 not applicable" in whole


def test_call_is_the_only_way_a_tool_is_called(capsys: pytest.CaptureFixture[str]) -> None:
    rule = "content.structured-content"
    if rule not in RULES:
        pytest.skip(f"{rule} is not on this branch")
    status, out, _ = run_in_process(capsys, "check", "--json", *FAST, "--only", rule, "--demo")
    assert status == 0
    (entry,) = json.loads(out)["rules"]
    assert entry["verdict"] == "n/a"
    assert not any('"tools/call"' in line["text"] for line in entry["evidence"])
    called = ("--call", "add", '{"a": 2, "b": 40}')
    status, out, _ = run_in_process(
        capsys, "check", "--json", "-v", *FAST, *called, "--only", rule, "--demo"
    )
    assert status == 0
    (entry,) = json.loads(out)["rules"]
    assert entry["verdict"] == "pass"
    sent = [line["text"] for line in entry["evidence"] if line["direction"] == "sent"]
    assert any('"name":"add","arguments":{"a":2,"b":40}' in text for text in sent), sent


def test_a_config_entry_is_checked_as_connect_opens_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "servers.json"
    entry = {"command": sys.executable, "args": ["-m", "mcpl_host.demo"], "cwd": str(ROOT)}
    config.write_text(json.dumps({"mcpServers": {"demo": {**entry, "env": {"K": "v4lue-9"}}}}))
    status, out, err = run_in_process(
        capsys, "check", "--json", *FAST, "--only", NEWEST, "--config", str(config)
    )
    assert status == 0, out + err
    report = json.loads(out)
    assert [entry["verdict"] for entry in report["rules"]] == ["pass"]
    assert report["server"]["name"] == "mcpl-host-demo"
