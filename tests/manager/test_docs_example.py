"""docs/manager.md's example runs as written and prints what the page says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "manager.md"


def test_manager_example_runs_as_written(tmp_path: Path) -> None:
    text = DOC.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    expected = re.search(r"It prints:\n\n```\n(.*?)```", text, re.S)
    assert blocks
    assert expected
    script = tmp_path / "example.py"
    script.write_text(blocks[0])
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=tmp_path,
    )
    assert out.stdout == expected.group(1)
    assert "server state" in out.stderr  # the manager's log lines went to stderr
