"""The tables ``bench/run.py`` prints: medians of the runs per client, ratios against the
other clients, the spread of the noisy columns, and the targets of issue 20 (and issue
24's cost of the no-op tracer) checked as ratios of those medians."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Final

Runs = dict[str, list[dict[str, float]]]  # client -> one dict of figures per run

# key, label, scale, which way is better
COLUMNS: Final = (
    ("import_s", "import ms", 1000, "lower"),
    ("handshake_s", "handshake ms", 1000, "lower"),
    ("sequential_per_s", "sequential/s", 1, "higher"),
    ("inflight_per_s", "64 in flight/s", 1, "higher"),
    ("cpu_s_per_1k", "CPU s/1k seq calls", 1, "lower"),
    ("small_rss_mib", "RSS after small calls MiB", 1, "lower"),
    ("big_per_s", "1 MiB echo/s", 1, "higher"),
    ("peak_rss_mib", "peak RSS MiB", 1, "lower"),
)
SPREAD: Final = ("sequential_per_s", "inflight_per_s", "cpu_s_per_1k")

LABELS: Final = {
    "mcpl_host": "mcpl_host (trio)",
    "mcpl_host-notel": "mcpl_host (trio), telemetry=False",
    "mcpl_host-asyncio": "mcpl_host.aio (asyncio)",
    "mcpl_host-sync": "mcpl_host.sync (threads)",
    "mcpl_host-manager": "ConnectionManager (trio)",
    "python-sdk": "python-sdk (mcp 2.3.0)",
    "typescript-sdk": "typescript-sdk",
    "floor-asyncio": "raw asyncio protocol + msgspec",
}
FLOOR_LABELS: Final = {
    "stdio": "raw blocking pipes (floor)",
    "http": "raw blocking sockets (floor)",
}
BYTES_PER_MB: Final = 1_000_000


def label(client: str, transport: str) -> str:
    return FLOOR_LABELS[transport] if client == "floor" else LABELS.get(client, client)


def median(results: Runs, client: str, key: str) -> float:
    return statistics.median(run[key] for run in results[client])


def _cell(key: str, value: float) -> str:
    return f"{value:,.0f}" if key.endswith("per_s") or value >= 100 else f"{value:.3g}"


def table(results: Runs, transport: str) -> list[str]:
    """The medians, then the trio face against each other client that ran."""
    rows = ["| client | " + " | ".join(text for _, text, _, _ in COLUMNS) + " |"]
    rows.append("|---" * (len(COLUMNS) + 1) + "|")
    for client in results:
        cells = [_cell(key, median(results, client, key) * scale) for key, _, scale, _ in COLUMNS]
        rows.append(f"| {label(client, transport)} | " + " | ".join(cells) + " |")
    if "mcpl_host" not in results:
        return rows
    for other in ("python-sdk", "typescript-sdk", "floor"):
        if other not in results:
            continue
        # Ratios read "mcpl_host is N times better" whatever the direction of the column.
        ratios = []
        for key, _, _, better in COLUMNS:
            ours, theirs = median(results, "mcpl_host", key), median(results, other, key)
            ratio = ours / theirs if better == "higher" else theirs / ours
            # The floor imports nothing: no ratio to speak of.
            ratios.append("-" if key == "import_s" and other == "floor" else f"{ratio:.2f}x")
        rows.append(
            f"| mcpl_host (trio) vs {label(other, transport)} | " + " | ".join(ratios) + " |"
        )
    return rows


def spread(results: Runs, transport: str) -> list[str]:
    """The lowest and highest run of the columns the noise moves most."""
    names = {key: text for key, text, _, _ in COLUMNS}
    rows = ["| client (lowest–highest run) | " + " | ".join(names[key] for key in SPREAD) + " |"]
    rows.append("|---" * (len(SPREAD) + 1) + "|")
    for client, runs in results.items():
        cells = []
        for key in SPREAD:
            values = [run[key] for run in runs]
            cells.append(f"{_cell(key, min(values))}–{_cell(key, max(values))}")
        rows.append(f"| {label(client, transport)} | " + " | ".join(cells) + " |")
    return rows


@dataclass(frozen=True, slots=True)
class Target:
    """``ours``'s median of ``key`` over ``theirs``'s (or, without ``theirs``, the value
    itself), compared with ``bound`` by ``way`` ("<=" or ">=")."""

    transport: str
    what: str
    ours: str
    theirs: str | None
    key: str
    way: str
    bound: float


TARGETS: Final = (
    Target("stdio", "asyncio face CPU/seq call vs trio face's", "mcpl_host-asyncio", "mcpl_host", "cpu_s_per_1k", "<=", 1.25),
    Target("stdio", "asyncio face sequential vs python-sdk", "mcpl_host-asyncio", "python-sdk", "sequential_per_s", ">=", 3.0),
    Target("stdio", "asyncio face 64 in flight vs typescript-sdk", "mcpl_host-asyncio", "typescript-sdk", "inflight_per_s", ">=", 1.0),
    Target("stdio", "trio CPU/seq call vs typescript-sdk's", "mcpl_host", "typescript-sdk", "cpu_s_per_1k", "<=", 1.0),
    Target("stdio", "trio 64 in flight vs typescript-sdk", "mcpl_host", "typescript-sdk", "inflight_per_s", ">=", 1.5),
    Target("stdio", "sync face sequential vs python-sdk", "mcpl_host-sync", "python-sdk", "sequential_per_s", ">=", 2.0),
    Target("stdio", "manager CPU/seq call vs trio Connection's", "mcpl_host-manager", "mcpl_host", "cpu_s_per_1k", "<=", 1.10),
    Target("stdio", "trio RSS after the small calls", "mcpl_host", None, "small_rss_mib", "<=", 30.0),
    # Issue 24: with opentelemetry-api installed and no SDK, telemetry on by default costs
    # under 5% of a sequential call. Time: telemetry=False's calls/s over the default's.
    Target("stdio", "no-op tracer: time of a seq call, telemetry on (no SDK) / off", "mcpl_host-notel", "mcpl_host", "sequential_per_s", "<=", 1.05),
    Target("stdio", "no-op tracer: CPU of a seq call, telemetry on (no SDK) / off", "mcpl_host", "mcpl_host-notel", "cpu_s_per_1k", "<=", 1.05),
    Target("http", "trio sequential vs typescript-sdk", "mcpl_host", "typescript-sdk", "sequential_per_s", ">=", 1.0),
    Target("http", "trio 64 in flight vs typescript-sdk", "mcpl_host", "typescript-sdk", "inflight_per_s", ">=", 1.0),
)  # fmt: skip


def _check(target: Target, results: Runs) -> tuple[str, str]:
    """What was measured, and whether the target is met."""
    needed = [target.ours] + ([target.theirs] if target.theirs else [])
    if missing := [client for client in needed if client not in results]:
        return f"not run: {', '.join(missing)}", "-"
    ours = median(results, target.ours, target.key)
    if target.theirs is None:
        value = ours * 1024 * 1024 / BYTES_PER_MB  # MiB measured, MB asked
        shown = f"{value:.1f} MB ({ours:.1f} MiB)"
    else:
        theirs = median(results, target.theirs, target.key)
        value = ours / theirs
        shown = f"{_cell(target.key, ours)} vs {_cell(target.key, theirs)} = {value:.2f}x"
    met = value <= target.bound if target.way == "<=" else value >= target.bound
    return shown, "met" if met else "not met"


def targets(results: dict[str, Runs]) -> list[str]:
    """Every target whose transport ran, measured and judged."""
    rows = ["| transport | target | measured | wanted | verdict |", "|---|---|---|---|---|"]
    for target in TARGETS:
        if target.transport not in results:
            continue
        shown, verdict = _check(target, results[target.transport])
        unit = " MB" if target.theirs is None else "x"
        wanted = f"{target.way} {target.bound:g}{unit}"
        rows.append(f"| {target.transport} | {target.what} | {shown} | {wanted} | {verdict} |")
    return rows
