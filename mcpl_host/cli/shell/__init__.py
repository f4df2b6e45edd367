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
from typing import Any, Final, TextIO
from urllib.parse import urlsplit

from ...auth import TokenStore
from ...config import InputResolver
from ...protocol.errors import ConfigurationError
from ...protocol.profiles import validate_allowlist
from ...protocol.redact import Redactor
from ...transports.targets import StdioTarget
from ..args import Options
from ..failure import EXIT_USAGE
from ..logs import LogMask
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
    mask: LogMask,
    store: TokenStore,
    inputs: Callable[[Collection[str] | None], InputResolver],
    relog: Callable[[TextIO | None], None],
) -> int:
    """Run the shell; its exit status (2: prompt_toolkit missing, a bad target, config,
    ``--versions`` or ``--history``; 128+N: ended by signal N, 129 also when the
    terminal went away; else 0). ``mask`` gets the config's secrets; ``relog(stream)``
    sends the log lines to ``stream`` (None: stderr)."""
    redactor = mask.redactor
    try:
        import prompt_toolkit  # noqa: F401, PLC0415 - the optional extra
    except ImportError:
        sys.stderr.write(f"mcpl-host: error: the shell needs prompt_toolkit: {INSTALL}\n")
        return EXIT_USAGE
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        sys.stderr.write("mcpl-host: error: the shell needs a terminal (stdin and stdout)\n")
        return EXIT_USAGE
    try:
        if options.versions is not None:
            validate_allowlist(options.versions)
        plan = _plan(options, store, inputs)
    except ConfigurationError as exc:
        sys.stderr.write(f"mcpl-host: error: {redactor.log_value(exc.message, 2000)}\n")
        return EXIT_USAGE
    problem = _unwritable(options.shell.history if options.shell else None)
    if problem is not None:
        sys.stderr.write(f"mcpl-host: error: --history: {redactor.log_value(problem, 1000)}\n")
        return EXIT_USAGE
    redactor = mask.redactor = Redactor([*redactor.secrets, *plan.redactor.secrets])
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

    return run_session(options, servers, redactor, relog)


def _unwritable(history: str | None) -> str | None:
    """Why the history file cannot be kept (None: it can, or there is none)."""
    if history is None:
        return None
    try:
        with open(history, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        return f"{history}: {exc.strerror or exc}"
    return None


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
    return dataclasses.replace(
        plans[0],
        servers=[p.servers[0] for p in plans],
        redactor=Redactor([s for p in plans for s in p.redactor.secrets]),
        # Each resolve reads the same file: the warnings about it, said once.
        skipped={},
        warnings=tuple(dict.fromkeys(w for p in plans for w in p.warnings)),
    )
