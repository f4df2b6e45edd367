"""``mcpl-host config list [--json] [FILE...]``: the config files of the MCP clients on
this machine (or those given) and their servers.

Each server is shown by name, type and target as :func:`describe` gives it (a program
and its argument count, a URL without query or user info), never an env value, a
header value or a token; a file that cannot be read or parsed is shown with its error
and the listing goes on. Nothing is connected and nobody is asked for an input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..config import ConfigFile, KnownFile, candidate_files, discover, read_config
from ..protocol.errors import ConfigurationError
from ..protocol.redact import Redactor
from ..transports.targets import describe
from .failure import CONFIG_ERROR, error_object
from .render import Style

__all__ = ["list_configs", "render_config_list"]


def list_configs(
    files: tuple[str, ...], environ: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], Redactor]:
    """The report of ``config list`` and a redactor holding every secret the files
    gave (for the report's writer). Raises nothing."""
    known = [KnownFile("", "given", path) for path in files] if files else discover(environ=environ)
    secrets: list[str] = []
    shown: list[dict[str, Any]] = []
    for found in known:
        entry: dict[str, Any] = {"client": found.client or None, "scope": found.scope}
        entry["path"] = found.path
        try:
            loaded = read_config(found.path, environ=environ)
        except ConfigurationError as exc:
            entry.update(ok=False, error=error_object(CONFIG_ERROR, exc.message))
            shown.append(entry)
            continue
        for config in loaded.servers.values():
            secrets += config.secrets
        entry.update(ok=True, format=loaded.format, servers=_servers(loaded))
        if loaded.warnings:
            entry["warnings"] = list(loaded.warnings)
        shown.append(entry)
    report: dict[str, Any] = {"ok": all(e["ok"] for e in shown), "files": shown}
    if not files:
        report["searched"] = [c.path for c in candidate_files(environ=environ)]
    failed = sum(1 for e in shown if not e["ok"])
    if failed:
        report["error"] = error_object(
            CONFIG_ERROR, f"{failed} config file{'s' if failed > 1 else ''} could not be read"
        )
    return report, Redactor(secrets)


def _servers(loaded: ConfigFile) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "type": config.kind,
            "target": None if config.target is None else describe(config.target),
            "disabled": config.disabled,
            "problem": config.problem,
        }
        for name, config in loaded.servers.items()
    ]


def render_config_list(report: dict[str, Any], redactor: Redactor, style: Style) -> str:
    """The readable listing: a heading per file, a line per server. Names and targets
    are never cut; everything is escaped and redacted."""

    def safe(value: Any) -> str:
        return redactor.log_value(str(value), 1000)

    lines: list[str] = []
    files = report.get("files", [])
    if not files:
        lines.append("no MCP client config files found; looked for:")
        lines += [f"  {safe(path)}" for path in report.get("searched", [])]
        return "\n".join(lines) + "\n"
    for entry in files:
        client = f"{entry['client']} ({entry['scope']})  " if entry.get("client") else ""
        fmt = f"  [{safe(entry['format'])}]" if entry.get("format") else ""
        lines.append(style.bold(f"{safe(client)}{safe(entry['path'])}") + style.dim(fmt))
        if not entry["ok"]:
            lines.append("  " + style.bad(f"error: {safe(entry['error']['message'])}"))
            lines.append("")
            continue
        rows = [
            (safe(s["name"]), safe(s["type"] or "?"), _state(s, safe)) for s in entry["servers"]
        ]
        if not rows:
            lines.append(style.dim("  (no servers)"))
        name_width = max((len(r[0]) for r in rows), default=0)
        type_width = max((len(r[1]) for r in rows), default=0)
        for name, kind, state in rows:
            lines.append(f"  {name:<{name_width}}  {kind:<{type_width}}  {state}".rstrip())
        lines += [f"  {style.dim('warning: ' + safe(w))}" for w in entry.get("warnings", [])]
        lines.append("")
    return "\n".join(lines)


def _state(server: dict[str, Any], safe: Any) -> str:
    target = safe(server["target"]) if server["target"] else "-"
    if server["problem"]:
        target += f"  problem: {safe(server['problem'])}"
    if server["disabled"]:
        target += "  (disabled)"
    return target
