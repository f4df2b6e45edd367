"""The pages whose example is a script: it runs as written and prints what the page says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize(
    ("page", "on_stderr"),
    [
        ("connection.md", "connected"),  # the info line went to stderr, as configured
        ("manager.md", "server state"),  # the manager's log lines went to stderr
        ("client.md", "server log"),  # the server's notifications/message, logged
        # structlog unconfigured, nothing worth a warning: stderr stays empty (the timed-out
        # countdown's cancellation included)
        ("embedding.md", None),
    ],
)
def test_example_runs_as_written(tmp_path: Path, page: str, on_stderr: str | None) -> None:
    text = (DOCS / page).read_text()
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
    if on_stderr is None:
        assert out.stderr == ""
    else:
        assert on_stderr in out.stderr
