"""The rows of issue 17's table: what each hostile server does, the measuring host's
parameters at the tests' small size and at the issue's full size, and the bounds the
figures must keep.

A row's bounds do not grow with its size where the issue asks for a bound that does
not (a host that holds at most a fixed number of owed answers costs the same memory
for 30k requests as for 150k): the small size is chosen so that a host without the
bound clearly breaks it, and the same bound then holds at the full size. Bounds that
the issue gives per byte received (a page, an array) scale with the size.

:func:`run` runs one row in a subprocess (``python -m tests.hostile.host``) and returns
its figures; a row's ``judge`` lists what broke its bounds (empty: it held).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]

# The host's own tasks (the connection's reader, writer, deadline heap, the transport's,
# the harness's) on top of the configured bounds.
TASK_SLACK = 32
# Log lines (info and above) a row may cost: the host's own few per connection, and
# for each kind of peer-caused line the first few in full and a count per interval.
LOG_LINES = 50
# How far past its own timeout a call may end (the harness's SLACK, probe.py).
SLACK = 2.0
# mcpl_host's defaults (Connection's max_server_requests) and the bounds the fixed host
# is given explicitly where it has the option (probe.supported).
SERVER_REQUESTS = 64
OWED_ANSWERS = 256
BATCH_ENTRIES = 1000
MB = 1024 * 1024

Figures = dict[str, Any]
Judge = Callable[[Figures], list[str]]


@dataclass(frozen=True)
class Row:
    name: str
    action: str  # what the measuring host does (tests/hostile/actions_*.py)
    does: str  # what the server does, as in the issue's table
    small: dict[str, Any]
    full: dict[str, Any]
    target: str  # the bounds, in short (B: the task bound, see _task_bound)
    judge: Judge
    main_call: str = "ping"  # the call whose outcome the table shows
    issue_target: bool = False  # one of the issue's five measured targets
    extra: tuple[str, ...] = field(default=())  # further figures worth a column


# -- checks ----------------------------------------------------------------------------


def _task_bound(f: Figures) -> int:
    # Handlers in flight and the answers owed: a host may keep a task for each.
    owed = f.get("options", {}).get("max_owed_answers", 0)
    return SERVER_REQUESTS + owed + TASK_SLACK


def tasks(f: Figures) -> list[str]:
    bound = _task_bound(f)
    return [] if f["tasks_peak"] <= bound else [f"{f['tasks_peak']} tasks at once > {bound}"]


def rss(f: Figures, mb: float) -> list[str]:
    grown = f["rss_peak_mb"]
    return [] if grown <= mb else [f"RSS grew {grown:g} MB > {mb:g} MB"]


def fds(f: Figures) -> list[str]:
    leaked = f["fds_leaked"]
    return [] if leaked <= 0 else [f"{leaked} file descriptors left open after closing"]


def logs(f: Figures, most: int = LOG_LINES) -> list[str]:
    out = []
    lines = f["logs"]["lines"]
    if lines > most:
        out.append(f"{lines} log lines > {most} (top: {f['logs']['top']})")
    if f["logs"]["tracebacks"]:
        out.append(f"{f['logs']['tracebacks']} log events with a traceback")
    return out


def typed(f: Figures, call: str) -> list[str]:
    """The call answered, or failed with an McplHostError, within its timeout + SLACK."""
    record = f["calls"].get(call)
    if record is None:
        return [f"{call}: never made (see {f['calls']})"]
    if record["outcome"] == "hung":
        return [
            f"{call}: still waiting {record['seconds']:g} s after a {record['timeout']:g} s timeout"
        ]
    if not record["typed"]:
        return [f"{call}: ended {record['outcome']}, neither an answer nor an McplHostError"]
    if record["seconds"] > record["timeout"] + SLACK:
        return [f"{call}: took {record['seconds']:g} s on a {record['timeout']:g} s timeout"]
    return []


def answered(f: Figures, call: str) -> list[str]:
    record = f["calls"].get(call, {"outcome": "never made"})
    if record["outcome"] == "answered":
        return []
    return [f"{call}: {record['outcome']} ({record.get('error', '')}), not answered"]


def settled(f: Figures, call: str) -> list[str]:
    """Answered, or failed with a typed error other than its own timeout: the answer
    that came settled it at once."""
    out = typed(f, call)
    if not out and f["calls"][call]["outcome"] == "RequestTimeout":
        out.append(f"{call}: waited out its {f['calls'][call]['timeout']:g} s timeout")
    return out


def connected(f: Figures) -> list[str]:
    return answered(f, "connect")


# -- the judges, row by row -----------------------------------------------------------


def deaf_flood(f: Figures) -> list[str]:
    return [
        *connected(f),
        *tasks(f),
        *rss(f, 32),
        *logs(f),
        *fds(f),
        *typed(f, "ping"),
    ]


def preinit(f: Figures) -> list[str]:
    return [*tasks(f), *rss(f, 32), *logs(f), *fds(f), *typed(f, "connect")]


def batch(f: Figures) -> list[str]:
    return [*connected(f), *tasks(f), *rss(f, 64), *logs(f), *fds(f), *answered(f, "ping")]


def array_refused(f: Figures) -> list[str]:
    limit = 8 * f["array_bytes"] / MB
    return [*connected(f), *rss(f, limit), *logs(f), *fds(f), *answered(f, "ping")]


def big_page_cli(f: Figures) -> list[str]:
    out = typed(f, "cli connect")
    cli = f["cli"]
    if not cli["json"]:
        out.append("the CLI printed no JSON report")
    limit = 8 * f["params"]["bytes"] / MB
    if f["cli_rss_growth_mb"] > limit:
        out.append(
            f"the CLI's RSS grew {f['cli_rss_growth_mb']:g} MB > 8 x the page ({limit:g} MB)"
        )
    return out


def big_pages_manager(f: Figures) -> list[str]:
    received = f["params"]["bytes"] * f["params"]["pages"]
    return [*typed(f, "list_tools"), *rss(f, 8 * received / MB), *logs(f), *fds(f)]


def http_timeouts(f: Figures) -> list[str]:
    # No bound on log lines here: each timeout is the host's own, raised to its caller.
    out = [*connected(f), *answered(f, "ping"), *fds(f)]
    count = f["params"]["count"]
    if f.get("timed_out") != {"RequestTimeout": count}:
        out.append(f"the {count} requests ended {f.get('timed_out')}, not all RequestTimeout")
    held = f.get("fds_held_open", 0)
    if held > 4:  # a few idle keep-alive connections at most
        out.append(f"{held} file descriptors held open after {count} requests timed out")
    return out


def http_headers(f: Figures) -> list[str]:
    out = [*connected(f), *typed(f, "tools/call"), *fds(f)]
    record = f["calls"].get("tools/call")
    if record is not None and record["seconds"] > record["target_timeout"] + SLACK:
        out.append(
            f"waited {record['seconds']:g} s for headers; HttpTarget(timeout="
            f"{record['target_timeout']:g}) should bound that"
        )
    return out


def http_retry0(f: Figures) -> list[str]:
    out = [*connected(f), *answered(f, "ping"), *logs(f), *fds(f)]
    if f.get("gets_per_second", 0) > 5:
        out.append(f"the GET stream was reopened {f['gets_per_second']:g} times a second")
    return out


def http_big_event(f: Figures) -> list[str]:
    out = [*connected(f), *settled(f, "tools/call"), *fds(f)]
    if f.get("log_lines_for_event", 0) < 1:
        out.append("no log line said the event was dropped")
    return out


def http_session_id(f: Figures) -> list[str]:
    return [*typed(f, "connect"), *typed(f, "cli connect --json"), *fds(f)]


def deaf_notify(f: Figures) -> list[str]:
    return [*typed(f, "notify"), *typed(f, "set_roots"), *fds(f)]


def bad_numbers(f: Figures) -> list[str]:
    out = [*connected(f), *logs(f), *answered(f, "ping")]
    errors = f["logs"]["levels"].get("error", 0)
    if errors:
        out.append(f"{errors} ERROR log events")
    return out


def bad_utf8(f: Figures) -> list[str]:
    out = [*connected(f), *logs(f), *answered(f, "ping")]
    errors = f["logs"]["levels"].get("error", 0)
    if errors:
        out.append(f"{errors} ERROR log events")
    got = f.get("batch_answered", [])
    if not ({"v1", "v2"} <= set(got) and len(got) == 3):
        out.append(f"the batch's answer held {got}, not its three entries (v1, v2, and one -32600)")
    return out


def surrogate(f: Figures) -> list[str]:
    return [*connected(f), *settled(f, "tools/call"), *logs(f)]


def unmatched(f: Figures) -> list[str]:
    return [*connected(f), *tasks(f), *logs(f), *answered(f, "ping"), *fds(f)]


def wrong_shapes(f: Figures) -> list[str]:
    out = []
    for name in ("cli connect", "cli tool", "cli resource", "cli prompt"):
        record = f["calls"][name]
        if not record["typed"]:
            out.append(f"{name}: {record['outcome']}, {record['stdout_lines']} lines of report")
    return out


# -- the table ------------------------------------------------------------------------

_OWED = {"max_owed_answers": OWED_ANSWERS}
_FLOOD = {"timeout": 1, "limit": 30, "max_owed_answers": OWED_ANSWERS}
_BATCH = {"max_batch_entries": BATCH_ENTRIES, "max_owed_answers": OWED_ANSWERS}

ROWS: dict[str, Row] = {
    row.name: row
    for row in [
        Row(
            "deaf-flood-roots",
            "deaf-flood",
            "deaf server floods roots/list requests",
            {**_FLOOD, "kind": "roots", "count": 25_000},
            {**_FLOOD, "kind": "roots", "count": 150_000, "limit": 120},
            "RSS+32MB tasks<=B logs<=50 ping typed",
            deaf_flood,
            issue_target=True,
        ),
        Row(
            "deaf-flood-ping",
            "deaf-flood",
            "deaf server floods pings",
            {**_FLOOD, "kind": "ping", "count": 25_000},
            {**_FLOOD, "kind": "ping", "count": 150_000, "limit": 120},
            "RSS+32MB tasks<=B logs<=50 ping typed",
            deaf_flood,
        ),
        Row(
            "deaf-flood-null",
            "deaf-flood",
            "deaf server floods id:null requests",
            {**_FLOOD, "kind": "null", "count": 25_000},
            {**_FLOOD, "kind": "null", "count": 150_000, "limit": 120},
            "RSS+32MB tasks<=B logs<=50 ping typed",
            deaf_flood,
        ),
        Row(
            "deaf-flood-ws",
            "deaf-flood",
            "deaf WebSocket server floods roots/list",
            {**_FLOOD, "transport": "ws", "roots": 50, "count": 15_000},
            {**_FLOOD, "transport": "ws", "roots": 50, "count": 150_000, "limit": 120},
            "RSS+32MB tasks<=B logs<=50 ping typed",
            deaf_flood,
        ),
        Row(
            "preinit-pings",
            "preinit-pings",
            "pings before answering initialize, deaf",
            {"count": 30_000, "timeout": 2, "max_owed_answers": OWED_ANSWERS},
            {"count": 100_000, "timeout": 10, "max_owed_answers": OWED_ANSWERS},
            "RSS+32MB tasks<=B connect typed",
            preinit,
            main_call="connect",
            issue_target=True,
        ),
        Row(
            "batch-invalid",
            "batch",
            "2024-11-05, one batch of invalid entries",
            {
                **_BATCH,
                "kind": "invalid",
                "entries": 200_000,
                "version": "2024-11-05",
                "timeout": 10,
            },
            {
                **_BATCH,
                "kind": "invalid",
                "entries": 1_000_000,
                "version": "2024-11-05",
                "timeout": 60,
            },
            "RSS+64MB logs<=50 ping answered",
            batch,
            issue_target=True,
            extra=("array_bytes", "bytes_answered"),
        ),
        Row(
            "batch-pings",
            "batch",
            "2024-11-05, one batch of pings",
            {**_BATCH, "kind": "ping", "entries": 60_000, "version": "2024-11-05", "timeout": 10},
            {**_BATCH, "kind": "ping", "entries": 300_000, "version": "2024-11-05", "timeout": 60},
            "RSS+64MB tasks<=B logs<=50",
            batch,
            extra=("array_bytes", "bytes_answered"),
        ),
        Row(
            "array-refused",
            "batch",
            "an array under 2025-11-25 (no batches)",
            {**_BATCH, "kind": "invalid", "bytes": 3 * MB, "version": "2025-11-25", "timeout": 10},
            {**_BATCH, "kind": "invalid", "bytes": 10 * MB, "version": "2025-11-25", "timeout": 60},
            "RSS<=8x array, ping answered",
            array_refused,
        ),
        Row(
            "big-page-cli",
            "big-page-cli",
            "one huge tools/list page, connect --json",
            {"bytes": 3 * MB, "timeout": 20},
            {"bytes": 15 * MB, "timeout": 60},
            "CLI RSS<=8x page, JSON report",
            big_page_cli,
            main_call="cli connect",
            issue_target=True,
            extra=("cli_rss_growth_mb",),
        ),
        Row(
            "big-pages-manager",
            "big-pages-manager",
            "3 huge pages, ConnectionManager.list_tools",
            {"bytes": 2 * MB, "pages": 3, "timeout": 20},
            {"bytes": 15 * MB, "pages": 3, "timeout": 60},
            "RSS<=8x bytes, typed outcome",
            big_pages_manager,
            main_call="list_tools",
        ),
        Row(
            "http-timeouts",
            "http-timeouts",
            "HTTP: requests never answered, timed out",
            {"count": 100, "timeout": 0.5, "target_timeout": 1, "ping_timeout": 3},
            {"count": 100, "timeout": 0.5, "target_timeout": 1, "ping_timeout": 3},
            "0 fds leaked, next call answered",
            http_timeouts,
            issue_target=True,
            extra=("fds_held_open", "server_holding", "timed_out"),
        ),
        Row(
            "http-headers",
            "http-headers",
            "HTTP: response headers never sent",
            {"target_timeout": 0.5, "timeout": 5},
            {"target_timeout": 3, "timeout": 10},
            "fails within HttpTarget.timeout",
            http_headers,
            main_call="tools/call",
        ),
        Row(
            "http-retry0",
            "http-retry0",
            "HTTP: GET stream ends at once, retry: 0",
            {"window": 2, "timeout": 3},
            {"window": 5, "timeout": 3},
            "<= 5 GETs a second",
            http_retry0,
            extra=("gets_in_window", "gets_per_second"),
        ),
        Row(
            "deaf-notify",
            "deaf-notify",
            "notify()/set_roots() to a deaf server",
            {"pad": MB, "timeout": 1},
            {"pad": MB, "timeout": 1},
            "RequestTimeout in time",
            deaf_notify,
            main_call="set_roots",
        ),
        Row(
            "bad-numbers",
            "bad-numbers",
            "5,000-digit ids, nesting 2,000 deep",
            {"count": 100, "timeout": 5},
            {"count": 10_000, "timeout": 30},
            "no ERROR, logs<=50",
            bad_numbers,
        ),
        Row(
            "bad-utf8-2024",
            "bad-utf8",
            "invalid UTF-8 in a batch entry (2024-11-05)",
            {"version": "2024-11-05", "timeout": 5},
            {"version": "2024-11-05", "timeout": 5},
            "valid entries answered, no ERROR",
            bad_utf8,
        ),
        Row(
            "bad-utf8-2025",
            "bad-utf8",
            "invalid UTF-8 in a batch entry (2025-03-26)",
            {"version": "2025-03-26", "timeout": 5},
            {"version": "2025-03-26", "timeout": 5},
            "valid entries answered, no ERROR",
            bad_utf8,
        ),
        Row(
            "surrogate",
            "surrogate",
            "a lone surrogate in a result",
            {"timeout": 3},
            {"timeout": 10},
            "settled at once, not by timeout",
            surrogate,
            main_call="tools/call",
        ),
        Row(
            "http-big-event",
            "http-big-event",
            "HTTP: one SSE event past the size bound",
            {"bytes": 2 * MB, "max_message_bytes": MB, "timeout": 3},
            {"bytes": 50 * MB, "timeout": 10},
            "fails at once, typed, logged",
            http_big_event,
            main_call="tools/call",
        ),
        Row(
            "http-session-id",
            "http-session-id",
            "HTTP: a non-ASCII Mcp-Session-Id",
            {"timeout": 5},
            {"timeout": 5},
            "typed error; CLI prints JSON",
            http_session_id,
            main_call="connect",
        ),
        Row(
            "unmatched-responses",
            "unmatched",
            "many unmatched responses",
            {**_OWED, "kind": "responses", "count": 20_000, "timeout": 10},
            {**_OWED, "kind": "responses", "count": 100_000, "timeout": 30},
            "logs<=50",
            unmatched,
        ),
        Row(
            "unmatched-busy",
            "unmatched",
            "pings past max_server_requests (busy)",
            {**_OWED, "kind": "busy", "count": 20_000, "timeout": 10},
            {**_OWED, "kind": "busy", "count": 100_000, "timeout": 30},
            "logs<=50 tasks<=B",
            unmatched,
        ),
        Row(
            "wrong-shapes",
            "wrong-shapes",
            "results shaped wrong, CLI readable output",
            {"timeout": 20},
            {"timeout": 20},
            "a report, no traceback",
            wrong_shapes,
            main_call="cli tool",
        ),
    ]
}


def run(
    row: Row, size: str = "small", *, params: dict[str, Any] | None = None, timeout: float = 600
) -> Figures:
    """Run ``row`` at ``size`` (``small`` or ``full``; ``params`` replace some of that
    size's) in a measuring host of its own.

    Raises RuntimeError, with the host's stderr, when it printed no figures or ran
    past ``timeout`` seconds."""
    params = {**(row.small if size == "small" else row.full), **(params or {})}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tests.hostile.host", row.action, json.dumps(params)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        # Killed; its servers go too (each ends when its stdin pipe closes).
        raise RuntimeError(f"the measuring host ran past {timeout:g} s: {exc.stderr!r}") from None
    try:
        figures: Figures = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise RuntimeError(
            f"the measuring host printed no figures (exit {done.returncode}):\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        ) from None
    return figures
