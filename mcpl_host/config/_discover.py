"""Where the MCP clients installed on this machine keep their config files.

Found through the environment only (``HOME``, ``USERPROFILE``, ``APPDATA``,
``XDG_CONFIG_HOME``), never a user database, so that a test can point ``HOME`` at a
temporary directory. Project files are looked for in the current directory.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

__all__ = ["KnownFile", "candidate_files", "discover"]


@dataclass(frozen=True, slots=True)
class KnownFile:
    """A config file a client reads: the client's name, its scope (``user`` or
    ``project``) and the path."""

    client: str
    scope: str
    path: str


def candidate_files(
    *,
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
    cwd: str | None = None,
) -> list[KnownFile]:
    """Every place the clients keep a config file on ``platform`` (default
    ``sys.platform``: ``linux``, ``darwin`` or ``win32``), present or not, in a fixed
    order: Claude Desktop, Claude Code, VS Code, Cursor, Windsurf, then the project
    files of ``cwd`` (default: the current directory). Raises nothing."""
    env = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    windows = platform.startswith("win")
    pure: type[PurePath] = PureWindowsPath if windows else PurePosixPath
    home = pure(env.get("USERPROFILE" if windows else "HOME") or str(Path.home()))
    if windows:
        appdata = pure(env.get("APPDATA") or str(home / "AppData" / "Roaming"))
    elif platform == "darwin":
        appdata = home / "Library" / "Application Support"
    else:
        appdata = pure(env.get("XDG_CONFIG_HOME") or str(home / ".config"))
    user = [
        KnownFile("Claude Desktop", "user", str(appdata / "Claude" / "claude_desktop_config.json")),
        KnownFile("Claude Code", "user", str(home / ".claude.json")),
        *(
            KnownFile(name, "user", str(appdata / folder / "User" / file))
            for name, folder in (("VS Code", "Code"), ("VS Code Insiders", "Code - Insiders"))
            for file in ("mcp.json", "settings.json")
        ),
        KnownFile("Cursor", "user", str(home / ".cursor" / "mcp.json")),
        KnownFile("Windsurf", "user", str(home / ".codeium" / "windsurf" / "mcp_config.json")),
    ]
    here = pure(cwd or os.getcwd())
    project = [
        KnownFile("Claude Code", "project", str(here / ".mcp.json")),
        KnownFile("VS Code", "project", str(here / ".vscode" / "mcp.json")),
        KnownFile("Cursor", "project", str(here / ".cursor" / "mcp.json")),
    ]
    return user + project


def discover(
    *, environ: Mapping[str, str] | None = None, cwd: str | None = None
) -> list[KnownFile]:
    """The :func:`candidate_files` of this machine that exist. A VS Code
    ``settings.json`` counts only when it has an ``mcp`` key (it is found by a plain
    text search: the file is read again, as JSON, when listed). Raises nothing."""
    found: list[KnownFile] = []
    for known in candidate_files(environ=environ, cwd=cwd):
        path = Path(known.path)
        try:
            if not path.is_file():
                continue
            if path.name == "settings.json" and b'"mcp"' not in path.read_bytes():
                continue
        except OSError:
            continue
        found.append(known)
    return found
