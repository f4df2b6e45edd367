"""A host that talks to stdio servers loads none of what only other transports need:
``import mcpl_host``, a Connection and a ConnectionManager over stdio leave the
authorization machinery (mcpl_host.auth, httpx, PyJWT, cryptography, h11) and the
WebSocket, retry and logging libraries unimported (but tenacity for the manager), and
the manager itself is loaded when first named (each in a fresh process, since
``sys.modules`` is global). They cost most of mcpl_host's import time and memory
(docs/performance.md, "What each change bought"); a stray import at module level
anywhere on the way would bring them back without failing anything else."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

import mcpl_host
import mcpl_host.manager

# Loaded only by what uses them: an HTTP target with auth, `mcpl-host auth`, a
# WebSocket target, the first reconnect, an application that imports structlog.
HEAVY = (
    "mcpl_host.auth",
    "httpx",
    "httpcore",
    "jwt",
    "cryptography",
    "h11",
    "trio_websocket",
    "wsproto",
    "tenacity",
    "structlog",
)

PROBE = """
import json, sys
import trio
import mcpl_host
from mcpl_host import Connection, StdioTarget

HEAVY = {heavy!r}
loaded = {{"import": [m for m in HEAVY if m in sys.modules]}}
loaded["manager before use"] = [m for m in ("mcpl_host.manager", "mcpl_host.config") if m in sys.modules]
DEMO = StdioTarget.of([sys.executable, "-m", "mcpl_host.demo"])

async def main():
    async with Connection(DEMO) as conn:
        assert (await conn.call_tool("echo", {{"text": "hi"}})).text == "hi"
    loaded["connection"] = [m for m in HEAVY if m in sys.modules]
    from mcpl_host import ConnectionManager
    async with ConnectionManager({{"demo": DEMO}}) as manager:
        await manager.wait_ready()
        result = await manager.call_tool("demo__echo", {{"text": "hi"}})
        assert result.text == "hi", result
    loaded["manager"] = [m for m in HEAVY if m in sys.modules]

trio.run(main)
print(json.dumps(loaded))
"""


def run_probe(source: str) -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, list[str]] = json.loads(done.stdout)
    return loaded


def test_the_heavy_modules_exist() -> None:
    # Else a renamed package would make the tests below pass for nothing.
    for name in HEAVY:
        assert importlib.util.find_spec(name) is not None, name


def test_a_stdio_host_never_imports_the_http_auth_websocket_or_logging_libraries() -> None:
    loaded = run_probe(PROBE.format(heavy=HEAVY))
    # The manager retries a server's first connect under its policy: tenacity is its
    # controller from the start (half a megabyte once trio is loaded).
    assert loaded == {
        "import": [],
        "manager before use": [],  # mcpl_host.ConnectionManager is loaded when first named
        "connection": [],
        "manager": ["tenacity"],
    }


@pytest.mark.parametrize("module", ["mcpl_host.auth", "mcpl_host.aio", "mcpl_host.sync"])
def test_importing_auth_or_a_face_leaves_httpx_jwt_and_cryptography_to_first_use(
    module: str,
) -> None:
    # The faces import mcpl_host.auth (to adapt an OAuth's hooks); a login, a DPoP key
    # or an assertion is what loads the libraries.
    probe = (
        "import json, sys\n"
        f"import {module}\n"
        f"print(json.dumps({{'import': [m for m in {HEAVY[1:6]!r} if m in sys.modules]}}))\n"
    )
    assert run_probe(probe) == {"import": []}


def test_a_dpop_key_loads_pyjwt_and_cryptography_when_made() -> None:
    probe = (
        "import json, sys\n"
        "from mcpl_host.auth.jose import DpopKey\n"
        "before = [m for m in ('jwt', 'cryptography') if m in sys.modules]\n"
        "DpopKey().proof('GET', 'https://example.test/mcp')\n"
        "print(json.dumps({'before': before,"
        " 'after': [m for m in ('jwt', 'cryptography') if m in sys.modules]}))\n"
    )
    assert run_probe(probe) == {"before": [], "after": ["jwt", "cryptography"]}


def test_the_lazily_exported_names_are_the_modules_own() -> None:
    lazy = sorted(mcpl_host._LAZY)
    assert set(lazy) <= set(mcpl_host.manager.__all__)
    assert set(lazy) <= set(mcpl_host.__all__)
    assert set(lazy) <= set(dir(mcpl_host))
    for name in lazy:
        assert getattr(mcpl_host, name) is getattr(mcpl_host.manager, name)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        mcpl_host.Nope  # noqa: B018
