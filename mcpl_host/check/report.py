"""A check's result: the findings in rule order, a summary, and the stable JSON form.

The JSON schema (``"schema": "mcpl-host-check/1"``) is documented in docs/check.md; a
change that breaks a reader of it takes a new schema name.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

from ..protocol.discover import SERVER_INFO
from ..protocol.redact import Redactor
from .context import Facts
from .rules import Finding, Verdict

__all__ = ["SCHEMA", "Report"]

SCHEMA: Final = "mcpl-host-check/1"
_DIRECTIONS: Final = {"→": "sent", "←": "received", "·": "note"}


@dataclass(frozen=True, slots=True)
class Report:
    """``target`` describes the server (safe to show); ``facts`` is what the baseline
    found (None when no rule was selected); ``findings`` are in the rules' order;
    ``redactor`` masks the server's secrets in what the server says it is."""

    target: str
    facts: Facts | None
    findings: tuple[Finding, ...]
    redactor: Redactor = field(default_factory=Redactor)

    @property
    def counts(self) -> dict[str, int]:
        """How many findings have each verdict (every verdict present, 0 included)."""
        counted = Counter(f.verdict for f in self.findings)
        return {v.value: counted[v] for v in Verdict}

    @property
    def ok(self) -> bool:
        """True when no rule failed (warnings do not fail a check)."""
        return all(f.verdict is not Verdict.FAIL for f in self.findings)

    def server(self) -> dict[str, Any]:
        """What the server said it is: name, version, revisions."""
        facts = self.facts
        if facts is None:
            return {"name": None, "version": None, "revision": None, "modern": False}
        info: Any = (facts.initialize or {}).get("serverInfo")
        if not isinstance(info, dict) and facts.discover is not None:
            meta = facts.discover.get("_meta")
            info = meta.get(SERVER_INFO) if isinstance(meta, dict) else None
        info = info if isinstance(info, dict) else {}
        return {
            "name": self._text(info.get("name")),
            "version": self._text(info.get("version")),
            "revision": facts.version,
            "modern": facts.modern,
        }

    def to_json(self) -> dict[str, Any]:
        """The report as the ``--json`` object (docs/check.md)."""
        return {
            "schema": SCHEMA,
            "target": self.target,
            "server": self.server(),
            "ok": self.ok,
            "summary": self.counts,
            "rules": [
                {
                    "id": f.rule.id,
                    "group": f.rule.group,
                    "title": f.rule.title,
                    "level": f.rule.level,
                    "revision": f.rule.revision,
                    "section": f.rule.section,
                    "verdict": f.verdict.value,
                    "detail": f.detail,
                    "evidence": [
                        {"direction": _DIRECTIONS[line.direction], "text": line.text}
                        for line in f.evidence
                    ],
                }
                for f in self.findings
            ],
        }

    def _text(self, value: object) -> str | None:
        # Server-given names reach a terminal: masked, then escaped and cut (a secret cut
        # first could no longer be found whole), like every peer text.
        return self.redactor.log_value(value, 128) if isinstance(value, str) else None
