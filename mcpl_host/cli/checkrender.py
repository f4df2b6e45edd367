"""``mcpl-host check``'s readable report and its ``--list``.

The report: a header (target, server, the revision it answered, whether it speaks
2026-07-28), then each group's rules in order with a verdict tag (PASS green, FAIL red,
WARN yellow, N/A dim); a failure's or warning's detail and evidence lines under it (at
most :data:`EVIDENCE_LINES` unless ``-v``), a non-applicable rule's reason, and one
summary line. The findings' peer text was escaped, cut and redacted by the checker; it
is redacted once more with the command's redactor, and any control character left is
escaped, so nothing a server wrote can drive the terminal.
"""

from __future__ import annotations

import re
from typing import Any, Final

from ..check import GROUPS, RULES, SCHEMA, Finding, Report, Verdict
from ..protocol.redact import Redactor
from .render import Style

__all__ = ["EVIDENCE_LINES", "render_check", "render_rules", "rules_json", "style_for"]

EVIDENCE_LINES: Final = 12
_INDENT: Final = " " * 8
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_TAGS: Final = {
    Verdict.PASS: ("PASS", "good"),
    Verdict.FAIL: ("FAIL", "bad"),
    Verdict.WARN: ("WARN", "warn"),
    Verdict.NA: ("N/A ", "dim"),
}


def style_for(color: str) -> Style:
    """``--color``: ``always``, ``never``, or ``auto`` (a terminal without NO_COLOR)."""
    import sys  # noqa: PLC0415 - stdout as it is when the report is written

    if color == "auto":
        return Style.for_stream(sys.stdout)
    return Style(color == "always")


def _paint(style: Style, verdict: Verdict, text: str) -> str:
    tag, how = _TAGS[verdict]
    painted: str = getattr(style, how)(text or tag)
    return painted


def _safe(redactor: Redactor, text: str) -> str:
    # Already escaped by the checker; this is the last guard before the terminal.
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", redactor.redact(text))


def render_check(
    report: Report, redactor: Redactor, style: Style, *, show_passing: bool = False
) -> str:
    """The report as text. ``show_passing`` (``-v``): passing rules' detail and
    evidence too, and every evidence line. Raises nothing."""
    lines = _header(report, redactor, style)
    for group in GROUPS:
        findings = [f for f in report.findings if f.rule.group == group]
        if not findings:
            continue
        lines += ["", style.bold(group)]
        for finding in findings:
            lines += _finding(finding, redactor, style, show_passing)
    lines += ["", _summary(report, style)]
    return "\n".join(lines) + "\n"


def _header(report: Report, redactor: Redactor, style: Style) -> list[str]:
    server = report.server()
    name = " ".join(v for v in (server["name"], server["version"]) if v) or "(no serverInfo)"
    revision = server["revision"] or "(no initialize answered)"
    modern = "yes (server/discover answered)" if server["modern"] else "no"
    rows = [
        ("target", report.target or "(none)"),
        ("server", name),
        ("revision", revision),
        ("2026-07-28", modern),
    ]
    return [style.bold(f"{label:<11} ") + _safe(redactor, value) for label, value in rows]


def _finding(finding: Finding, redactor: Redactor, style: Style, show_passing: bool) -> list[str]:
    rule = finding.rule
    tag = _paint(style, finding.verdict, "")
    lines = [f"  {tag}  {rule.id}  {style.dim(rule.title)}"]
    verdict = finding.verdict
    if verdict is Verdict.PASS and not show_passing:
        return lines
    if finding.detail:
        lines.append(_INDENT + _safe(redactor, finding.detail))
    if verdict is Verdict.NA:
        return lines
    evidence = list(finding.evidence)
    if not show_passing and len(evidence) > EVIDENCE_LINES:
        hidden = len(evidence) - EVIDENCE_LINES
        evidence = evidence[-EVIDENCE_LINES:]
        lines.append(_INDENT + style.dim(f"… {hidden} earlier lines (-v shows them)"))
    lines += [f"{_INDENT}{line.direction} {_safe(redactor, line.text)}" for line in evidence]
    return lines


def _summary(report: Report, style: Style) -> str:
    counts = report.counts
    total = len(report.findings)
    parts = [
        f"{counts['pass']} passed",
        f"{counts['fail']} failed",
        f"{counts['warn']} {'warning' if counts['warn'] == 1 else 'warnings'}",
        f"{counts['n/a']} not applicable",
    ]
    line = f"{total} {'rule' if total == 1 else 'rules'}: {', '.join(parts)}"
    return style.bad(line) if counts["fail"] else style.bold(line)


def render_rules(style: Style) -> str:
    """``--list``: every rule by group: id, level, revision, title."""
    width = max((len(r) for r in RULES), default=0)
    lines: list[str] = []
    for group in GROUPS:
        rules = [r for r in RULES.values() if r.group == group]
        if not rules:
            continue
        if lines:
            lines.append("")
        lines.append(style.bold(group))
        for rule in rules:
            lines.append(
                f"  {rule.id:<{width}}  {rule.level:<6}  {rule.revision:<10}  {rule.title}"
            )
    return "\n".join(lines) + "\n"


def rules_json() -> dict[str, Any]:
    """``--list --json``: the rules as the report's ``rules`` entries have them, in the
    report's order (by group)."""
    return {
        "schema": SCHEMA,
        "rules": [
            {
                "id": r.id,
                "group": r.group,
                "title": r.title,
                "level": r.level,
                "revision": r.revision,
                "section": r.section,
            }
            for group in GROUPS
            for r in RULES.values()
            if r.group == group
        ],
    }
