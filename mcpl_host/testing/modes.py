"""``serve(script, mode)``: one entry point to the three runners."""

from __future__ import annotations

import os
from typing import Final, Literal, TypeAlias

from .memory import MemoryServer
from .runner import ScriptedServer
from .script import Script
from .stdio import StdioServer
from .steps import ScriptData
from .tcp import TcpServer

__all__ = ["MODES", "Mode", "serve"]

Mode: TypeAlias = Literal["memory", "stdio", "tcp"]
MODES: Final[tuple[Mode, ...]] = ("memory", "stdio", "tcp")
"""Every mode, for ``pytest.mark.parametrize("mode", MODES)``."""


def serve(
    script: Script | ScriptData,
    mode: Mode = "memory",
    *,
    workdir: str | os.PathLike[str] | None = None,
) -> ScriptedServer:
    """A runner for ``script`` in ``mode``, to enter with ``async with``.

    ``workdir`` is where the stdio mode keeps its files (ignored by the others).
    Raises ``ValueError`` for an unknown mode.
    """
    if mode == "memory":
        return MemoryServer(script)
    if mode == "tcp":
        return TcpServer(script)
    if mode == "stdio":
        return StdioServer(script, workdir=workdir)
    raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
