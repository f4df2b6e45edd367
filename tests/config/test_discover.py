"""Where each client keeps its config file, on each platform, found through the
environment only."""

from __future__ import annotations

from pathlib import Path

from mcpl_host.config import candidate_files, discover


def test_linux_locations_follow_home_and_xdg() -> None:
    files = candidate_files(
        environ={"HOME": "/home/ada", "XDG_CONFIG_HOME": "/cfg"}, platform="linux", cwd="/proj"
    )
    assert [(f.client, f.scope, f.path) for f in files] == [
        ("Claude Desktop", "user", "/cfg/Claude/claude_desktop_config.json"),
        ("Claude Code", "user", "/home/ada/.claude.json"),
        ("VS Code", "user", "/cfg/Code/User/mcp.json"),
        ("VS Code", "user", "/cfg/Code/User/settings.json"),
        ("VS Code Insiders", "user", "/cfg/Code - Insiders/User/mcp.json"),
        ("VS Code Insiders", "user", "/cfg/Code - Insiders/User/settings.json"),
        ("Cursor", "user", "/home/ada/.cursor/mcp.json"),
        ("Windsurf", "user", "/home/ada/.codeium/windsurf/mcp_config.json"),
        ("Claude Code", "project", "/proj/.mcp.json"),
        ("VS Code", "project", "/proj/.vscode/mcp.json"),
        ("Cursor", "project", "/proj/.cursor/mcp.json"),
    ]
    default = candidate_files(environ={"HOME": "/home/ada"}, platform="linux", cwd="/p")
    assert default[0].path == "/home/ada/.config/Claude/claude_desktop_config.json"


def test_macos_and_windows_locations() -> None:
    mac = {f.path for f in candidate_files(environ={"HOME": "/Users/ada"}, platform="darwin")}
    assert "/Users/ada/Library/Application Support/Claude/claude_desktop_config.json" in mac
    assert "/Users/ada/Library/Application Support/Code/User/mcp.json" in mac
    windows = candidate_files(
        environ={"USERPROFILE": "C:\\Users\\ada", "APPDATA": "C:\\Users\\ada\\AppData\\Roaming"},
        platform="win32",
        cwd="C:\\proj",
    )
    paths = [f.path for f in windows]
    assert paths[0] == "C:\\Users\\ada\\AppData\\Roaming\\Claude\\claude_desktop_config.json"
    assert "C:\\Users\\ada\\.cursor\\mcp.json" in paths
    assert "C:\\Users\\ada\\.codeium\\windsurf\\mcp_config.json" in paths
    assert paths[-1] == "C:\\proj\\.cursor\\mcp.json"


def test_discover_lists_the_files_present(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    (home / ".cursor").mkdir(parents=True)
    (home / ".cursor" / "mcp.json").write_text("{}")
    settings = home / ".config" / "Code" / "User"
    settings.mkdir(parents=True)
    (settings / "settings.json").write_text('{"editor.fontSize": 12}')  # no mcp: not listed
    (project / ".vscode").mkdir(parents=True)
    (project / ".vscode" / "mcp.json").write_text("{}")
    found = discover(environ={"HOME": str(home)}, cwd=str(project))
    assert [(f.client, f.scope) for f in found] == [("Cursor", "user"), ("VS Code", "project")]
