"""Scripted MCP servers for testing hosts: one script, three ways to run it.

Write the server once as a :class:`Script` (plain data), run it in memory, as a
subprocess over stdio or on a loopback TCP socket with :func:`serve`, point a
``Connection`` at the runner's ``target``, then look at what the host sent in its
:class:`Record`. The pytest plugin (:mod:`mcpl_host.testing.plugin`) adds the
``mcp_script`` and ``scripted_server`` fixtures. See docs/testing.md.
"""

from __future__ import annotations

from .errors import ScriptFailed
from .memory import MemoryServer
from .modes import MODES, Mode, serve
from .record import Received, Record
from .runner import ScriptedServer, ServerTarget
from .script import AUTO, DEFAULT_TIMEOUT, Expected, Script
from .stdio import StdioServer
from .tcp import TcpServer

__all__ = [
    "AUTO",
    "DEFAULT_TIMEOUT",
    "MODES",
    "Expected",
    "MemoryServer",
    "Mode",
    "Received",
    "Record",
    "Script",
    "ScriptFailed",
    "ScriptedServer",
    "ServerTarget",
    "StdioServer",
    "TcpServer",
    "serve",
]
