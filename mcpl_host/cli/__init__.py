"""``mcpl-host``: connect to MCP servers and show what they offer, or make one request.

``mcpl-host connect [options] TARGET`` and ``mcpl-host call [options] --tool NAME
--args JSON TARGET`` (docs/cli.md). This package is the only place in mcpl_host that
configures logging; its modules each do one thing: :mod:`.args` (the command line),
:mod:`.targets` (which servers), :mod:`.run` (connecting and the report),
:mod:`.failure` (error kinds, exit status), :mod:`.output` (``--json``),
:mod:`.render` (the readable report), :mod:`.trace` (``--trace``), :mod:`.logs`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Sequence
from functools import partial
from typing import Any, TextIO

import trio

from ..protocol.errors import ConfigurationError
from ..protocol.profiles import validate_allowlist
from ..protocol.redact import Redactor
from . import logs
from .args import Options, UsageError, parse, secret_values, wants_json
from .failure import (
    CONFIG_ERROR,
    EXIT_FAILED,
    EXIT_USAGE,
    describe_failure,
    error_object,
    exit_status,
)
from .output import write_json
from .render import Style, render_call, render_connect, render_many, terminal_width
from .run import Settings, run_server
from .targets import Plan, resolve

__all__ = ["main"]

_INTERRUPTED = 130  # the shell's convention for a command ended by SIGINT


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit status:
    0 success, 1 the server or transport failed, 2 bad usage or configuration.

    Writes the report on stdout, logs and ``--trace`` on stderr. Raises nothing but
    ``SystemExit`` for ``--help``.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    mask = logs.LogMask(Redactor(secret_values(args)))
    logs.configure(0, mask)  # before anything can log (unconfigured structlog uses stdout)
    try:
        options = parse(args)
    except UsageError as exc:
        message = mask.redactor.redact(exc.message)
        sys.stderr.write(f"{exc.usage}mcpl-host: error: {message}\n")
        if wants_json(args):
            _emit(
                {"ok": False, "target": None, "error": error_object(CONFIG_ERROR, message)},
                mask.redactor,
                json=True,
            )
        return EXIT_USAGE
    logs.configure(options.verbosity, mask)
    try:
        if options.versions is not None:
            validate_allowlist(options.versions)
        plan = resolve(options)
    except ConfigurationError as exc:
        report = {"ok": False, "target": None, "error": describe_failure(exc, mask.redactor)}
        return _emit(report, mask.redactor, json=options.json)
    mask.redactor = Redactor([*mask.redactor.secrets, *plan.redactor.secrets])
    try:
        report = trio.run(_run, options, plan)
    except KeyboardInterrupt:
        sys.stderr.write("mcpl-host: interrupted\n")
        return _INTERRUPTED
    return _emit(report, mask.redactor, json=options.json, options=options)


async def _run(options: Options, plan: Plan) -> dict[str, Any]:
    settings = Settings(
        versions=options.versions,
        timeout=options.timeout,
        started=time.perf_counter(),
        trace=sys.stderr if options.trace else None,
        label_traces=len(plan.servers) > 1 or plan.from_config,
        on_progress=None if options.json else partial(_print_progress, sys.stderr),
    )
    if not options.all_servers:
        report = await run_server(plan.servers[0], settings, options.call)
        if plan.from_config:
            report = {"ok": report["ok"], "server": plan.servers[0].name, **report}
        return report
    reports: dict[str, dict[str, Any]] = {}

    async def one(name: str, index: int) -> None:
        reports[name] = await run_server(plan.servers[index], settings, None)

    # Every server at once; run_server never raises, so one cannot cancel the others.
    async with trio.open_nursery() as nursery:
        for index, planned in enumerate(plan.servers):
            nursery.start_soon(one, planned.name, index)
    ordered = {planned.name: reports[planned.name] for planned in plan.servers}
    summary: dict[str, Any] = {"ok": all(r["ok"] for r in ordered.values()), "servers": ordered}
    if plan.skipped:
        summary["skipped"] = plan.skipped
    return summary


def _print_progress(
    stream: TextIO, redactor: Redactor, done: float, total: float | None, message: str | None
) -> None:
    of = "" if total is None else f"/{total:g}"
    said = "" if not message else f": {redactor.log_value(message)}"
    # Called from the connection's reader: a closed stderr must not end the connection.
    with contextlib.suppress(OSError):
        stream.write(f"progress {done:g}{of}{said}\n")
        stream.flush()


def _emit(
    report: dict[str, Any], redactor: Redactor, *, json: bool, options: Options | None = None
) -> int:
    """Write the report on stdout; return the exit status it means (1 when stdout was
    closed before the report was whole, as by ``| head``)."""
    try:
        _write_report(report, redactor, json=json, options=options)
    except BrokenPipeError:
        # Python would complain again when flushing stdout at exit: point it elsewhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
    return exit_status(report)


def _write_report(
    report: dict[str, Any], redactor: Redactor, *, json: bool, options: Options | None
) -> None:
    if json:
        write_json(report, redactor, sys.stdout)
    else:
        style, width = Style.for_stream(sys.stdout), terminal_width()
        if "servers" in report:
            text = render_many(report, redactor, style, width)
        elif options is not None and options.call is not None:
            text = render_call(report, options.call.method, redactor, style, width)
        else:
            text = render_connect(report, redactor, style, width)
        sys.stdout.write(text)
        sys.stdout.flush()
