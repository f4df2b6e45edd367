"""Which servers a command line names: ``--demo``, ``-- CMD``, a URL, or a config file.

Resolving does no I/O beyond reading the config file; a bad target or config fails
here, before anything is spawned, as a :class:`~mcpl_host.ConfigurationError` (exit 2).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from ..auth import TokenStore
from ..config import AuthSpec, InputResolver, ServerConfig, read_config
from ..protocol.errors import ConfigurationError
from ..protocol.redact import Redactor
from ..transports.targets import (
    HttpTarget,
    StdioTarget,
    Target,
    describe,
    parse_target,
    redactor_for,
)
from .args import Options
from .auth import login_command
from .credentials import oauth_for, uses_oauth
from .parser import TARGET_KINDS

__all__ = ["DEMO_NAME", "Plan", "Planned", "resolve"]

DEMO_NAME = "demo"
# The demo runs from the directory holding the mcpl_host package, so that it imports the
# same copy as this command even from a checkout that is not installed.
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True, slots=True)
class Planned:
    """One server to connect to.

    ``secrets`` are the values to redact beyond what the target's own configuration
    reveals (every env value and header value, however short or plainly named, and a
    configured client secret). ``problem`` is set, and ``target`` None, for a
    configured server the host cannot reach (an environment variable it names is not
    set): it is reported as a configuration error without connecting. ``auth`` is the
    config entry's ``auth`` (None without one, and for a command-line target);
    ``login`` the command line that logs in to the server, for one whose target has an
    OAuth.
    """

    name: str
    label: str
    target: Target | None
    secrets: tuple[str, ...] = field(default=(), repr=False)
    problem: str | None = None
    auth: AuthSpec | None = None
    login: str | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """The servers of one command, plus what ``--all`` left out, every secret known,
    and the config file's warnings."""

    servers: list[Planned]
    skipped: dict[str, str]
    redactor: Redactor
    from_config: bool
    warnings: tuple[str, ...] = ()


def resolve(
    options: Options,
    store: TokenStore | None = None,
    inputs: Callable[[Collection[str] | None], InputResolver] | None = None,
) -> Plan:
    """The servers ``options`` name.

    Raises :class:`~mcpl_host.ConfigurationError`: a TARGET that is not one, a stdio
    command that is not valid, a ``--header`` the HTTP transport sets itself, a config
    file that cannot be read or is malformed (the message names the file and the key),
    a ``--server`` the file does not have, no ``--server`` for a file with more or less
    than one enabled server, the chosen server unusable (an environment variable it
    names is not set), or ``--all`` over a file with no servers. No message shows a
    header value.

    ``inputs(servers)`` makes the resolver that answers the ``${input:ID}`` of the
    chosen servers (None: all of them); without it, only the environment does.

    With a ``store``, an HTTP server that authorizes no other way gets an OAuth over it
    that never asks a person (stored and refreshable tokens only).
    """
    if options.config is not None:
        return _from_config(options, options.config, store, inputs)
    if options.demo:
        target: Target = StdioTarget.of(
            [sys.executable, "-m", "mcpl_host.demo"], cwd=_PACKAGE_ROOT, env=options.env
        )
        return _single(_planned(DEMO_NAME, target))
    if options.stdio is not None:
        target = StdioTarget.of(options.stdio, env=options.env)
        return _single(_planned(describe(target), target))
    assert options.url is not None
    try:
        target = parse_target(options.url)
        if isinstance(target, HttpTarget) and options.headers:
            # replace, not a new target: an sse+http(s):// TARGET keeps its transport.
            target = dataclasses.replace(target, headers=options.headers)
    except ConfigurationError as exc:
        # Our own texts name a header, never its value; the redactor is for the URL.
        shown = Redactor([*options.headers.values()]).redact(exc.message)
        raise ConfigurationError(f"{shown}; the server is one of: {TARGET_KINDS}") from None
    label = describe(target)
    return _single(_planned(label, target, store=store, login=login_command(label)))


def _single(planned: Planned) -> Plan:
    return Plan([planned], {}, _union([planned]), from_config=False)


def _planned(
    name: str,
    target: Target,
    secrets: tuple[str, ...] = (),
    auth: AuthSpec | None = None,
    *,
    store: TokenStore | None = None,
    login: str | None = None,
) -> Planned:
    # The redactor built from a target masks only secret-looking or long env values and
    # authorization-like headers; the command line promises that no --env, --header or
    # configured value is ever shown.
    if isinstance(target, StdioTarget):
        secrets = (*secrets, *target.env.values())
    elif isinstance(target, HttpTarget):
        secrets = (*secrets, *target.headers.values())
        if store is not None and target.auth is None and uses_oauth(auth, target.headers):
            target = dataclasses.replace(target, auth=oauth_for(auth, store))
    if not isinstance(target, HttpTarget) or target.auth is None:
        login = None
    return Planned(name, describe(target), target, secrets, auth=auth, login=login)


def _from_config(
    options: Options,
    file: str,
    store: TokenStore | None,
    inputs: Callable[[Collection[str] | None], InputResolver] | None,
) -> Plan:
    name = options.server
    if name is None and not options.all_servers:
        name = _only_server(options, file)
    wanted = None if name is None else [name]
    loaded = read_config(file, inputs=None if inputs is None else inputs(wanted))
    servers = loaded.servers
    chosen: dict[str, ServerConfig]
    skipped: dict[str, str] = {}
    if name is not None:
        config = servers.get(name)
        if config is None:
            have = ", ".join(repr(n) for n in servers) or "none"
            raise ConfigurationError(
                f"{file}: key '{loaded.servers_key}.{name}' not found (servers: {have})"
            )
        if config.target is None:
            raise ConfigurationError(f"{config.source}: {config.problem}")
        chosen = {name: config}
    else:
        if not servers:
            raise ConfigurationError(f"{file}: key '{loaded.servers_key}' holds no servers")
        chosen = {}
        for name, config in servers.items():
            if config.disabled:
                skipped[name] = "disabled"
            else:
                chosen[name] = config
    planned = [
        _configured(name, config, options.env, store, login_command(config=file, server=name))
        for name, config in chosen.items()
    ]
    return Plan(planned, skipped, _union(planned), from_config=True, warnings=loaded.warnings)


def _only_server(options: Options, file: str) -> str:
    """The one enabled server of the file, read once without asking for any input.
    Raises ConfigurationError when it has none or several."""
    servers = read_config(file).servers
    enabled = [name for name, config in servers.items() if not config.disabled]
    if len(enabled) == 1:
        return enabled[0]
    have = ", ".join(repr(n) for n in enabled) or "none"
    how = "--server NAME or --all" if options.command == "connect" else "--server NAME"
    count = "no enabled server" if not enabled else f"{len(enabled)} enabled servers"
    raise ConfigurationError(f"{file} has {count} ({have}): give {how}")


def _configured(
    name: str,
    config: ServerConfig,
    extra_env: dict[str, str],
    store: TokenStore | None,
    login: str,
) -> Planned:
    target = config.target
    if target is None:
        return Planned(
            name,
            config.source,
            None,
            config.secrets,
            problem=f"{config.source}: {config.problem}",
            auth=config.auth,
        )
    if isinstance(target, StdioTarget) and extra_env:
        # --env adds to (and wins over) what the file configures, for stdio servers only.
        target = StdioTarget.of(
            target.argv,
            cwd=target.cwd,
            env={**target.env, **extra_env},
            inherit_env=target.inherit_env,
        )
    return _planned(name, target, config.secrets, config.auth, store=store, login=login)


def _union(servers: list[Planned]) -> Redactor:
    """One redactor for everything this command writes, whichever server it concerns."""
    secrets: set[str] = set()
    for planned in servers:
        secrets |= set(planned.secrets)
        if planned.target is not None:
            secrets |= redactor_for(planned.target, extra_secrets=planned.secrets).secrets
    return Redactor(secrets)
