#!/usr/bin/env python3
"""Check the real servers of the checker's proof and show, or write, docs/check.md's table.

    .venv/bin/python scripts/check_servers.py            # print the section
    .venv/bin/python scripts/check_servers.py --write    # replace it in docs/check.md

The servers are tests/check/real_servers.py's (npm ones installed by scripts/test). The
section lies between the markers below; tests/check/test_real_servers.py checks each
server again and fails when its failed or warned rules differ from the table's row.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcpl_host.check import Report, Verdict  # noqa: E402
from tests.check.real_servers import SERVERS, RealServer, run  # noqa: E402

DOC = ROOT / "docs" / "check.md"
BEGIN = "<!-- check-results: begin (scripts/check_servers.py --write) -->"
END = "<!-- check-results: end -->"
EVIDENCE_LINES = 6


def _ids(report: Report, verdict: Verdict) -> str:
    ids = [f"`{f.rule.id}`" for f in report.findings if f.verdict is verdict]
    return ", ".join(ids) or "none"


def section(reports: list[tuple[RealServer, Report]]) -> str:
    """The table, then each server's failed and warned rules with their evidence."""
    out = [
        BEGIN,
        "",
        "| Server | What | Transport | Answered | 2026-07-28 | Fails | Warns |",
        "|---|---|---|---|---|---|---|",
    ]
    for server, report in reports:
        info = report.server()
        modern = "yes" if info["modern"] else "no"
        out.append(
            f"| `{server.key}` | {server.what} | {server.transport} | {info['revision']} "
            f"| {modern} | {_ids(report, Verdict.FAIL)} | {_ids(report, Verdict.WARN)} |"
        )
    for server, report in reports:
        bad = [f for f in report.findings if f.verdict in (Verdict.FAIL, Verdict.WARN)]
        if not bad:
            continue
        out += ["", f"#### `{server.key}`", ""]
        for finding in bad:
            out.append(f"- `{finding.rule.id}` ({finding.verdict.value}): {finding.detail}")
            lines = finding.evidence[-EVIDENCE_LINES:]
            if lines:
                out += ["", "  ```text"]
                out += [f"  {line.direction} {line.text}" for line in lines]
                out += ["  ```", ""]
    out += ["", END]
    return "\n".join(out)


def main() -> None:
    reports: list[tuple[RealServer, Report]] = []

    async def all_of_them() -> None:
        for server in SERVERS:
            reports.append((server, await run(server)))
            print(f"checked {server.key}: {reports[-1][1].counts}", file=sys.stderr)

    trio.run(all_of_them)
    text = section(reports)
    if "--write" not in sys.argv[1:]:
        print(text)
        return
    doc = DOC.read_text()
    start, end = doc.index(BEGIN), doc.index(END) + len(END)
    DOC.write_text(doc[:start] + text + doc[end:])
    print(f"wrote {DOC.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
