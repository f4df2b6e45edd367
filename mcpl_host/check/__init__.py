"""``mcpl-host check``: a server's wire conformance, rule by rule (docs/check.md).

:func:`check` runs the probes against one server and returns a :class:`Report`; each
probe module declares the rules it judges. The modules: :mod:`.rules` (rules, verdicts,
findings, the registry), :mod:`.wire` and :mod:`.httpwire` (one raw connection),
:mod:`.context` (what a probe works with), :mod:`.run` (running them), :mod:`.report`
(the result and its JSON); the probes by group: :mod:`.lifecycle` (and
:mod:`.lifecycle_stdio`), :mod:`.envelope`, :mod:`.batches` (both fence messages with
:mod:`.fence`), :mod:`.utilities`, :mod:`.logging_rules`, :mod:`.completion`,
:mod:`.content`, :mod:`.capabilities`, :mod:`.modern` (with :mod:`.modern_http`),
:mod:`.http` (with :mod:`.http_session`, :mod:`.http_stream`).
"""

from __future__ import annotations

# Each probe module registers its probes when imported.
from . import (  # noqa: F401
    batches,
    capabilities,
    completion,
    content,
    envelope,
    http,
    http_session,
    http_stream,
    lifecycle,
    lifecycle_stdio,
    logging_rules,
    modern,
    modern_http,
    utilities,
)
from .context import CheckOptions, Opener
from .report import SCHEMA, Report
from .rules import GROUPS, RULES, Finding, Line, Rule, Verdict
from .run import check, select

__all__ = [
    "GROUPS",
    "RULES",
    "SCHEMA",
    "CheckOptions",
    "Finding",
    "Line",
    "Opener",
    "Report",
    "Rule",
    "Verdict",
    "check",
    "select",
]
