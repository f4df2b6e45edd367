"""Capabilities against the methods that answer: what a server declares it serves, and
what it does not (basic/lifecycle#capability-negotiation)."""

from __future__ import annotations

from typing import Any, Final

from .context import Context
from .listing import exchange, probe_quoting, shown
from .rules import Line, rule
from .wire import MODERN

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


def _code(answer: dict[str, Any]) -> Any:
    error = answer.get("error")
    return error.get("code") if isinstance(error, dict) else error


@probe_quoting(CAPABILITIES_AGREE, UNDECLARED)
async def capabilities_agree(ctx: Context) -> None:
    caps = (await ctx.facts()).capabilities
    unserved: list[str] = []
    served: list[str] = []
    evidence: list[Line] = []
    undeclared_evidence: list[Line] = []
    declared = [c for c in _PROBES if c in caps]
    # A fresh session: setLevel changes it, and an undeclared method may upset the server.
    async with ctx.session() as wire:
        for capability, requests in _PROBES.items():
            if capability == "logging" and wire.version == MODERN:
                continue  # 2026-07-28 has no logging/setLevel
            for method, params in requests:
                mark = wire.mark()
                answer, _ = await exchange(wire, wire.request(method, params), ctx.timeout)
                lines = wire.since(mark)
                if capability in caps:
                    if answer is None or (
                        "result" not in answer
                        and (method != "completion/complete" or _code(answer) == -32601)
                    ):
                        unserved.append(
                            f"{method} ({capability} declared) was not answered"
                            if answer is None
                            else f"{method} ({capability} declared): error {shown(_code(answer))}"
                        )
                        evidence += lines
                    elif not evidence:
                        evidence += lines
                elif answer is not None and ("result" in answer or _code(answer) != -32601):
                    how = "a result" if "result" in answer else f"error {shown(_code(answer))}"
                    served.append(f"{method} ({capability} not declared) answered with {how}")
                    undeclared_evidence += lines
                elif not undeclared_evidence:
                    undeclared_evidence += lines
    if unserved:
        ctx.failed(CAPABILITIES_AGREE, "; ".join(unserved), evidence)
    elif not declared:
        ctx.not_applicable(CAPABILITIES_AGREE, "the server declares none of them")
    else:
        ctx.passed(CAPABILITIES_AGREE, f"{', '.join(declared)}: their methods answered", evidence)
    missing = [c for c in _PROBES if c not in caps]
    if served:
        ctx.failed(UNDECLARED, "; ".join(served), undeclared_evidence)
    elif not missing:
        ctx.not_applicable(UNDECLARED, "the server declares every capability checked")
    else:
        ctx.passed(
            UNDECLARED,
            f"{', '.join(missing)}: not declared, refused with -32601",
            undeclared_evidence,
        )
