"""The protocol core never imports trio (nor any I/O framework)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import mcpl_host.protocol


def test_protocol_package_never_imports_trio() -> None:
    modules = [
        f"mcpl_host.protocol.{m.name}" for m in pkgutil.iter_modules(mcpl_host.protocol.__path__)
    ]
    assert len(modules) >= 7
    code = (
        "import sys\n"
        f"for name in {modules!r}:\n"
        "    __import__(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('trio', 'anyio', 'asyncio', 'socket', 'subprocess', 'structlog'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""
