"""docs/cli.md's examples run as written (in a shell where .venv is active) and succeed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from .helpers import TIMEOUT

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
# What an example's output must hold, by a fragment of its command line.
EXPECTED = {
    "connect --demo": ["tools (8)", "countdown", "greet(name)"],
    "--versions 2025-03-26": ['"protocolVersion": "2025-03-26"'],
    "--tool add": ["\n42\n"],
    "--tool countdown": ["progress 1/3: 2 to go", "liftoff after 3 steps"],
    "--resource demo://readme": ["# mcpl-host demo server"],
    "--prompt greet": ["Please greet Ada."],
    "--all": ["== demo: ok", "== another-demo: ok", "2 servers: 2 ok, 0 failed"],
}


def test_every_example_runs_as_written(tmp_path: Path) -> None:
    text = DOC.read_text()
    commands = re.search(r"```sh\n(.*?)```", text, re.S)
    config = re.search(r"```json\n(.*?)```", text, re.S)
    assert commands
    assert config
    (tmp_path / "servers.json").write_text(config.group(1))
    lines = [line for line in commands.group(1).splitlines() if line.strip()]
    assert len(lines) >= 6
    assert all(line.startswith("mcpl-host ") for line in lines)
    assert all(any(fragment in line for line in lines) for fragment in EXPECTED)
    # As with an active .venv: its bin first on PATH (the console script, its python).
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # All at once: each waits mostly for a demo server to start.
    running = [
        subprocess.Popen(
            ["bash", "-c", line],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for line in lines
    ]
    # Every process is waited for before any assertion, so none is left running.
    results = [process.communicate(timeout=TIMEOUT) for process in running]
    outputs = [out + err for out, err in results]
    for line, process, (out, err) in zip(lines, running, results, strict=True):
        assert process.returncode == 0, (line, out, err)
        if "--json" in line:
            assert json.loads(out)["ok"] is True
        for fragment, expected in EXPECTED.items():
            if fragment in line:
                assert all(text in out + err for text in expected), (line, out, err)
    # The --all example's config has a token; it is shown nowhere.
    assert not any("not-a-real-token" in p for p in outputs)
