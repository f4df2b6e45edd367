"""The layer rules in pyproject.toml (import-linter) hold, and they catch a wrong import:
the same contracts run on a copy of the package with one planted."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--no-cache", "--no-logo", "--config", str(project / "pyproject.toml")],
        cwd=project,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(project)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_tree_keeps_every_contract() -> None:
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "planted", "message"),
    [
        (
            "driver/rebind.py",
            "from ..client.types import ToolAnnotations",
            "mcpl_host.driver is not allowed to import mcpl_host.client",
        ),
        ("protocol/framing.py", "import trio", "mcpl_host.protocol is not allowed to import trio"),
        ("mcpl/grant.py", "from .. import _log", "not allowed to import mcpl_host._log"),
        (
            "transports/stdio.py",
            "from ..events import Closed",
            "mcpl_host.transports is not allowed to import mcpl_host.events",
        ),
        (
            "manager/naming.py",
            "from ..connection import Connection",
            "is not allowed to import mcpl_host.connection",
        ),
    ],
)
def test_a_planted_wrong_import_breaks_a_contract(
    tmp_path: Path, module: str, planted: str, message: str
) -> None:
    shutil.copytree(
        ROOT / "mcpl_host", tmp_path / "mcpl_host", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "mcpl_host" / module
    source = path.read_text()
    head = "from __future__ import annotations\n"
    assert head in source
    path.write_text(source.replace(head, f"{head}\n{planted}  # planted\n", 1))
    done = lint(tmp_path)
    assert done.returncode == 1, done.stdout
    assert message in done.stdout
