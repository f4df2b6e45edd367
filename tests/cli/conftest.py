"""Every command-line test keeps its tokens in its own file, never the user's (the
command gives HTTP servers an OAuth over the token file; docs/cli.md), and never finds
a person at the terminal unless it says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpl_host.cli import auth


@pytest.fixture(autouse=True)
def _own_token_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state" / "auth.json"
    monkeypatch.setenv("MCPL_HOST_AUTH_FILE", str(path))
    monkeypatch.setattr(auth, "interactive", lambda: False)
    return path
