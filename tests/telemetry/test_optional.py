"""OpenTelemetry is optional: without the API nothing is imported and a connection works
as before; ``telemetry=False`` never loads it; asking for it without it is a typed error.
Each case in a fresh process (``sys.modules`` is global)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
{block}
import trio
import mcpl_host
from mcpl_host import Connection, StdioTarget, ConfigurationError
loaded = {{"import": sorted(m for m in sys.modules if m.startswith("opentelemetry"))}}
DEMO = StdioTarget.of([sys.executable, "-m", "mcpl_host.demo"])

async def main():
    async with Connection(DEMO, telemetry={option}) as conn:
        loaded["telemetry"] = conn.telemetry is not None
        assert (await conn.call_tool("echo", {{"text": "hi"}})).text == "hi"
    loaded["connection"] = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
    try:
        Connection(DEMO, telemetry=True)
        loaded["forced"] = "made"
    except ConfigurationError as exc:
        loaded["forced"] = str(exc)

trio.run(main)
print(json.dumps(loaded))
"""

# Makes ``import opentelemetry`` fail, as where the package is not installed.
ABSENT = """
class _Absent:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, _Absent())
"""


def run(block: str, option: str) -> dict[str, object]:
    source = PROBE.format(block=block, option=option)
    done = subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def test_without_the_api_nothing_is_imported_and_asking_for_it_says_what_to_install() -> None:
    loaded = run(ABSENT, "None")
    assert loaded["import"] == loaded["connection"] == []
    assert loaded["telemetry"] is False
    assert "pip install 'mcpl-host[otel]'" in str(loaded["forced"])


def test_importing_mcpl_host_loads_no_opentelemetry_and_off_means_never() -> None:
    loaded = run("", "False")
    assert loaded["import"] == loaded["connection"] == []
    assert loaded["telemetry"] is False
    assert loaded["forced"] == "made"


def test_with_the_api_installed_it_is_on_by_default() -> None:
    loaded = run("", "None")
    assert loaded["import"] == []
    assert loaded["telemetry"] is True
    assert "opentelemetry.trace" in loaded["connection"]  # type: ignore[operator]
