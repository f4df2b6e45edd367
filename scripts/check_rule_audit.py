#!/usr/bin/env python3
"""Show that no rule of ``mcpl-host check`` is one that cannot fail (docs/check.md).

Runs tests/check (the real-server proof aside) recording every verdict given, then lists
each rule that never passed or never failed nor warned in them; exit status 1 if any.

    .venv/bin/python scripts/check_rule_audit.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcpl_host.check import RULES  # noqa: E402


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "verdicts"
        record.touch()
        env = {**os.environ, "MCPL_HOST_VERDICT_AUDIT": str(record)}
        command = [
            sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "tests.check.verdict_audit",
            "tests/check", "-k", "not real_server",
        ]  # fmt: skip
        subprocess.run(command, cwd=ROOT, env=env, check=False)
        seen: dict[str, set[str]] = defaultdict(set)
        for line in record.read_text().splitlines():
            rule_id, verdict = line.split(" ", 1)
            seen[rule_id].add(verdict)
    lacking = [
        (rule_id, sorted(seen[rule_id]))
        for rule_id in RULES
        if "pass" not in seen[rule_id] or not seen[rule_id] & {"fail", "warn"}
    ]
    for rule_id, verdicts in lacking:
        print(f"{rule_id}: only {', '.join(verdicts) or 'never judged'}")
    print(f"{len(RULES) - len(lacking)} of {len(RULES)} rules both pass and fail or warn in tests")
    return 1 if lacking else 0


if __name__ == "__main__":
    sys.exit(main())
