"""The ``mcpl-host`` command line's argparse parser: its commands, options and help
texts, and the checks of single option values (a header line, a timeout, a port).

What the options mean together (which target, which request) is :mod:`.args`'s; the
completion scripts are made from this parser (:mod:`.completion`).
"""

from __future__ import annotations

import argparse
import re
from typing import Final, NoReturn

from .. import __version__
from .checkopts import CHECK_EXIT_STATUS, add_check_options

__all__ = [
    "AUTH_TARGETS",
    "CHECK_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "LOGIN_TIMEOUT",
    "OTEL_COMMANDS",
    "SHELLS",
    "TARGET_KINDS",
    "UsageError",
    "bearer_token",
    "build",
    "otel_takes",
    "parser",
]

DEFAULT_TIMEOUT: Final = 30.0
# check: a conforming server answers at once; a probe waiting for silence waits less.
CHECK_TIMEOUT: Final = 5.0
# How long a login waits for the person in the browser: reading a consent page, maybe
# signing in first, takes minutes, not the seconds a server gets.
LOGIN_TIMEOUT: Final = 300.0
# RFC 9110 token characters: what a header name may be made of.
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
SHELLS: Final = ("bash", "zsh", "fish")
# The commands whose requests go through a Connection, and so have spans to export
# (check probes with raw transports).
OTEL_COMMANDS: Final = ("connect", "call", "shell")
_OTEL_HELP: Final = (
    "export spans and metrics over OTLP/HTTP to URL (default: $OTEL_EXPORTER_OTLP_ENDPOINT, "
    "else http://localhost:4318); needs pip install 'mcpl-host[otel-export]' (docs/cli.md)"
)
_EXIT_STATUS: Final = (
    "Exit status: 0 success, 1 the server failed the request or broke the protocol, "
    "2 bad usage or configuration, 3 the tool answered isError: true, 4 authorization "
    "required (run: mcpl-host auth login TARGET), 5 the authorization flow failed, 6 the "
    "server could not be reached, 128+N ended by signal N (130: Ctrl-C). See docs/cli.md."
)
# Every way of naming a server, for the help and for every message about targets.
TARGET_KINDS: Final = (
    "-- CMD [ARGS...] (a stdio server: the program and its arguments, after --), "
    "tcp://HOST:PORT, unix:PATH, ws(s)://HOST[:PORT][/PATH], http(s)://HOST[:PORT][/PATH], "
    "sse+http(s)://HOST[:PORT][/PATH] (the legacy HTTP+SSE transport), --demo (the "
    "bundled demo server), or --config FILE (a server of a config file)"
)
AUTH_TARGETS: Final = (
    "Only HTTP servers log in with OAuth: give the http(s):// URL (for an "
    "sse+http(s):// TARGET, the same URL without sse+), or --config FILE --server NAME. "
    "The other targets of connect and call (-- CMD [ARGS...] for a stdio server, "
    "tcp://HOST:PORT, unix:PATH, ws(s)://, --demo) take no login: a stdio server's "
    "credentials go in --env or its config entry's env."
)


class UsageError(Exception):
    """The command line is wrong. ``usage`` is the usage text of the command concerned."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so that ``--json`` can still answer
    with one JSON object (argparse's own exit status for usage errors is 2 as well)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage())


def _env_entry(text: str) -> tuple[str, str]:
    # The value is never repeated in a message: it is where credentials go.
    name, eq, value = text.partition("=")
    if not eq or not name:
        raise argparse.ArgumentTypeError("expected KEY=VALUE (a name, '=', then the value)")
    return name, value


def _header_entry(text: str) -> tuple[str, str]:
    # Neither the value nor the text is ever repeated: a header line missing its colon
    # is most likely "Authorization Bearer TOKEN".
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not name:
        raise argparse.ArgumentTypeError("expected 'Name: value' (a header name, ':', the value)")
    if not _HEADER_NAME.fullmatch(name):
        raise argparse.ArgumentTypeError(
            "a header name is letters, digits and !#$%&'*+.^_`|~- only (the value is not shown)"
        )
    if not value.isascii() or any(ch in value for ch in "\r\n\0"):
        raise argparse.ArgumentTypeError(
            f"the value of header {name} must be ASCII without CR, LF or NUL (it is not shown)"
        )
    return name, value


def bearer_token(text: str) -> str:
    if not text or not text.isascii() or any(ch.isspace() or ch == "\0" for ch in text):
        raise argparse.ArgumentTypeError(
            "a bearer token is ASCII without spaces or control characters (it is not shown)"
        )
    return text


def _timeout(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError("the timeout must be a positive number of seconds")
    return seconds


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number (0..65535): {text!r}")
    return int(text)


def otel_takes(word: str) -> bool:
    """Whether the word after ``--otel`` is its value: only an http(s):// URL is (the
    value is optional, and the word after it is as often the command or the TARGET)."""
    scheme, sep, rest = word.partition("://")
    return bool(sep and rest) and scheme.lower() in ("http", "https")


def _otel_endpoint(text: str) -> str:
    # "" is --otel without a URL. The URL is not repeated: it may hold a credential.
    if text and not otel_takes(text):
        raise argparse.ArgumentTypeError(
            "the collector's URL is http(s)://HOST[:PORT] (OTLP over HTTP; it is not shown)"
        )
    return text


def _add_otel(parser: argparse._ActionsContainer, dest: str) -> None:
    parser.add_argument(
        "--otel",
        dest=dest,
        nargs="?",
        const="",
        type=_otel_endpoint,
        metavar="URL",
        help=_OTEL_HELP,
    )


def _versions(text: str) -> tuple[str, ...]:
    versions = tuple(v.strip() for v in text.split(",") if v.strip())
    if not versions:
        raise argparse.ArgumentTypeError("give at least one revision, e.g. 2025-06-18")
    return versions


def _add_common(
    parser: argparse.ArgumentParser,
    *,
    many: bool,
    interactive: bool = False,
    checking: bool = False,
) -> None:
    """The options connect, call, shell and check take; ``--all`` only where several
    servers make sense. ``interactive`` (shell): no ``--json``, and ``--server``
    repeatable (without it, every enabled server of ``--config``). ``checking`` (check):
    no ``--trace`` (the report quotes the wire itself), ``-v`` shows passing rules'
    evidence, and ``--timeout`` bounds each answer, 5 s by default."""
    out = parser.add_argument_group("output")
    if interactive:
        parser.set_defaults(json=False)
    else:
        out.add_argument(
            "--json", action="store_true", help="print exactly one JSON object on stdout"
        )
    if checking:
        parser.set_defaults(trace=False)
    else:
        out.add_argument(
            "--trace",
            action="store_true",
            help="log every wire line on stderr (redacted, escaped, cut)",
        )
    out.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="show the evidence of passing rules too, every line of it"
        if checking
        else "log more on stderr (-v: info, -vv: debug)",
    )
    if not checking:  # check's probes are not a connection's requests: nothing to export
        # Its own dest: a subcommand's default would overwrite the global --otel's value.
        _add_otel(out, "otel")
    conn = parser.add_argument_group("connection")
    conn.add_argument(
        "--versions",
        type=_versions,
        metavar="V1,V2",
        help="the revisions to probe (default: all implemented)"
        if checking
        else "the protocol revisions allowed (default: all implemented; the newest is offered)",
    )
    conn.add_argument(
        "--timeout",
        type=_timeout,
        default=CHECK_TIMEOUT if checking else DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"how long an answer may take (default {CHECK_TIMEOUT:g})"
        if checking
        else f"bound for opening, the handshake and each request (default {DEFAULT_TIMEOUT:g})",
    )
    conn.add_argument(
        "--env",
        type=_env_entry,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment variable for a stdio server (repeatable); its value is redacted",
    )
    http = parser.add_argument_group(
        "HTTP authorization (http:// and https:// TARGETs only; every value is redacted)"
    )
    http.add_argument(
        "--header",
        type=_header_entry,
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="a header sent with every request (repeatable)",
    )
    who = http.add_mutually_exclusive_group()
    who.add_argument(
        "--bearer",
        type=bearer_token,
        metavar="TOKEN",
        help="send 'Authorization: Bearer TOKEN' (prefer --bearer-env: a command line is "
        "visible to other users of the machine)",
    )
    who.add_argument(
        "--bearer-env",
        metavar="VAR",
        help="send 'Authorization: Bearer' with the token read from environment variable VAR",
    )
    where = parser.add_argument_group(
        "target (one of)",
        f"The server is one of: {TARGET_KINDS}. -- CMD comes last on the line: everything "
        "after -- is the server's command line, its own --flags included.",
    )
    where.add_argument(
        "url",
        nargs="?",
        metavar="TARGET",
        help="tcp://HOST:PORT, unix:PATH, ws(s)://HOST/PATH, http(s)://HOST/PATH or "
        "sse+http(s)://HOST/PATH",
    )
    where.add_argument("--demo", action="store_true", help="the bundled demo server")
    where.add_argument(
        "--config",
        metavar="FILE",
        help="a config file of Claude Desktop, Claude Code, VS Code, Cursor or Windsurf",
    )
    if interactive:
        where.add_argument(
            "--server",
            action="append",
            metavar="NAME",
            help="a server of --config to open (repeatable; default: every enabled one)",
        )
    else:
        where.add_argument(
            "--server",
            metavar="NAME",
            help="the server of --config to use (needed when it has more than one enabled)",
        )
    if many:
        where.add_argument(
            "--all", dest="all_servers", action="store_true", help="every server of --config"
        )
    else:
        parser.set_defaults(all_servers=False)


def build() -> tuple[_Parser, dict[str, argparse.ArgumentParser]]:
    """The parser and its subcommands' parsers (for errors that concern one of them)."""
    parser = _Parser(
        prog="mcpl-host",
        allow_abbrev=False,
        description="Connect to an MCP server and show what it offers, make one request, or "
        "check its wire conformance. "
        f"The server is one of: {TARGET_KINDS}.",
        epilog=_EXIT_STATUS,
    )
    parser.add_argument("--version", action="version", version=f"mcpl-host {__version__}")
    _add_otel(parser, "otel_global")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    connect = commands.add_parser(
        "connect",
        help="handshake, then list tools, resources, templates and prompts",
        description="Run the handshake, list what the server advertises, and report.",
        allow_abbrev=False,
    )
    _add_common(connect, many=True)
    call = commands.add_parser(
        "call",
        help="make one request (a tool call, a resource read, a prompt get)",
        description="Run the handshake, make one request, and print its result.",
        epilog=_EXIT_STATUS,
        allow_abbrev=False,
    )
    _add_common(call, many=False)
    what = call.add_argument_group("the request (one of)")
    what.add_argument("--tool", metavar="NAME", help="tools/call this tool")
    what.add_argument("--resource", metavar="URI", help="resources/read this URI")
    what.add_argument("--prompt", metavar="NAME", help="prompts/get this prompt")
    what.add_argument(
        "--args",
        metavar="JSON|@FILE|-",
        help="the tool's or prompt's arguments: a JSON object inline, in FILE (@FILE) or "
        "on stdin (-)",
    )
    what.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one argument (repeatable), set over --args: VALUE is taken as JSON when it "
        'is valid JSON (5, true, null, {...}, "text"), else as a string (for --prompt, '
        "always the string as written: a prompt's arguments are strings)",
    )
    what.add_argument(
        "--output",
        metavar="PATH",
        help="save the result's image, audio and blob content, base64-decoded: to PATH "
        "(exactly one such item), or into PATH when it is a directory (one file per item)",
    )
    _add_shell(commands)
    check = commands.add_parser(
        "check",
        help="check a server's wire conformance, rule by rule (docs/check.md)",
        description="Probe the server rule by rule, each probe in connections of its own, "
        "and report each rule's verdict (pass, fail, warn, n/a) with the wire lines that "
        "show it. Nothing sent can harm a server that follows the spec: no tool is called "
        "unless --call names it.",
        epilog=CHECK_EXIT_STATUS,
        allow_abbrev=False,
    )
    _add_common(check, many=False, checking=True)
    add_check_options(check)
    auth = commands.add_parser(
        "auth",
        help="log in to an HTTP server that needs OAuth, see or forget stored tokens",
        description="OAuth for HTTP servers: tokens are kept in the user's token file "
        "($MCPL_HOST_AUTH_FILE, else $XDG_STATE_HOME/mcpl-host/auth.json, else "
        f"~/.local/state/mcpl-host/auth.json). {AUTH_TARGETS}",
        allow_abbrev=False,
    )
    actions = auth.add_subparsers(dest="action", required=True, metavar="ACTION")
    login = actions.add_parser(
        "login",
        help="authorize in a browser and store the tokens",
        description="Run the OAuth authorization code flow for the server: a browser "
        "opens on the authorization server (the URL is printed too, for when none can), "
        "the redirect comes back to a listener on 127.0.0.1, and the tokens are stored.",
        allow_abbrev=False,
    )
    _add_auth_common(login, required=True)
    login.add_argument(
        "--trace", action="store_true", help="show each HTTP exchange of the flow on stderr"
    )
    login.add_argument(
        "--timeout",
        type=_timeout,
        default=LOGIN_TIMEOUT,
        metavar="SECONDS",
        help=f"how long to wait for the browser's redirect (default {LOGIN_TIMEOUT:g})",
    )
    login.add_argument(
        "--no-browser",
        dest="open_browser",
        action="store_false",
        help="only print the URL to open (for another machine's browser)",
    )
    login.add_argument(
        "--port",
        type=_port,
        default=0,
        metavar="PORT",
        help="the loopback port of the redirect URI (default: the one registered "
        "before, else any free one)",
    )
    login.add_argument(
        "--force",
        action="store_true",
        help="log in again even when the stored tokens are still good",
    )
    status = actions.add_parser(
        "status",
        help="list stored logins (never the tokens)",
        description="List the stored tokens' issuer, client id, resource, expiry and scope; "
        "with a TARGET, only those for that server.",
        allow_abbrev=False,
    )
    _add_auth_common(status, required=False)
    logout = actions.add_parser(
        "logout",
        help="forget stored tokens",
        description="Forget the stored tokens for the server, or every stored token and "
        "client registration without a TARGET. Nothing is revoked at the authorization "
        "server.",
        allow_abbrev=False,
    )
    _add_auth_common(logout, required=False)
    config = commands.add_parser(
        "config",
        help="list the MCP client config files on this machine and their servers",
        description="Config files of Claude Desktop, Claude Code, VS Code, Cursor and Windsurf.",
        allow_abbrev=False,
    )
    config_actions = config.add_subparsers(dest="action", required=True, metavar="ACTION")
    config_list = config_actions.add_parser(
        "list",
        help="show each config file found (or given) and its servers",
        description="Show each config file and its servers: name, type and target "
        "(never env values, header values or tokens). Without FILE: the files of the "
        "clients installed on this machine (user files under $HOME, %APPDATA% or "
        "$XDG_CONFIG_HOME) and the project files of the current directory (.mcp.json, "
        ".vscode/mcp.json, .cursor/mcp.json).",
        allow_abbrev=False,
    )
    config_list.add_argument(
        "--json", action="store_true", help="print exactly one JSON object on stdout"
    )
    config_list.add_argument("files", nargs="*", metavar="FILE", help="config files to show")
    completion = commands.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="Print the completion script for SHELL, made from this command's own "
        "options. bash: source <(mcpl-host completion bash); zsh: source <(mcpl-host "
        "completion zsh); fish: mcpl-host completion fish | source.",
        allow_abbrev=False,
    )
    completion.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    return parser, {
        "config list": config_list,
        "connect": connect,
        "call": call,
        "check": check,
        "auth": auth,
        "auth login": login,
        "auth status": status,
        "auth logout": logout,
        "completion": completion,
        "shell": commands.choices["shell"],
    }


def parser() -> argparse.ArgumentParser:
    """The whole command line's parser (its subcommands' parsers within): what the
    completion scripts are made from."""
    return build()[0]


def _add_auth_common(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log more on stderr (-v, -vv)"
    )
    where = parser.add_argument_group(
        "target (one of)" if required else "target (optional: all stored entries without)",
        AUTH_TARGETS,
    )
    where.add_argument("url", nargs="?", metavar="URL", help="the server's http(s):// URL")
    where.add_argument("--config", metavar="FILE", help="a client's config file (with --server)")
    where.add_argument("--server", metavar="NAME", help="the server of --config")


def _add_shell(commands: argparse._SubParsersAction[_Parser]) -> None:
    """``mcpl-host shell``: its target options are connect's; the answers to the
    server's own requests can be given up front (docs/cli.md, "mcpl-host shell")."""
    shell = commands.add_parser(
        "shell",
        help="an interactive session over one or several servers that stay connected",
        description="Connect, then take commands at a prompt: list and call tools, read "
        "resources, get prompts, watch notifications and logs, answer the servers' "
        "sampling, elicitation and roots requests, show the wire trace. Type help at "
        "the prompt. Needs the shell extra: pip install 'mcpl-host[shell]'.",
        allow_abbrev=False,
    )
    _add_common(shell, many=False, interactive=True)
    answers = shell.add_argument_group(
        "answers to the servers' requests (without them, each is asked at the prompt)"
    )
    answers.add_argument(
        "--sampling-reply",
        metavar="TEXT",
        help="answer every sampling/createMessage with this text (model mcpl-host-shell)",
    )
    answers.add_argument(
        "--elicitation-reply",
        metavar="JSON|decline|cancel",
        help="answer every elicitation/create: accept with this JSON object as the "
        "content, or decline, or cancel",
    )
    answers.add_argument(
        "--root",
        action="append",
        default=None,
        metavar="URI",
        help="a root offered to the servers (repeatable; a path is made a file:// URI); "
        "roots/list is then answered with these, never asked",
    )
    shell.add_argument(
        "--history",
        metavar="FILE",
        help="keep the command history in FILE (default: this session only; arguments "
        "typed may hold secrets)",
    )
