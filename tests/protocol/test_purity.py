"""The pure cores (the protocol and MCPL packages) never import trio, nor any I/O
framework, nor the driver."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import mcpl_host
import mcpl_host.mcpl
import mcpl_host.protocol

PURE = ("mcpl_host.protocol", "mcpl_host.mcpl")


@pytest.mark.parametrize(("package", "at_least"), [(mcpl_host.protocol, 7), (mcpl_host.mcpl, 6)])
def test_pure_package_never_imports_trio(package: object, at_least: int) -> None:
    prefix = package.__name__  # type: ignore[attr-defined]
    modules = [f"{prefix}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]  # type: ignore[attr-defined]
    assert len(modules) >= at_least
    package_dir = str(Path(mcpl_host.__file__).parent)
    # A bare stand-in for the top package, so that its __init__ (which imports the trio
    # driver) does not run: only what the pure modules import themselves is loaded.
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
        f"and not m.startswith({PURE!r}))\n"
        "print(','.join(bad + ours))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""
