"""``mcpl-host shell [TARGET | --config FILE [--server NAME ...]]``: an interactive
session over servers that stay connected (docs/cli.md, "mcpl-host shell").

Its modules: :mod:`.session` (the prompt loop), :mod:`.commands` (what a line means),
:mod:`.complete` (TAB), :mod:`.questions` (the servers' sampling, elicitation and
roots requests), :mod:`.watch` (states, notifications, logs, progress, the trace as
they come), :mod:`.screen` (writing safely), :mod:`.data` (the catalogue and the calls
routed by its names). prompt_toolkit is an optional extra: nothing here imports it
until the shell runs.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from ...auth import TokenStore
from ...config import InputResolver
from ...protocol.errors import ConfigurationError
from ...protocol.redact import Redactor
from ...transports.targets import StdioTarget
from ..args import Options
from ..failure import EXIT_USAGE
from ..targets import DEMO_NAME, Plan, Planned, resolve

__all__ = ["INSTALL", "SHOWN_LIVE", "main"]

INSTALL: Final = "pip install 'mcpl-host[shell]'"
# The library's log events the shell shows in its own words (.watch): states, server
# logs. Logged too, each would be said twice.
SHOWN_LIVE: Final = frozenset({"server state", "server log"})
# No "_": a catalogue name is "<server>__<own name>", and a server's name may hold no
# "__" nor end with "_" (mcpl_host.manager.naming).
_NOT_A_WORD: Final = re.compile(r"[^A-Za-z0-9-]+")


def main(
    options: Options,
    redactor: Redactor,
    store: TokenStore,
    inputs: Callable[[Collection[str] | None], InputResolver],
) -> int:
    """Run the shell; its exit status (2: prompt_toolkit missing, a bad target or
    config; 128+N: ended by signal N; else 0)."""
    try:
        import prompt_toolkit  # noqa: F401, PLC0415 - the optional extra
    except ImportError:
        sys.stderr.write(f"mcpl-host: error: the shell needs prompt_toolkit: {INSTALL}\n")
        return EXIT_USAGE
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        sys.stderr.write("mcpl-host: error: the shell needs a terminal (stdin and stdout)\n")
        return EXIT_USAGE
    try:
        plan = _plan(options, store, inputs)
    except ConfigurationError as exc:
        sys.stderr.write(f"mcpl-host: error: {redactor.log_value(exc.message, 2000)}\n")
        return EXIT_USAGE
    redactor = Redactor([*redactor.secrets, *plan.redactor.secrets])
    for warning in plan.warnings:
        sys.stderr.write(f"mcpl-host: warning: {redactor.log_value(warning, 1000)}\n")
    servers: dict[str, Any] = {}
    for planned in plan.servers:
        if planned.target is None:
            problem = redactor.log_value(planned.problem or "no target", 1000)
            sys.stderr.write(
                f"mcpl-host: {redactor.log_value(planned.name, 64)} not started: {problem}\n"
            )
        else:
            servers[planned.name] = planned.target
    for name, reason in plan.skipped.items():
        sys.stderr.write(f"mcpl-host: {redactor.log_value(name, 64)} not started: {reason}\n")
    if not servers:
        sys.stderr.write("mcpl-host: error: no server to start\n")
        return EXIT_USAGE
    from .session import run_session  # noqa: PLC0415 - imports prompt_toolkit

    return run_session(options, servers, redactor)


def _short_name(planned: Planned) -> str:
    """A lone target's server name: ``demo``, a stdio program's file name (``node``,
    ``python3``), or a URL's host; letters, digits and ``-`` only."""
    target = planned.target
    if planned.name == DEMO_NAME or target is None:
        return planned.name
    if isinstance(target, StdioTarget):
        word = Path(target.argv[0]).name
    else:
        word = urlsplit(str(getattr(target, "url", ""))).hostname or ""
    return _NOT_A_WORD.sub("-", word).strip("-") or "server"


def _plan(
    options: Options,
    store: TokenStore,
    inputs: Callable[[Collection[str] | None], InputResolver],
) -> Plan:
    """The servers: a TARGET's one, or the chosen (default: every enabled) servers of
    ``--config``. Raises ConfigurationError as :func:`..targets.resolve` does."""
    assert options.shell is not None
    if options.config is None:
        plan = resolve(options, store, inputs)
        # A catalogue name is "<server>__<own name>": a word, not a target's label.
        named = dataclasses.replace(plan.servers[0], name=_short_name(plan.servers[0]))
        return dataclasses.replace(plan, servers=[named])
    names = list(dict.fromkeys(options.shell.servers))
    if not names:
        return resolve(dataclasses.replace(options, all_servers=True), store, inputs)
    plans = [resolve(dataclasses.replace(options, server=n), store, inputs) for n in names]
    return Plan(
        [p.servers[0] for p in plans],
        {},
        Redactor([s for p in plans for s in p.redactor.secrets]),
        from_config=True,
        warnings=plans[0].warnings,
    )
