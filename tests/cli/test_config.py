"""Config files (``mcpServers``): one server, ``--all``, and errors that name the file and
the key (exit 2)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .helpers import run, run_json

DEMO: dict[str, Any] = {"command": sys.executable, "args": ["-m", "mcpl_host.demo"]}


def _config(tmp_path: Path, servers: Any) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def test_one_server_of_a_config(tmp_path: Path) -> None:
    config = _config(tmp_path, {"demo": DEMO})
    report, done = run_json("connect", "--json", "--config", config, "--server", "demo")
    assert done.returncode == 0, done.stderr
    assert report["ok"] is True
    assert report["server"] == "demo"
    assert report["serverInfo"]["name"] == "mcpl-host-demo"


def test_all_servers_one_failing_never_fails_the_others(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        {
            "good": DEMO,
            "gone": {"command": str(tmp_path / "missing-server")},
            "later": {"url": "http://127.0.0.1:1/mcp"},  # nothing listens there
            "off": {"command": "whatever", "disabled": True},
        },
    )
    report, done = run_json("connect", "--json", "--config", config, "--all")
    # Both failed servers could not be reached (6); with --all the exit status is the
    # first of 4, 5, 6, 1 a failed server has.
    assert done.returncode == 6
    assert report["ok"] is False
    servers = report["servers"]
    assert list(servers) == ["good", "gone", "later"]  # in file order
    assert servers["good"]["ok"] is True
    assert [t["name"] for t in servers["good"]["tools"]][:3] == ["echo", "add", "sleep"]
    assert servers["gone"]["error"]["kind"] == "spawn-failed"
    assert servers["later"]["error"]["kind"] == "transport-closed"
    assert report["skipped"] == {"off": "disabled"}


def test_the_readable_all_report(tmp_path: Path) -> None:
    config = _config(tmp_path, {"good": DEMO, "gone": {"command": str(tmp_path / "nope")}})
    done = run("connect", "--config", config, "--all")
    assert done.returncode == 6  # the one failure: a program that cannot be started
    assert "== good: ok" in done.stdout
    assert "== gone: failed" in done.stdout
    assert "2 servers: 1 ok, 1 failed" in done.stdout


def test_a_bad_config_file_names_the_file_and_the_key(tmp_path: Path) -> None:
    config = _config(tmp_path, {"files": {"command": "npx", "args": "-y server"}})
    report, done = run_json("connect", "--json", "--config", config, "--server", "files")
    assert done.returncode == 2
    error = report["error"]
    assert error["kind"] == "config-error"
    assert config in error["message"]
    assert "mcpServers.files" in error["message"]
    assert "args" in error["message"]


def test_a_config_that_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"mcpServers": ')
    report, done = run_json("connect", "--json", "--config", str(path), "--all")
    assert done.returncode == 2
    assert report["error"]["kind"] == "config-error"
    assert str(path) in report["error"]["message"]


def test_a_server_the_file_does_not_have(tmp_path: Path) -> None:
    config = _config(tmp_path, {"demo": DEMO})
    done = run("connect", "--config", config, "--server", "nope")
    assert done.returncode == 2
    assert "mcpServers.nope" in done.stdout
    assert "config-error" in done.stdout
