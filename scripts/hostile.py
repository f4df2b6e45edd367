#!/usr/bin/env python3
"""Hostile servers: every row of issue 17's table at the issue's full size, each
against a measuring host of its own, and the figures as a table beside the targets.

Each row runs a hostile server from tests/hostile/servers (standard library only,
written as an attacker would) against ``python -m tests.hostile.host``, which opens
mcpl_host (Connection, ConnectionManager or the CLI), does the row's action, and
prints what it cost: RSS growth at the peak, live trio tasks at the peak, file
descriptors left open, log lines (info and above), and how the host's own call ended
(answered, a typed error, or hung past its timeout) and when. The PASS/FAIL column
applies the row's bounds (tests/hostile/rows.py); the five rows marked * carry the
issue's measured targets. The tests in tests/hostile run the same rows small.

Nothing is timed against a limit beyond "within the call's timeout". Exits 0 whatever
the verdicts, unless --strict (then 1 if any row failed).

    .venv/bin/python scripts/hostile.py
    .venv/bin/python scripts/hostile.py --row deaf-flood-roots --row batch-invalid
    .venv/bin/python scripts/hostile.py --size small   # the tests' sizes
    .venv/bin/python scripts/hostile.py --json run.json; ... --replay run.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# The rows and the measuring host live with the tests (tests/hostile); the script runs
# from anywhere, so the checkout's root goes on the path.
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hostile.rows import ROWS, Figures, Row, run  # noqa: E402

COLUMNS = (
    ("row", 21),
    ("RSS +MB", 7),
    ("tasks", 6),
    ("fds", 3),
    ("logs", 7),
    ("outcome", 44),
    ("time s", 6),
    ("target", 38),
    ("", 4),
)


def cells(row: Row, figures: Figures, failures: list[str]) -> list[str]:
    call = figures["calls"].get(row.main_call, {})
    outcome = f"{row.main_call}: {call.get('outcome', '-')}"
    if "seconds" in call:
        outcome += f" {call['seconds']:.1f}s"
    rss = figures["rss_peak_mb"]
    if "cli_rss_growth_mb" in figures:
        rss = figures["cli_rss_growth_mb"]  # the CLI's own, not the measuring host's
    fds = figures.get("fds_held_open", figures["fds_leaked"])
    return [
        ("* " if row.issue_target else "  ") + row.name,
        f"{rss:.1f}",
        str(figures["tasks_peak"]),
        str(fds),
        str(figures["logs"]["lines"]),
        outcome,
        f"{figures['seconds']:.1f}",
        row.target,
        "FAIL" if failures else "PASS",
    ]


def line(values: list[str]) -> str:
    return "  ".join(v[:w].ljust(w) for v, (_, w) in zip(values, COLUMNS, strict=True)).rstrip()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", choices=["full", "small"], default="full")
    parser.add_argument("--row", action="append", choices=sorted(ROWS), help="repeatable")
    parser.add_argument("--strict", action="store_true", help="exit 1 if any row fails")
    parser.add_argument("--json", metavar="FILE", help="also write every row's figures here")
    parser.add_argument(
        "--replay",
        metavar="FILE",
        help="print the table of figures a --json run saved; run nothing",
    )
    args = parser.parse_args()
    saved: dict[str, Figures] = json.loads(Path(args.replay).read_text()) if args.replay else {}
    names = args.row or (list(saved) if args.replay else list(ROWS))
    print(line([name for name, _ in COLUMNS]))
    print(line(["-" * w for _, w in COLUMNS]))
    everything: dict[str, object] = {}
    notes: list[str] = []
    extras: list[str] = []
    failed = 0
    started = time.monotonic()
    for name in names:
        row = ROWS[name]
        try:
            figures = saved[name] if args.replay else run(row, args.size)
        except (RuntimeError, KeyError) as exc:
            failed += 1
            print(line([row.name, "-", "-", "-", "-", "no figures", "-", row.target, "FAIL"]))
            notes.append(f"{row.name}: {exc}")
            continue
        failures = row.judge(figures)
        failed += bool(failures)
        print(line(cells(row, figures, failures)), flush=True)
        notes.extend(f"{row.name}: {failure}" for failure in failures)
        shown = ", ".join(f"{key} {figures.get(key)}" for key in row.extra)
        if shown:
            extras.append(f"{row.name}: {shown}")
        everything[name] = figures
    print(f"\n{len(names) - failed} of {len(names)} rows within their bounds", end="")
    if not args.replay:
        print(f" ({time.monotonic() - started:.0f} s)", end="")
    print(". * the issue's measured targets;")
    print("B: 64 (max_server_requests) + max_owed_answers where the host has it + 32.")
    print("RSS: growth at the peak (big-page-cli: the CLI process's own, over a one-tool page);")
    print("tasks: most live at once; fds: left open after closing (http-timeouts: while open,")
    print("after the timeouts); logs: lines at info and above.")
    if extras:
        print("\nMore figures:")
        for extra in extras:
            print(f"  {extra}")
    if notes:
        print("\nWhat broke a bound:")
        for note in notes:
            print(f"  {note[:400]}")
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1))
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
