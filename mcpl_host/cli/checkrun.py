"""``mcpl-host check``: resolve the target as ``connect`` does, run the checker, write
the report, and say what it means as an exit status (docs/check.md).

The target, its secrets and its config entry are resolved by :mod:`.targets`, exactly
as for ``connect``; the checker gets the same redactor, so no ``--env`` value, header
value or token reaches the report. The checker sends only static headers: an HTTP
server's OAuth becomes an ``Authorization`` header when the token file holds a valid
token for it (:func:`_static_authorization`); a config entry that says ``auth: oauth``
without one is refused before anything is sent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from functools import partial
from typing import Any

from ..auth import FileTokenStore, TokenStore
from ..check import SCHEMA, CheckOptions, Report, check, select
from ..protocol.errors import AuthorizationRequired, ConfigurationError, McplHostError
from ..protocol.profiles import KNOWN_REVISIONS, validate_allowlist
from ..protocol.redact import Redactor
from ..transports.http_target import has_authorization
from ..transports.targets import HttpTarget, Target
from . import logs
from .args import CheckFlags, Options
from .checkrender import render_check, render_rules, rules_json, style_for
from .credentials import entries_for
from .failure import (
    CANCELLED,
    EXIT_FAILED,
    EXIT_OK,
    describe_failure,
    exit_status,
)
from .inputs import terminal_inputs
from .output import write_json
from .render import render_connect, terminal_width
from .signals import Interrupts
from .targets import Planned, resolve

__all__ = ["run_check"]


def run_check(
    options: Options, mask: logs.LogMask, interrupts: Interrupts, store: TokenStore
) -> int:
    """Run ``mcpl-host check``; return its exit status (0 no rule failed, 1 one did,
    the connect command's status for an error). Raises :class:`~.signals.Signalled`
    as the other commands do."""
    flags = options.check
    assert flags is not None
    if flags.list_rules:
        return _write(rules_json() if options.json else render_rules(style_for(flags.color)))
    try:
        select(flags.only, flags.skip)  # an unknown rule or group is bad usage: exit 2
        versions = KNOWN_REVISIONS
        if options.versions is not None:
            versions = tuple(sorted(validate_allowlist(options.versions)))
        plan = resolve(options, store, terminal_inputs)
        planned = _usable(plan.servers[0])
    except ConfigurationError as exc:
        return _failed(options, None, describe_failure(exc, mask.redactor), mask, interrupts)
    mask.redactor = Redactor([*mask.redactor.secrets, *plan.redactor.secrets])
    _warn(plan.warnings, mask.redactor)
    settings = CheckOptions(
        timeout=options.timeout,
        exit_grace=flags.exit_grace,
        calls=flags.calls,
        versions=versions,
    )
    outcome = interrupts.run(
        partial(
            _check,
            planned=planned,
            flags=flags,
            settings=settings,
            mask=mask,
            store=store,
            interrupts=interrupts,
        )
    )
    if isinstance(outcome, dict):
        return _failed(options, planned.label, outcome, mask, interrupts)
    interrupts.writing()
    if options.json:
        shown: Any = outcome.to_json()
    else:
        style = style_for(flags.color)
        shown = render_check(outcome, mask.redactor, style, show_passing=flags.show_passing)
    status = _write(shown, mask.redactor)
    return status if status != EXIT_OK else (EXIT_OK if outcome.ok else EXIT_FAILED)


def _usable(planned: Planned) -> Planned:
    """``planned`` if the checker can reach it; raises ConfigurationError otherwise."""
    if planned.target is None:
        raise ConfigurationError(planned.problem or "the server cannot be used")
    if isinstance(planned.target, HttpTarget) and planned.target.transport != "streamable-http":
        raise ConfigurationError(
            "the checker speaks Streamable HTTP: give the http(s):// URL of the "
            "server's MCP endpoint (the legacy HTTP+SSE transport is not checked)"
        )
    return planned


async def _check(
    *,
    planned: Planned,
    flags: CheckFlags,
    settings: CheckOptions,
    mask: logs.LogMask,
    store: TokenStore,
    interrupts: Interrupts,
) -> Report | dict[str, Any]:
    """The report, or the ``error`` object of a check that could not run."""
    with interrupts.cancellable():
        try:
            target = await _static_authorization(planned, store, mask)
            return await check(
                target,
                only=flags.only,
                skip=flags.skip,
                options=settings,
                redactor=mask.redactor,
                description=planned.label,
            )
        except McplHostError as exc:
            return _described(exc, planned, mask.redactor)
    return interrupts.error()


def _described(exc: McplHostError, planned: Planned, redactor: Redactor) -> dict[str, Any]:
    """The ``error`` object of a server the checker could not reach (as ``connect``
    words it: a person is told how to log in)."""
    error = describe_failure(exc, redactor)
    if isinstance(exc, AuthorizationRequired):
        target = planned.target
        if planned.login is not None:
            error["message"] = (
                f"not authorized (HTTP {exc.status}): log in with `{planned.login}`, "
                "then run this command again"
            )
            error["login"] = planned.login
        elif isinstance(target, HttpTarget) and has_authorization(target.headers):
            error["message"] = f"the server refused the Authorization given (HTTP {exc.status})"
    return error


async def _static_authorization(planned: Planned, store: TokenStore, mask: logs.LogMask) -> Target:
    """The target as the checker can use it: an HTTP server's OAuth replaced by the
    stored token for it (as ``Authorization``, masked everywhere), or dropped when
    there is none and the config does not ask for OAuth (most servers want none; one
    that answers 401 is reported as needing a login). Raises ConfigurationError for a
    config entry with ``auth: oauth`` and no usable stored token."""
    target = planned.target
    assert target is not None
    if not isinstance(target, HttpTarget) or target.auth is None:
        return target
    if has_authorization(target.headers):
        return dataclasses.replace(target, auth=None)
    token = await _stored_token(store, target.url)
    if token is not None:
        mask.redactor = Redactor([*mask.redactor.secrets, token, f"Bearer {token}"])
        headers = {**target.headers, "Authorization": f"Bearer {token}"}
        return dataclasses.replace(target, auth=None, headers=headers)
    if planned.auth is not None and planned.auth.kind == "oauth":
        login = planned.login or "mcpl-host auth login"
        raise ConfigurationError(
            f"{planned.label} authorizes with OAuth and the token file holds no valid "
            f"token for it; the checker runs no OAuth flow: log in first with `{login}` "
            "(an expired token: `mcpl-host connect` with the same target refreshes it)"
        )
    return dataclasses.replace(target, auth=None)


async def _stored_token(store: TokenStore, url: str) -> str | None:
    """A stored Bearer access token for the server at ``url`` that has not expired."""
    if not isinstance(store, FileTokenStore):
        return None
    try:
        for entry in entries_for(store, url):
            tokens = await store.get_tokens(entry.issuer, entry.client_id, entry.resource)
            if (
                tokens is not None
                and tokens.token_type.lower() == "bearer"
                and not tokens.expired()
            ):
                return tokens.access_token
    except (ConfigurationError, OSError):
        return None  # an unreadable token file: the check runs without a token
    return None


def _failed(
    options: Options,
    label: str | None,
    error: dict[str, Any],
    mask: logs.LogMask,
    interrupts: Interrupts,
) -> int:
    """Write the report of a check that could not run, as ``connect`` writes its
    failures; return the status it means (2 configuration, 4 authorization, 6
    unreachable, 128+N a signal)."""
    report = {"schema": SCHEMA, "ok": False, "target": label, "error": error}
    status = exit_status(report)
    interrupts.writing()
    if options.json:
        written = _write(report, mask.redactor)
    else:
        color = options.check.color if options.check is not None else "auto"
        text = render_connect(report, mask.redactor, style_for(color), terminal_width())
        written = _write(text)
    if written == EXIT_OK or error.get("kind") == CANCELLED:
        return status
    return written


def _write(shown: dict[str, Any] | str, redactor: Redactor | None = None) -> int:
    """Write a JSON object or a text on stdout; 1 when stdout is closed before it is
    whole (``| head``), else 0."""
    try:
        if isinstance(shown, str):
            sys.stdout.write(shown)
            sys.stdout.flush()
        else:
            write_json(shown, redactor or Redactor(), sys.stdout)
    except OSError:
        # What is still buffered would fail again when Python flushes it at exit.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
    return EXIT_OK


def _warn(warnings: tuple[str, ...], redactor: Redactor) -> None:
    """A config file's warnings, on stderr (the JSON report's schema has no place for
    them)."""
    with contextlib.suppress(OSError):
        for warning in warnings:
            sys.stderr.write(f"mcpl-host: warning: {redactor.log_value(warning, 1000)}\n")
        sys.stderr.flush()
