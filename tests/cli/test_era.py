"""``mcpl-host connect`` says which era and revision it reached: a 2026-07-28 server by
``server/discover``, a handshake-era one by ``initialize`` after its refusal."""

from __future__ import annotations

from pathlib import Path

from .helpers import run, run_json, server

STATELESS = """
for line in sys.stdin:
    request = json.loads(line)
    method = request.get("method")
    meta = (request.get("params") or {}).get("_meta") or {}
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2"}},
        }})
    elif method == "tools/list":
        # Every request names the revision: a server may refuse one that does not.
        if meta.get("io.modelcontextprotocol/protocolVersion") != "2026-07-28":
            send({"jsonrpc": "2.0", "id": request["id"],
                  "error": {"code": -32602, "message": "no _meta version"}})
        else:
            send({"jsonrpc": "2.0", "id": request["id"],
                  "result": {"resultType": "complete", "tools": []}})
    elif "id" in request:
        send({"jsonrpc": "2.0", "id": request["id"],
              "error": {"code": -32601, "message": "no"}})
"""


def test_a_stateless_server_is_reported_as_such(tmp_path: Path) -> None:
    argv = server(tmp_path, "stateless", STATELESS)
    report, done = run_json("connect", "--json", "--", *argv)
    assert done.returncode == 0, done.stdout + done.stderr
    assert report["protocolVersion"] == "2026-07-28"
    assert report["era"] == "stateless"
    assert report["serverInfo"] == {"name": "modern", "version": "2"}
    assert report["tools"] == []
    assert set(report["timings_ms"]) == {"spawn", "discover", "list", "total"}
    text = run("connect", "--", *argv)
    assert text.returncode == 0, text.stderr
    assert "2026-07-28 (stateless)" in text.stdout


def test_a_handshake_era_server_is_reported_as_such() -> None:
    report, done = run_json("connect", "--json", "--demo")
    assert done.returncode == 0, done.stderr
    assert (report["protocolVersion"], report["era"]) == ("2025-11-25", "handshake")
    assert "initialize" in report["timings_ms"]


def test_versions_governs_both_eras(tmp_path: Path) -> None:
    argv = server(tmp_path, "stateless", STATELESS)
    report, done = run_json("connect", "--json", "--versions", "2025-11-25", "--", *argv)
    # Only the handshake era allowed: no discover is sent, and this server has no initialize.
    assert done.returncode != 0
    assert report["ok"] is False
