"""A pytest plugin that records every verdict the checker gives while tests run:
``scripts/check_rule_audit.py`` loads it (``-p tests.check.verdict_audit``) to show that
each rule both passes on a server that keeps it and fails (or warns) on one that breaks
it. The verdicts go to the file ``MCPL_HOST_VERDICT_AUDIT`` names, one ``rule verdict``
line each, appended by every process (xdist's workers too)."""

from __future__ import annotations

import os
from typing import Any

from mcpl_host.check import context


def pytest_configure(config: Any) -> None:
    del config
    path = os.environ.get("MCPL_HOST_VERDICT_AUDIT")
    if path is None:
        return
    judge = context.Context.judge

    def recording(self: context.Context, rule_id: str, verdict: Any, *args: Any) -> None:
        with open(path, "a") as out:
            out.write(f"{rule_id} {verdict.value}\n")
        judge(self, rule_id, verdict, *args)

    context.Context.judge = recording  # type: ignore[method-assign,assignment]
