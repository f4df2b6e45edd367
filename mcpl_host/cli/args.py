"""The command line: ``mcpl-host connect|call [options] TARGET``, parsed into :class:`Options`.

``--`` starts a stdio server's command line, which is taken as is: it is split off
before argparse sees anything, so the server's own ``--flags`` never reach our parser
(argparse's handling of ``--`` also differs between Python versions).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..protocol.redact import Redactor
from .callargs import ArgumentsError, arguments
from .checkopts import CheckFlags, check_flags
from .parser import (
    AUTH_TARGETS,
    DEFAULT_TIMEOUT,
    LOGIN_TIMEOUT,
    OTEL_COMMANDS,
    TARGET_KINDS,
    UsageError,
    bearer_token,
    build,
    otel_takes,
)

__all__ = [
    "AuthOptions",
    "Call",
    "CheckFlags",
    "CompletionOptions",
    "ConfigOptions",
    "Options",
    "ShellFlags",
    "UsageError",
    "parse",
    "secret_values",
    "wants_json",
]

_STDIO_MARK: Final = "--"
_AUTHORIZATION: Final = "authorization"
# The options whose values are credentials, and the one whose value names a variable
# holding one: every such value is masked wherever the command writes.
_SECRET_OPTIONS: Final = ("--env", "--header", "--bearer")
_BEARER_ENV: Final = "--bearer-env"
_HTTP_OPTIONS: Final = "--header, --bearer and --bearer-env"


@dataclass(frozen=True, slots=True)
class Call:
    """The one request ``mcpl-host call`` makes: its method and params, and where its
    binary content is saved (``--output``)."""

    method: str
    params: dict[str, Any]
    output: str | None = None


@dataclass(frozen=True, slots=True)
class ShellFlags:
    """What ``mcpl-host shell`` takes besides the target: the servers of ``--config``
    to open (empty: every enabled one), the answers given up front to the servers'
    requests (None: asked at the prompt), and the history file."""

    servers: tuple[str, ...] = ()
    sampling_reply: str | None = None
    # ("accept", content), ("decline", None) or ("cancel", None)
    elicitation_reply: tuple[str, dict[str, Any] | None] | None = None
    roots: tuple[str, ...] | None = None
    history: str | None = None


@dataclass(frozen=True, slots=True)
class Options:
    """A parsed command line. Exactly one way of naming the target is set."""

    command: str
    json: bool = False
    versions: tuple[str, ...] | None = None
    timeout: float = DEFAULT_TIMEOUT
    # Values are credentials: kept out of the repr (an Options may reach a traceback).
    env: dict[str, str] = field(default_factory=dict, repr=False)
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    trace: bool = False
    verbosity: int = 0
    url: str | None = None
    stdio: tuple[str, ...] | None = None
    config: str | None = None
    server: str | None = None
    all_servers: bool = False
    demo: bool = False
    call: Call | None = None
    shell: ShellFlags | None = None
    check: CheckFlags | None = None
    # --otel (docs/cli.md, "OpenTelemetry"): given, and the collector's URL if it names one.
    otel: bool = False
    otel_endpoint: str | None = None


@dataclass(frozen=True, slots=True)
class AuthOptions:
    """A parsed ``mcpl-host auth login|status|logout`` command line. The target (a URL,
    or a config file's server) is optional for status and logout: all entries."""

    action: str  # "login", "status" or "logout"
    json: bool = False
    trace: bool = False
    verbosity: int = 0
    url: str | None = None
    config: str | None = None
    server: str | None = None
    timeout: float = LOGIN_TIMEOUT
    open_browser: bool = True
    port: int = 0
    force: bool = False
    command: str = "auth"


@dataclass(frozen=True, slots=True)
class ConfigOptions:
    """A parsed ``mcpl-host config list [--json] [FILE...]`` command line: no FILE
    means the config files of the clients installed on this machine."""

    action: str  # "list"
    json: bool = False
    files: tuple[str, ...] = ()
    verbosity: int = 0
    command: str = "config"


@dataclass(frozen=True, slots=True)
class CompletionOptions:
    """``mcpl-host completion SHELL``: print the shell's completion script."""

    shell: str
    command: str = "completion"


def parse(
    argv: Sequence[str],
    environ: Mapping[str, str] | None = None,
    stdin: Callable[[int], bytes] | None = None,
) -> Options | AuthOptions | CompletionOptions | ConfigOptions:
    """Parse a command line (without the program name). ``environ`` (default:
    ``os.environ``) is where ``--bearer-env`` finds its variable; ``stdin(limit)``
    (default: reading ``sys.stdin``) gives ``--args -`` its bytes.

    Raises :class:`UsageError` for anything wrong with it; its message never holds an
    ``--env``, ``--header`` or bearer value.
    """
    args = list(argv)
    stdio: tuple[str, ...] | None = None
    if _STDIO_MARK in args:
        cut = args.index(_STDIO_MARK)
        args, stdio = args[:cut], tuple(args[cut + 1 :])
    words, otel_took_a_word = _otel_words(args)
    parser, commands = build()
    ns, unknown = parser.parse_known_args(words)
    otel = _otel(parser, commands, ns, unknown)
    if ns.command == "completion":
        if unknown or stdio is not None:
            commands["completion"].error("completion takes only the shell's name")
        return CompletionOptions(ns.shell)
    if ns.command == "auth":
        return _auth_options(commands[f"auth {ns.action}"], ns, unknown, stdio)
    if ns.command == "config":
        sub = commands[f"config {ns.action}"]
        if unknown or stdio is not None:
            sub.error(f"unrecognized arguments: {' '.join([*unknown, *(stdio or ())])}")
        return ConfigOptions(action=ns.action, json=ns.json, files=tuple(ns.files))
    sub = commands[ns.command]
    lone = stdio is None and not ns.demo and ns.config is None
    if ns.url is not None and lone and _looks_like_a_command(ns.url):
        sub.error(_stdio_fix(sub, args, ns.url, environ))
    if unknown:
        sub.error(f"unrecognized arguments: {' '.join(unknown)}")
    given = [
        name
        for name, present in (
            ("TARGET", ns.url is not None),
            ("-- CMD", stdio is not None),
            ("--demo", ns.demo),
            ("--config", ns.config is not None),
        )
        if present
    ]
    listing = ns.command == "check" and ns.list_rules
    if len(given) != 1 and not (listing and not given):
        problem = "no target given" if not given else f"give one target, not {' and '.join(given)}"
        if not given and otel_took_a_word:
            problem += (
                " (the URL after --otel was taken for the collector's: give the collector "
                "as --otel=URL, and the TARGET after the options)"
            )
        sub.error(f"{problem}; the server is one of: {TARGET_KINDS}")
    if stdio is not None and not stdio:
        sub.error("-- must be followed by the server's command")
    if ns.config is not None and ns.server is not None and ns.all_servers:
        sub.error("give --server NAME or --all, not both")
    if ns.config is None and (ns.server is not None or ns.all_servers):
        sub.error("--server and --all go with --config FILE")
    if ns.url is not None and ns.env:
        sub.error(
            f"--env is for stdio servers (-- CMD, --demo, --config); TARGET is "
            f"{_kind_of(ns.url)}{_ENV_INSTEAD.get(_kind_of(ns.url), '')}"
        )
    headers = _headers(sub, ns, os.environ if environ is None else environ)
    call = _call(sub, ns, stdin or _read_stdin) if ns.command == "call" else None
    shell = _shell(sub, ns) if ns.command == "shell" else None
    check = check_flags(sub, ns) if ns.command == "check" else None
    return Options(
        command=ns.command,
        json=ns.json,
        versions=ns.versions,
        timeout=ns.timeout,
        env=dict(ns.env),
        headers=headers,
        trace=ns.trace,
        verbosity=ns.verbose,
        url=ns.url,
        stdio=stdio,
        config=ns.config,
        server=None if shell is not None else ns.server,
        all_servers=ns.all_servers,
        demo=ns.demo,
        call=call,
        shell=shell,
        check=check,
        otel=otel is not None,
        otel_endpoint=otel or None,
    )


def _otel(
    parser: argparse.ArgumentParser,
    commands: Mapping[str, argparse.ArgumentParser],
    ns: argparse.Namespace,
    unknown: list[str],
) -> str | None:
    """``--otel``'s value ("" without a URL; None: not given), given before the command
    or with it; a usage error with a command that has no connection's spans."""
    otel: str | None = getattr(ns, "otel", None)
    if otel is None:
        otel = ns.otel_global
    stray = any(word.partition("=")[0] == "--otel" for word in unknown)
    if (otel is not None or stray) and ns.command not in OTEL_COMMANDS:
        where = commands.get(ns.command, parser)
        if ns.command in ("auth", "config"):
            where = commands.get(f"{ns.command} {ns.action}", where)
        where.error(
            f"--otel goes with {', '.join(OTEL_COMMANDS[:-1])} and {OTEL_COMMANDS[-1]}: "
            "the commands whose requests have spans to export"
        )
    return otel


def _otel_words(args: list[str]) -> tuple[list[str], bool]:
    """``args`` with each ``--otel`` not followed by its URL made ``--otel=`` (given, no
    URL): argparse would otherwise take the next word, the command or the TARGET, for
    its optional value. Also whether a ``--otel`` took the word after it."""
    words: list[str] = []
    took = False
    for index, word in enumerate(args):
        bare = word == "--otel"
        takes = bare and index + 1 < len(args) and otel_takes(args[index + 1])
        took = took or takes
        words.append("--otel=" if bare and not takes else word)
    return words, took


def _auth_options(
    sub: argparse.ArgumentParser,
    ns: argparse.Namespace,
    unknown: list[str],
    stdio: tuple[str, ...] | None,
) -> AuthOptions:
    if unknown:
        sub.error(f"unrecognized arguments: {' '.join(unknown)}")
    if stdio is not None:
        sub.error("auth is for http(s):// servers: no -- CMD")
    if ns.url is not None and ns.config is not None:
        sub.error("give one target, not URL and --config")
    if (ns.config is None) != (ns.server is None):
        sub.error("--config and --server NAME go together")
    if ns.action == "login" and ns.url is None and ns.config is None:
        sub.error(f"no target given: URL, or --config FILE --server NAME. {AUTH_TARGETS}")
    if ns.url is not None and not _is_http(ns.url):
        sub.error(f"the URL must be http:// or https://. {AUTH_TARGETS}")
    return AuthOptions(
        action=ns.action,
        json=ns.json,
        trace=getattr(ns, "trace", False),
        verbosity=ns.verbose,
        url=ns.url,
        config=ns.config,
        server=ns.server,
        timeout=getattr(ns, "timeout", LOGIN_TIMEOUT),
        open_browser=getattr(ns, "open_browser", True),
        port=getattr(ns, "port", 0),
        force=getattr(ns, "force", False),
    )


def _is_http(url: str | None, *, sse: bool = False) -> bool:
    """Whether ``url`` is an http(s):// URL (with ``sse``, an sse+http(s):// one too)."""
    scheme, sep, _ = (url or "").partition("://")
    schemes = ("http", "https", "sse+http", "sse+https") if sse else ("http", "https")
    return bool(sep) and scheme.lower() in schemes


# What a TARGET that is not a stdio server is, by its scheme; said when an option given
# with it belongs to another kind of server. The URL itself is not repeated: its query
# or user info may hold a credential.
_KINDS: Final = (
    ("sse+http://", "an HTTP server (the legacy HTTP+SSE transport)"),
    ("sse+https://", "an HTTP server (the legacy HTTP+SSE transport)"),
    ("http://", "an HTTP server"),
    ("https://", "an HTTP server"),
    ("ws://", "a WebSocket server"),
    ("wss://", "a WebSocket server"),
    ("tcp://", "a TCP socket"),
    ("unix:", "a Unix socket"),
)
_HTTP_CREDENTIALS: Final = (
    ": its credentials go in --header 'NAME: VALUE', --bearer-env VAR or --bearer TOKEN"
)
_ENV_INSTEAD: Final = {
    "an HTTP server": _HTTP_CREDENTIALS,
    "an HTTP server (the legacy HTTP+SSE transport)": _HTTP_CREDENTIALS,
    "a WebSocket server": ": its headers and token go in a --config FILE entry",
}


def _which_target(ns: argparse.Namespace) -> str:
    """The target given, as a message about an option that does not go with it says it."""
    if ns.url is not None:
        return _kind_of(ns.url)
    if ns.demo:
        return "--demo (a stdio server: give its credentials with --env KEY=VALUE)"
    if ns.config is not None:
        return "--config (a config entry's headers and auth go in the file)"
    return "-- CMD (a stdio server: give its credentials with --env KEY=VALUE)"


def _kind_of(url: str) -> str:
    lowered = url.lower()
    return next((kind for prefix, kind in _KINDS if lowered.startswith(prefix)), "of no known kind")


def _looks_like_a_command(url: str) -> bool:
    """A TARGET with no scheme at all (``npx``, ``python``, ``./server``): the first
    word of a stdio server's command, given without the ``--`` before it. Anything
    with a colon is left to the target parser, which names every form it takes."""
    return ":" not in url


def _stdio_fix(
    sub: argparse.ArgumentParser,
    args: Sequence[str],
    command: str,
    environ: Mapping[str, str] | None,
) -> str:
    """The exact command line meant: ``--`` put before the server's first word.

    The command is not run as given: a word that is not a target could as well be a
    mistyped one, and what follows it (``-y``, ``--port``) could be the host's options
    or the server's. Every credential in the line (``--env``, ``--header`` and bearer
    values; the server's own ``--token=X``-style arguments) is masked word by word,
    before the words are quoted for a shell (quoting could split a secret's text)."""
    at = _first_positional(sub, args)
    if at is None:  # cannot be: the TARGET was read from a word; the mark goes last
        at = len(args)
    words = [*args[:at], _STDIO_MARK, *args[at:]]
    server_secrets = Redactor.from_config(args=list(args[at:])).secrets
    redactor = Redactor([*secret_values(args, environ), *server_secrets])
    shown = shlex.join(redactor.redact(word) for word in words)
    return (
        f"{command!r} is not a TARGET; to run a stdio server, put -- before its command: "
        f"mcpl-host {shown}"
    )


def _first_positional(sub: argparse.ArgumentParser, args: Sequence[str]) -> int | None:
    """The index in ``args`` of the first word that is neither the command, an option
    nor an option's value: where the TARGET was read from."""
    actions = sub._option_string_actions  # argparse has no public table of its options
    index = 1 if args and args[0] != "auth" else 2  # past the command's own name
    while index < len(args):
        word = args[index]
        if not word.startswith("-") or word == "-":
            return index
        name, eq, _ = word.partition("=")
        action = actions.get(name)
        takes_value = action is not None and action.nargs != 0 and not eq
        if takes_value and action is not None and action.nargs == "?":  # --otel [URL]
            takes_value = index + 1 < len(args) and otel_takes(args[index + 1])
        index += 2 if takes_value else 1
    return None


def _headers(
    sub: argparse.ArgumentParser, ns: argparse.Namespace, environ: Mapping[str, str]
) -> dict[str, str]:
    """The headers ``--header``, ``--bearer`` and ``--bearer-env`` ask for, checked
    against the target and each other. No message names a value."""
    given: list[tuple[str, str]] = ns.header
    if not given and ns.bearer is None and ns.bearer_env is None:
        return {}
    if not _is_http(ns.url, sse=True):
        sub.error(
            f"{_HTTP_OPTIONS} are for an http(s):// or sse+http(s):// TARGET, "
            f"not {_which_target(ns)}"
        )
    headers: dict[str, str] = {}
    for name, value in given:
        same = [n for n in headers if n.lower() == name.lower()]
        if same:
            sub.error(f"--header {name} is given twice")
        headers[name] = value
    token: str | None = ns.bearer
    if ns.bearer_env is not None:
        token = environ.get(ns.bearer_env) or None
        if token is None:
            sub.error(f"--bearer-env: environment variable {ns.bearer_env} is not set or empty")
        try:
            token = bearer_token(token)
        except argparse.ArgumentTypeError as exc:
            sub.error(f"--bearer-env {ns.bearer_env}: {exc}")
    if token is not None:
        if any(n.lower() == _AUTHORIZATION for n in headers):
            flag = "--bearer" if ns.bearer is not None else "--bearer-env"
            sub.error(f"{flag} and --header Authorization both set Authorization: give one")
        headers["Authorization"] = f"Bearer {token}"
    return headers


def _read_stdin(limit: int) -> bytes:
    return sys.stdin.buffer.read(limit)


def _call(
    sub: argparse.ArgumentParser, ns: argparse.Namespace, stdin: Callable[[int], bytes]
) -> Call:
    chosen = [
        (flag, value)
        for flag, value in (
            ("--tool", ns.tool),
            ("--resource", ns.resource),
            ("--prompt", ns.prompt),
        )
        if value is not None
    ]
    if len(chosen) != 1:
        sub.error("call needs exactly one of --tool NAME, --resource URI or --prompt NAME")
    flag, value = chosen[0]
    if flag == "--resource" and (ns.args is not None or ns.arg):
        sub.error("--args and --arg go with --tool or --prompt, not --resource")
    if ns.output is not None and not ns.output:
        sub.error("--output needs a path")
    try:
        given = arguments(ns.args, ns.arg, stdin, typed=flag == "--tool")
    except ArgumentsError as exc:
        sub.error(str(exc))
    if flag == "--tool":
        return Call("tools/call", {"name": value, "arguments": given}, ns.output)
    if flag == "--prompt":
        return Call("prompts/get", {"name": value, "arguments": given}, ns.output)
    return Call("resources/read", {"uri": value}, ns.output)


def _shell(sub: argparse.ArgumentParser, ns: argparse.Namespace) -> ShellFlags:
    reply: tuple[str, dict[str, Any] | None] | None = None
    given = ns.elicitation_reply
    if given is not None:
        if given in ("decline", "cancel"):
            reply = (given, None)
        elif given == "-":  # stdin is the shell's terminal
            sub.error("--elicitation-reply: give a JSON object, @FILE, decline or cancel")
        else:
            try:
                content = arguments(given, (), _read_stdin)
            except ArgumentsError as exc:
                message = str(exc).replace("--args", "--elicitation-reply", 1)
                sub.error(f"{message} (or give decline or cancel)")
            reply = ("accept", content)
    return ShellFlags(
        servers=tuple(ns.server or ()),
        sampling_reply=ns.sampling_reply,
        elicitation_reply=reply,
        roots=None if ns.root is None else tuple(ns.root),
        history=ns.history,
    )


def secret_values(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """Every credential a command line gives, found without parsing it, so that even a
    usage error's message can be redacted: ``--env`` values, ``--header`` values (a
    header line without a colon whole), ``--bearer`` tokens, and the value of the
    variable ``--bearer-env`` names (read from ``environ``, default ``os.environ``).
    Raises nothing."""
    environ = os.environ if environ is None else environ
    args = list(argv)
    if _STDIO_MARK in args:
        args = args[: args.index(_STDIO_MARK)]
    values: list[str] = []
    for index, arg in enumerate(args):
        option, eq, attached = arg.partition("=")
        if option not in (*_SECRET_OPTIONS, _BEARER_ENV):
            continue
        if eq:
            given = attached
        elif index + 1 < len(args):
            given = args[index + 1]
        else:
            continue
        if option == "--env":
            values.append(given.partition("=")[2])
        elif option == "--header":
            _, colon, value = given.partition(":")
            values += [value.strip(), value] if colon else [given]
            # "Bearer TOKEN": the token alone too, as the server may echo it.
            values.append(value.strip().partition(" ")[2].strip())
        elif option == "--bearer":
            values += [given, f"Bearer {given}"]
        else:
            token = environ.get(given, "")
            values += [token, f"Bearer {token}"]
    return [v for v in values if v]


def wants_json(argv: Sequence[str]) -> bool:
    """Whether ``--json`` is among the options (before any ``--``). Raises nothing."""
    args = list(argv)
    if _STDIO_MARK in args:
        args = args[: args.index(_STDIO_MARK)]
    return "--json" in args
