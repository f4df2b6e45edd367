"""``mcpl-host``: connect to MCP servers and show what they offer, or make one request.

``mcpl-host connect [options] TARGET``, ``mcpl-host call [options] --tool NAME
--args JSON TARGET``, ``mcpl-host shell [options] TARGET`` (:mod:`.shell`),
``mcpl-host check [options] TARGET`` (docs/check.md), ``mcpl-host auth
login|status|logout [TARGET]``, ``mcpl-host config list [FILE...]`` and ``mcpl-host
completion SHELL`` (docs/cli.md).
This package is the only place in mcpl_host that configures logging; its modules each
do one thing: :mod:`.parser` (the argparse parser), :mod:`.args` (what the command
line means), :mod:`.targets` (which servers),
:mod:`.run` (connecting and the report), :mod:`.credentials` (the OAuth an HTTP server
gets), :mod:`.auth` (``auth`` and the login on a terminal), :mod:`.inputs` (VS Code
inputs asked on a terminal), :mod:`.configs` (``config list``), :mod:`.failure` (error
kinds, exit status), :mod:`.output` (``--json``), :mod:`.render` (the readable report),
:mod:`.signature` (a tool's signature in it), :mod:`.trace` (``--trace``), :mod:`.logs`,
:mod:`.callargs` (``--args``, ``--arg``), :mod:`.outputcheck` (``outputSchema``),
:mod:`.save` (``--output``), :mod:`.completion`, :mod:`.signals` (SIGINT, SIGTERM, SIGHUP),
:mod:`.checkopts`, :mod:`.checkrun` and :mod:`.checkrender` (``check``), :mod:`.otel`
(``--otel``: spans and metrics exported over OTLP).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import time
from collections.abc import Sequence
from functools import partial
from typing import Any, TextIO

import trio

from ..auth import FileTokenStore, TokenStore, user_store
from ..check import SCHEMA as CHECK_SCHEMA
from ..protocol.errors import ConfigurationError
from ..protocol.profiles import validate_allowlist
from ..protocol.redact import Redactor
from ..transports.targets import HttpTarget
from . import auth, logs, otel, shell
from .args import (
    AuthOptions,
    Call,
    CompletionOptions,
    ConfigOptions,
    Options,
    UsageError,
    parse,
    secret_values,
    wants_json,
)
from .checkrun import run_check
from .completion import script
from .configs import list_configs, render_config_list
from .credentials import oauth_for
from .failure import (
    AUTH_REQUIRED,
    CANCELLED,
    CONFIG_ERROR,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    SAVE_FAILED,
    describe_failure,
    error_object,
    exit_status,
)
from .inputs import terminal_inputs
from .jsonvalue import tool_error
from .output import write_json
from .render import Style, render_call, render_connect, render_many, terminal_width
from .run import Settings, run_server
from .save import SaveError, save
from .signals import Interrupts, Signalled
from .targets import Plan, Planned, resolve

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit status:
    0 success, 1 the server failed the request or broke the protocol, 2 bad usage or
    configuration, 3 the tool answered ``isError: true``, 4 authorization required (a
    person must log in), 5 the authorization flow failed, 6 the server could not be
    reached (:func:`.failure.exit_status`), 128+N ended by signal N (SIGINT, SIGTERM,
    SIGHUP: :mod:`.signals`).

    Writes the report on stdout, logs and ``--trace`` on stderr. Raises nothing but
    ``SystemExit`` for ``--help``.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    # The OTLP exporter's headers (an API key) too: the exporter reads them itself.
    mask = logs.LogMask(Redactor([*secret_values(args), *otel.env_secrets(os.environ)]))
    logs.configure(0, mask)  # before anything can log (unconfigured structlog uses stdout)
    interrupts = Interrupts()
    with interrupts.installed():
        try:
            return _main(args, mask, interrupts)
        except Signalled:
            if interrupts.phase == "start":  # nothing was started: only the report to write
                report = {"ok": False, "target": None, "error": interrupts.error()}
                with contextlib.suppress(Signalled):
                    _emit(report, mask.redactor, json=wants_json(args), interrupts=interrupts)
            else:  # a second signal stopped the report's writing: nothing more is written
                _drop_stdout()
            return interrupts.status()


def _main(args: list[str], mask: logs.LogMask, interrupts: Interrupts) -> int:
    try:
        options = parse(args)
    except UsageError as exc:
        message = mask.redactor.redact(exc.message)
        sys.stderr.write(f"{exc.usage}mcpl-host: error: {message}\n")
        if wants_json(args):
            report: dict[str, Any] = {
                "ok": False,
                "target": None,
                "error": error_object(CONFIG_ERROR, message),
            }
            if args[:1] == ["check"]:  # check's every JSON object names its schema
                report = {"schema": CHECK_SCHEMA, **report}
            _emit(report, mask.redactor, json=True, interrupts=interrupts)
        return EXIT_USAGE
    if isinstance(options, CompletionOptions):
        sys.stdout.write(script(options.shell))
        return EXIT_OK
    # check's -v shows passing rules' evidence; its logging stays quiet.
    logs.configure(options.verbosity if options.command != "check" else 0, mask)
    if isinstance(options, AuthOptions):
        return _auth(options, mask, interrupts)
    if isinstance(options, ConfigOptions):
        report, found = list_configs(options.files)
        mask.redactor = Redactor([*mask.redactor.secrets, *found.secrets])
        return _emit(
            report, mask.redactor, json=options.json, options=options, interrupts=interrupts
        )
    store = user_store()
    if options.check is not None:
        return run_check(options, mask, interrupts, store)
    try:
        export = otel.start(options.otel, options.otel_endpoint, os.environ)
    except otel.Unavailable as exc:
        sys.stderr.write(f"mcpl-host: error: {exc.message}\n")
        if options.json:
            report = {"ok": False, "target": None, "error": error_object(CONFIG_ERROR, exc.message)}
            _emit(report, mask.redactor, json=True, interrupts=interrupts)
        return EXIT_USAGE
    try:
        return _connecting(options, mask, interrupts, store)
    finally:
        # Whatever ended the command (an error, a signal): the spans made so far go.
        if export is not None:
            export.close()


def _connecting(
    options: Options, mask: logs.LogMask, interrupts: Interrupts, store: TokenStore
) -> int:
    """connect, call and shell: what runs while the spans of ``--otel`` are exported."""
    if options.shell is not None:

        def relog(stream: TextIO | None) -> None:
            logs.configure(options.verbosity, mask, stream, shown_elsewhere=shell.SHOWN_LIVE)

        relog(None)
        return shell.main(options, mask, store, terminal_inputs, relog)
    try:
        if options.versions is not None:
            validate_allowlist(options.versions)
        plan = resolve(options, store, terminal_inputs)
    except ConfigurationError as exc:
        failed = {"ok": False, "target": None, "error": describe_failure(exc, mask.redactor)}
        return _emit(failed, mask.redactor, json=options.json, interrupts=interrupts)
    mask.redactor = Redactor([*mask.redactor.secrets, *plan.redactor.secrets])
    if not options.json:
        _warn(plan.warnings, mask.redactor)
    redactors: list[Redactor] = []
    report = interrupts.run(_run, options, plan, _Run(store, mask, redactors, interrupts))
    # What the connections learnt while connected (tokens) is masked in the report too.
    learnt = [secret for redactor in redactors for secret in redactor.secrets]
    mask.redactor = Redactor([*mask.redactor.secrets, *learnt])
    if options.json and plan.warnings:
        report["warnings"] = list(plan.warnings)
    if options.call is not None and options.call.output is not None and "result" in report:
        _save(report, options.call)
    return _emit(report, mask.redactor, json=options.json, options=options, interrupts=interrupts)


def _warn(warnings: Sequence[str], redactor: Redactor) -> None:
    """A config file's warnings, on stderr before the report (``--json`` puts them in
    the report's ``warnings`` instead)."""
    with contextlib.suppress(OSError):
        for warning in warnings:
            sys.stderr.write(f"mcpl-host: warning: {redactor.log_value(warning, 1000)}\n")
        sys.stderr.flush()


def _save(report: dict[str, Any], call: Call) -> None:
    """``--output``: save the result's binary content; ``saved`` lists what was
    written. A failure is the report's error (when it has none already), exit 1. A tool
    that answered ``isError: true`` failed: nothing of its result is saved (exit 3)."""
    assert call.output is not None
    if call.method == "tools/call" and tool_error(report["result"]):
        report["saved"] = []
        return
    try:
        report["saved"] = save(report["result"], call.method, call.output)
    except SaveError as exc:
        report["saved"] = []
        if report.get("ok"):
            report["ok"] = False
            report["error"] = error_object(SAVE_FAILED, exc.message, reason=exc.reason)


@dataclasses.dataclass(frozen=True, slots=True)
class _Run:
    """What a run shares besides its options and plan."""

    store: TokenStore
    mask: logs.LogMask
    redactors: list[Redactor]
    interrupts: Interrupts


async def _run(options: Options, plan: Plan, shared: _Run) -> dict[str, Any]:
    settings = Settings(
        versions=options.versions,
        timeout=options.timeout,
        started=time.perf_counter(),
        trace=sys.stderr if options.trace else None,
        label_traces=len(plan.servers) > 1 or plan.from_config,
        on_progress=None if options.json else partial(_print_progress, sys.stderr),
        redactors=shared.redactors,
        interrupts=shared.interrupts,
    )
    if not options.all_servers:
        planned = plan.servers[0]
        report = await run_server(planned, settings, options.call)
        if _needs_login(report, planned) and auth.interactive():
            report = await _login_and_retry(planned, settings, options.call, shared)
        if plan.from_config:
            report = {"ok": report["ok"], "server": planned.name, **report}
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
    if any(_object(r.get("error")).get("kind") == CANCELLED for r in ordered.values()):
        summary["error"] = shared.interrupts.error()  # what ended the command, for its status
    return summary


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _needs_login(report: dict[str, Any], planned: Planned) -> bool:
    """A 401 the server's OAuth could not answer without a person. (A 403 after the
    step-ups is not: logging in again asks for the same scope.)"""
    error = report.get("error")
    return (
        planned.login is not None
        and isinstance(error, dict)
        and error.get("kind") == AUTH_REQUIRED
        and error.get("status") == 401
    )


async def _login_and_retry(
    planned: Planned, settings: Settings, call: Call | None, shared: _Run
) -> dict[str, Any]:
    """On a terminal: log in as ``auth login`` does, then connect once more."""
    target = planned.target
    assert isinstance(target, HttpTarget)
    with contextlib.suppress(OSError):
        sys.stderr.write(f"mcpl-host: {planned.label} needs authorization: logging in\n")
        sys.stderr.flush()
    found = auth.AuthTarget(target.url, planned.label, planned.auth, planned.secrets)
    login = auth.LoginSettings(trace=settings.trace, started=settings.started)
    outcome = await _login(shared.interrupts, found, shared.store, login, shared.mask.redactor)
    if not outcome["ok"]:
        return {"ok": False, "target": planned.label, "error": outcome["error"]}
    # A new OAuth: the first one remembers the client it found before the login.
    fresh = dataclasses.replace(target, auth=oauth_for(planned.auth, shared.store))
    return await run_server(dataclasses.replace(planned, target=fresh), settings, call)


async def _login(
    interrupts: Interrupts,
    target: auth.AuthTarget,
    store: TokenStore,
    settings: auth.LoginSettings,
    redactor: Redactor,
) -> dict[str, Any]:
    """:func:`auth.login`, which a signal cancels (its loopback listener closed)."""
    with interrupts.cancellable():
        return await auth.login(target, store, settings, redactor)
    return {"ok": False, "target": target.label, "error": interrupts.error()}


def _auth(options: AuthOptions, mask: logs.LogMask, interrupts: Interrupts) -> int:
    """``mcpl-host auth login|status|logout``."""
    try:
        wanted = None if options.server is None else [options.server]
        target = auth.auth_target(options, terminal_inputs(wanted))
        if target is not None:
            mask.redactor = Redactor([*mask.redactor.secrets, *target.secrets])
        store = FileTokenStore()
        if options.action == "login":
            assert target is not None  # the parser requires one
            settings = auth.LoginSettings(
                timeout=options.timeout,
                open_browser=options.open_browser,
                port=options.port,
                force=options.force,
                trace=sys.stderr if options.trace else None,
                started=time.perf_counter(),
            )
            report = interrupts.run(_login, interrupts, target, store, settings, mask.redactor)
        elif options.action == "status":
            report = auth.status(target, store)
        else:
            report = auth.logout(target, store)
    except ConfigurationError as exc:
        report = {"ok": False, "target": None, "error": describe_failure(exc, mask.redactor)}
    except OSError as exc:  # the token file could not be written
        message = f"cannot change the token file: {exc.strerror or type(exc).__name__}"
        report = {"ok": False, "target": None, "error": error_object(CONFIG_ERROR, message)}
    return _emit(report, mask.redactor, json=options.json, options=options, interrupts=interrupts)


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
    report: dict[str, Any],
    redactor: Redactor,
    *,
    json: bool,
    interrupts: Interrupts,
    options: Options | AuthOptions | ConfigOptions | None = None,
) -> int:
    """Write the report on stdout; return the exit status it means (1 when stdout was
    closed before the report was whole, as by ``| head``, unless a signal ended the
    command: its 128+N stands). Raises :class:`Signalled` when a second signal stops
    the writing."""
    call = getattr(options, "call", None)
    status = exit_status(report, call.method if isinstance(call, Call) else None)
    interrupts.writing()
    try:
        _write_report(report, redactor, json=json, options=options)
    except OSError:  # EPIPE from `| head`, EIO from a terminal that hung up
        _drop_stdout()
        return status if _object(report.get("error")).get("kind") == CANCELLED else EXIT_FAILED
    return status


def _drop_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered would fail (or block) again
    when Python flushes it at exit."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _write_report(
    report: dict[str, Any],
    redactor: Redactor,
    *,
    json: bool,
    options: Options | AuthOptions | ConfigOptions | None,
) -> None:
    if json:
        write_json(report, redactor, sys.stdout)
    else:
        style, width = Style.for_stream(sys.stdout), terminal_width()
        if isinstance(options, AuthOptions):
            text = auth.render_auth(report, options.action, redactor, style)
        elif isinstance(options, ConfigOptions):
            text = render_config_list(report, redactor, style)
        elif "servers" in report:
            text = render_many(report, redactor, style, width)
        elif options is not None and options.call is not None:
            text = render_call(report, options.call.method, redactor, style, width)
        else:
            text = render_connect(report, redactor, style, width)
        sys.stdout.write(text)
        sys.stdout.flush()
