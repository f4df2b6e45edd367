"""The MCPL core never imports trio (nor any I/O framework), like the protocol core."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import mcpl_host
import mcpl_host.mcpl


def test_mcpl_package_never_imports_trio() -> None:
    modules = [f"mcpl_host.mcpl.{m.name}" for m in pkgutil.iter_modules(mcpl_host.mcpl.__path__)]
    assert len(modules) >= 6
    package_dir = str(Path(mcpl_host.__file__).parent)
    # A bare stand-in for the top package, so that its __init__ (which imports the trio
    # driver) does not run: only what the MCPL modules import themselves is loaded.
    code = (
        "import sys, types\n"
        "pkg = types.ModuleType('mcpl_host')\n"
        f"pkg.__path__ = [{package_dir!r}]\n"
        "sys.modules['mcpl_host'] = pkg\n"
        f"for name in {modules!r}:\n"
        "    __import__(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('trio', 'anyio', 'asyncio', 'socket', 'subprocess', 'structlog', 'tenacity'))\n"
        "ours = sorted(m for m in sys.modules if m.startswith('mcpl_host.') "
        "and not m.startswith(('mcpl_host.protocol', 'mcpl_host.mcpl')))\n"
        "print(','.join(bad + ours))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""
