"""Capabilities against the methods that answer: what a server declares it serves, and
what it does not (basic/lifecycle#capability-negotiation)."""

from __future__ import annotations

from typing import Any, Final

from .context import Context
from .listing import METHOD_NOT_FOUND, exchange
from .rules import Line, probe, rule
from .wire import MODERN, error_code, shown

CAPABILITIES_AGREE = rule(
    "content.capabilities-agree",
    "each capability declared (tools, resources, prompts, logging, completions) has its "
    "methods answered",
    revision="2024-11-05",
    section="basic/lifecycle#capability-negotiation",
)
UNDECLARED = rule(
    "content.undeclared-capabilities",
    "a method of a capability not declared is answered with error -32601, not served",
    revision="2024-11-05",
    section="basic/lifecycle#capability-negotiation",
    level="SHOULD",
)
# The revision that added the completions capability ("Added completions capability").
_COMPLETIONS_SINCE: Final = "2025-03-26"
# A harmless request per capability: nothing is written, the level set is this fresh
# session's own. completion/complete names a prompt no server has, so a server that
# serves the method answers -32602 (or an empty completion): either is "served".
_PROBES: Final[dict[str, tuple[tuple[str, dict[str, Any]], ...]]] = {
    "tools": (("tools/list", {}),),
    # resources/templates/list is an optional part of resources: not asked for here.
    "resources": (("resources/list", {}),),
    "prompts": (("prompts/list", {}),),
    "logging": (("logging/setLevel", {"level": "info"}),),
    "completions": (
        (
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "mcpl-host-check-none"},
                "argument": {"name": "x", "value": ""},
            },
        ),
    ),
}


def _served_problem(method: str, answer: dict[str, Any] | None) -> str | None:
    """Why a declared capability's ``method`` was not served (None: it was)."""
    if answer is None:
        return "was not answered"
    if "result" in answer:
        return None
    # completion/complete names a prompt that does not exist: any error but "no such
    # method" shows the method is served.
    if method == "completion/complete" and error_code(answer) != METHOD_NOT_FOUND:
        return None
    return f"was answered with error {shown(error_code(answer))}"


def _refusal_problem(answer: dict[str, Any] | None) -> str | None:
    """Why an undeclared capability's method was not refused with -32601 (None: it was)."""
    if answer is None:
        return "was not answered"
    if "result" in answer:
        return "was answered with a result"
    if error_code(answer) != METHOD_NOT_FOUND:
        return f"was answered with error {shown(error_code(answer))}, not -32601"
    return None


@probe(CAPABILITIES_AGREE, UNDECLARED)
async def capabilities_agree(ctx: Context) -> None:
    caps = (await ctx.facts()).capabilities
    declared: dict[str, list[str]] = {}  # capability -> problems
    undeclared: dict[str, list[str]] = {}
    evidence: list[Line] = []
    undeclared_evidence: list[Line] = []
    # A fresh session: setLevel changes it, and an undeclared method may upset the server.
    async with ctx.session() as wire:
        for capability, requests in _PROBES.items():
            if capability == "logging" and wire.version == MODERN:
                continue  # 2026-07-28 has no logging/setLevel
            if capability == "completions" and (wire.version or MODERN) < _COMPLETIONS_SINCE:
                # 2024-11-05 serves completion/complete with no capability to declare.
                continue
            verdicts, lines = (
                (declared, evidence) if capability in caps else (undeclared, undeclared_evidence)
            )
            problems = verdicts.setdefault(capability, [])
            for method, params in requests:
                mark = wire.mark()
                answer, _ = await exchange(wire, wire.request(method, params), ctx.timeout)
                if capability in caps:
                    problem = _served_problem(method, answer)
                    said = f"{method} ({capability} declared) {problem}"
                else:
                    problem = _refusal_problem(answer)
                    said = f"{method} ({capability} not declared) {problem}"
                if problem is not None:
                    problems.append(said)
                if problem is not None or not lines:
                    lines += wire.since(mark)
    _judge(
        ctx,
        CAPABILITIES_AGREE,
        declared,
        evidence,
        what="declared",
        ok="answered",
        none="the server declares none of the capabilities checked",
    )
    _judge(
        ctx,
        UNDECLARED,
        undeclared,
        undeclared_evidence,
        what="not declared",
        ok="refused with -32601",
        none="the server declares every capability checked",
    )


def _judge(
    ctx: Context,
    rule_id: str,
    problems: dict[str, list[str]],
    evidence: list[Line],
    *,
    what: str,
    ok: str,
    none: str,
) -> None:
    found = [p for ps in problems.values() for p in ps]
    if found:
        ctx.failed(rule_id, "; ".join(found), evidence)
    elif not problems:
        ctx.not_applicable(rule_id, none)
    else:
        ctx.passed(rule_id, f"{', '.join(problems)} {what}: their methods {ok}", evidence)
