"""The stdio server's own code is plain synchronous Python: stdlib and msgspec only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mcpl_host


def test_stdio_server_imports_no_io_framework() -> None:
    package_dir = Path(mcpl_host.__file__).parent
    # Bare stand-ins for the packages, so that their __init__ (which import the trio
    # driver and runners) do not run: only what the server's modules import is loaded.
    code = (
        "import sys, types\n"
        "for name, path in [('mcpl_host', {top!r}), ('mcpl_host.testing', {sub!r})]:\n"
        "    pkg = types.ModuleType(name)\n"
        "    pkg.__path__ = [path]\n"
        "    sys.modules[name] = pkg\n"
        "import mcpl_host.testing.stdio_server\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('trio', 'anyio', 'asyncio', 'structlog', 'tenacity', 'pytest'))\n"
        "ours = sorted(m for m in sys.modules if m.startswith('mcpl_host.'))\n"
        "print(','.join(bad)); print(','.join(ours))\n"
    ).format(top=str(package_dir), sub=str(package_dir / "testing"))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    bad, ours = out.stdout.splitlines()
    assert bad == ""
    modules = ours.split(",")
    # The protocol core is pure by its own test; from the harness, only these:
    assert [m for m in modules if not m.startswith("mcpl_host.protocol")] == [
        "mcpl_host.testing",
        "mcpl_host.testing._journal",
        "mcpl_host.testing._player",
        "mcpl_host.testing._wire",
        "mcpl_host.testing.errors",
        "mcpl_host.testing.record",
        "mcpl_host.testing.stdio_server",
        "mcpl_host.testing.steps",
    ]
