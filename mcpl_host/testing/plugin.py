"""pytest plugin: scripted MCP servers as fixtures.

Enabling it: installing mcpl_host registers it with pytest (the ``pytest11`` entry point
``mcpl_host``), so it is on in every test session of that environment. From a checkout
that is not installed, add ``pytest_plugins = ["mcpl_host.testing.plugin"]`` to the
top-level ``conftest.py`` or run ``pytest -p mcpl_host.testing.plugin``; to turn it
off, ``pytest -p no:mcpl_host``.

Fixtures:

- ``mcp_script``: a fresh :class:`~mcpl_host.testing.Script` (default 10 s timeout).
- ``scripted_server``: a factory; ``async with scripted_server(script, mode="memory")
  as server`` runs the script (``"memory"``, ``"stdio"`` or ``"tcp"``) and gives the
  runner (``server.target``, ``server.record``, ``await server.wait_done()``). The
  stdio mode keeps its files in the test's ``tmp_path``.

The runners are trio code: use them in async tests run by pytest-trio (``trio_mode =
true``, or ``@pytest.mark.trio``). The memory mode uses neither threads nor real time,
so it works under pytest-trio's ``autojump_clock`` fixture, where every script timeout
and ``wait()`` is instant.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Protocol

import pytest

from .modes import Mode, serve
from .runner import ScriptedServer
from .script import Script
from .steps import ScriptData

__all__ = ["ServerFactory", "mcp_script", "scripted_server"]


class ServerFactory(Protocol):
    """``scripted_server(script, mode="memory")``: a runner to enter with ``async with``."""

    def __call__(self, script: Script | ScriptData, mode: Mode = "memory") -> ScriptedServer: ...


@pytest.fixture
def mcp_script() -> Script:
    """A fresh, empty script."""
    return Script()


@pytest.fixture
def scripted_server(tmp_path: Path) -> ServerFactory:
    """A factory of scripted-server runners (each stdio one in its own directory)."""
    numbers = itertools.count(1)

    def factory(script: Script | ScriptData, mode: Mode = "memory") -> ScriptedServer:
        return serve(script, mode, workdir=tmp_path / f"scripted-server-{next(numbers)}")

    return factory
