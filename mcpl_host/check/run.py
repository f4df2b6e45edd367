"""Running the probes: which rules, how many at once, and what a probe that breaks
down means.

Probes run a few at a time (:data:`CONCURRENT`), each in its own connections and under
its own deadline, so one server that hangs on one probe costs that probe's deadline, not
the run. A probe that raises (the server could not be reached, or answered so far off
the contract the probe could not go on) leaves its unjudged rules with a warning that
says why: the report never claims a rule passed that was not checked.
"""

from __future__ import annotations

from collections.abc import Iterable

import trio

from ..protocol.errors import ConfigurationError
from ..protocol.redact import Redactor
from ..transports.targets import Target, redactor_for
from .context import CheckOptions, Context, NoSession, Opener
from .report import Report
from .rules import GROUPS, PROBES, RULES, Probe, Verdict

__all__ = ["CONCURRENT", "check", "select"]

CONCURRENT = 4


def select(only: Iterable[str] = (), skip: Iterable[str] = ()) -> frozenset[str]:
    """The rule ids ``--only`` and ``--skip`` leave (each names a rule or a group).

    Raises :class:`ConfigurationError` for a name that is neither."""
    only, skip = list(only), list(skip)
    for name in (*only, *skip):
        if name not in RULES and name not in GROUPS:
            raise ConfigurationError(
                f"unknown rule or group {name!r}: see `mcpl-host check --list`"
            )

    def named(rule_id: str, names: list[str]) -> bool:
        return rule_id in names or RULES[rule_id].group in names

    return frozenset(r for r in RULES if (not only or named(r, only)) and not named(r, skip))


async def check(
    target: Target | Opener,
    *,
    only: Iterable[str] = (),
    skip: Iterable[str] = (),
    options: CheckOptions | None = None,
    redactor: Redactor | None = None,
    description: str = "",
) -> Report:
    """Check the server at ``target`` against every selected rule and report.

    Raises :class:`ConfigurationError` for an unknown rule or group, and the transport's
    own error (:class:`SpawnError`, :class:`TransportError`, ...) when the server cannot
    be reached at all; whatever a server that can be reached does ends in the report.
    """
    selected = select(only, skip)
    if redactor is None:
        redactor = redactor_for(target) if not callable(target) else Redactor()
    ctx = Context(target, redactor, options or CheckOptions(), selected)
    probes = [p for p in PROBES if any(r in selected for r in p.rules)]
    if probes:
        try:
            await ctx.facts()  # the first connection: a server that cannot be reached raises
        except Exception as exc:
            raise _leaf(exc) from None
    limiter = trio.CapacityLimiter(CONCURRENT)
    async with trio.open_nursery() as keepers:
        ctx.keepers = keepers
        async with trio.open_nursery() as nursery:
            for probe in probes:
                nursery.start_soon(_run, ctx, probe, limiter)
        ctx.done.set()
    facts = await ctx.facts() if probes else None
    # By group, then as declared: the order of the modules' imports does not matter.
    order = {rule_id: n for n, rule_id in enumerate(RULES)}
    findings = sorted(
        ctx.findings.values(), key=lambda f: (GROUPS.index(f.rule.group), order[f.rule.id])
    )
    return Report(description, facts, tuple(findings), ctx.redactor)


async def _run(ctx: Context, probe: Probe, limiter: trio.CapacityLimiter) -> None:
    deadline = max(30.0, 8 * ctx.timeout + 2 * ctx.options.exit_grace)
    why = ""
    async with limiter:
        try:
            with trio.move_on_after(deadline) as scope:
                await probe.run(ctx)
            if scope.cancelled_caught:
                why = f"the probe did not finish within {deadline:g} s"
        except Exception as group:  # any breakdown is reported, not raised
            exc = _leaf(group)
            if isinstance(exc, NoSession):
                why = f"not checked: {exc}"
            else:
                why = f"the probe broke down: {exc.__class__.__name__}: {exc}"
            why = ctx.redactor.log_value(why)
    for rule_id in probe.rules:
        if rule_id in ctx.selected and rule_id not in ctx.findings:
            ctx.judge(rule_id, Verdict.WARN, why or "the probe did not judge this rule")


def _leaf(exc: Exception) -> Exception:
    """The one exception inside nested nurseries' groups (``exc`` itself otherwise)."""
    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
