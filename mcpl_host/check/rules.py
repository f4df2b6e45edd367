"""What ``mcpl-host check`` judges: rules, verdicts and findings, and the probe registry.

A rule is one requirement of the MCP specification a server can break, named
``group.name`` (``envelope.string-id``), with the revision it comes from, the spec page
and section that states it, and whether it is a MUST (a break fails) or a SHOULD (a break
warns). A probe is one async function that talks to the server and judges one or more
rules; each rule is declared once, next to the probe that judges it (:func:`rule`), and
a probe module registers its probes with :func:`probe`. Findings carry the wire lines
that show the verdict, already escaped, cut and redacted.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "GROUPS",
    "PROBES",
    "RULES",
    "Finding",
    "Line",
    "Probe",
    "Rule",
    "Verdict",
    "probe",
    "rule",
]

# The groups, in the order the report shows them.
GROUPS: Final = ("lifecycle", "envelope", "batches", "utilities", "content", "modern", "http")


class Verdict(enum.Enum):
    """A rule's outcome: ``warn`` is a broken SHOULD, or a MUST the probe could not
    settle either way; ``n/a`` is a rule that does not apply to this server (a revision
    it does not speak, a capability it did not declare, another transport)."""

    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    NA = "n/a"


Level = Literal["MUST", "SHOULD"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One requirement. ``revision`` is the first revision that states it (``"all"``
    for JSON-RPC's own rules); ``section`` is the spec page and anchor, relative to
    ``https://modelcontextprotocol.io/specification/<revision>/``."""

    id: str
    title: str
    revision: str
    section: str
    level: Level = "MUST"

    @property
    def group(self) -> str:
        return self.id.split(".", 1)[0]


@dataclass(frozen=True, slots=True)
class Line:
    """One line of evidence: ``direction`` is ``"→"`` (sent), ``"←"`` (received) or
    ``"·"`` (what the checker saw otherwise: an HTTP status, an exit, silence)."""

    direction: str
    text: str


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule's verdict, why, and the wire lines that show it."""

    rule: Rule
    verdict: Verdict
    detail: str
    evidence: tuple[Line, ...] = ()


# Called with the run's Context (context.py, which imports this module).
ProbeFunction = Callable[[Any], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Probe:
    """A probe and the rules it judges; it must judge each of them once."""

    name: str
    rules: tuple[str, ...]
    run: ProbeFunction


RULES: Final[dict[str, Rule]] = {}
PROBES: Final[list[Probe]] = []


def rule(id_: str, title: str, *, revision: str, section: str, level: Level = "MUST") -> str:
    """Declare a rule; returns its id. Raises ValueError for a duplicate or an id
    outside the known groups (a programming error, caught by the test suite)."""
    group = id_.split(".", 1)[0]
    if group not in GROUPS or "." not in id_:
        raise ValueError(f"rule {id_!r} is not in a known group")
    if id_ in RULES:
        raise ValueError(f"rule {id_!r} is declared twice")
    RULES[id_] = Rule(id_, title, revision, section, level)
    return id_


def probe(*rules: str) -> Callable[[ProbeFunction], ProbeFunction]:
    """Register the decorated function as the probe judging ``rules``."""

    def register(function: ProbeFunction) -> ProbeFunction:
        unknown = [r for r in rules if r not in RULES]
        if unknown:
            raise ValueError(f"probe {function.__name__} judges undeclared rules {unknown}")
        PROBES.append(Probe(function.__name__, rules, function))
        return function

    return register
