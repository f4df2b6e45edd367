"""A config file as a whole: which client's format it is, where its servers are, its
VS Code ``inputs``, and the warnings it earns."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec

from ..protocol.errors import ConfigurationError
from ..protocol.redact import log_value
from ._entry import EntryContext, ServerConfig, parse_entry
from ._expand import Expander, InputResolver, InputSpec, Unresolved, input_env_name
from ._jsonc import strip_jsonc

__all__ = [
    "MAX_CONFIG_BYTES",
    "ConfigFile",
    "load_config",
    "parse_config",
    "parse_document",
    "read_config",
]

_FORMATS: Final = (
    "mcpServers (Claude Desktop, Claude Code, Cursor, Windsurf), "
    "servers (VS Code mcp.json) or mcp.servers (VS Code settings.json)"
)
_INPUT_TYPES: Final = ("promptString", "pickString", "command")
_INPUT_ID: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,63}")
# Project directories of a client: the workspace is the directory holding them.
_PROJECT_DIRS: Final = (".vscode", ".cursor")


# A config file is a person's, but discovery reads whatever sits at the known places (a
# ~/.claude.json grows with every project's history): read no more than this.
MAX_CONFIG_BYTES: Final = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """A read config file: its servers by name in file order, the warnings it earned
    (unknown keys, keys ignored, bad ``envFile`` lines; each names the file and the
    key), its ``format`` (``mcpServers``, ``claude-code`` for ``~/.claude.json``,
    ``vscode`` or ``vscode-settings``) and the key its servers are under."""

    path: str
    format: str
    servers: dict[str, ServerConfig]
    warnings: tuple[str, ...] = ()
    servers_key: str = "mcpServers"


def load_config(
    path: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    inputs: InputResolver | None = None,
    workspace: str | None = None,
) -> dict[str, ServerConfig]:
    """Read a config file; return its servers by name, in file order (the warnings are
    :func:`read_config`'s). See :func:`read_config` for the arguments and errors."""
    return read_config(path, environ=environ, inputs=inputs, workspace=workspace).servers


def read_config(
    path: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    inputs: InputResolver | None = None,
    workspace: str | None = None,
) -> ConfigFile:
    """Read a config file in any client's format (docs/cli.md, "Config files").

    ``environ`` (default ``os.environ``) is where variables, ``token_env`` and
    ``client_secret_env`` are read; ``inputs`` answers ``${input:ID}`` for the servers
    it wants to (:data:`~mcpl_host.config.InputResolver`; without one, only
    ``MCPL_HOST_INPUT_<ID>`` and an input's default do); ``workspace`` is
    ``${workspaceFolder}`` (default: the directory holding ``.vscode``/``.cursor`` for
    a file in one, else the current directory).

    Raises :class:`~mcpl_host.ConfigurationError` naming the file (and the key) when the
    file cannot be read, is over :data:`MAX_CONFIG_BYTES`, is not JSON (comments and
    trailing commas are allowed) or has no servers object; a malformed entry is that
    server's ``problem``.
    """
    file = str(path)
    try:
        with open(file, "rb") as opened:
            raw = opened.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigurationError(f"{file}: cannot read the config file ({exc.strerror})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigurationError(f"{file}: the config file is over {MAX_CONFIG_BYTES} bytes")
    data = _decode(raw, file)
    if workspace is None:
        parent = Path(file).resolve().parent
        workspace = str(parent.parent) if parent.name in _PROJECT_DIRS else os.getcwd()
    return parse_document(
        data,
        source=file,
        environ=environ,
        inputs=inputs,
        workspace=workspace,
        base=str(Path(file).resolve().parent),
    )


def parse_config(
    data: Any,
    *,
    source: str = "<config>",
    environ: Mapping[str, str] | None = None,
    inputs: InputResolver | None = None,
    workspace: str | None = None,
) -> dict[str, ServerConfig]:
    """The servers of an already-decoded config object (see :func:`read_config`)."""
    return parse_document(
        data, source=source, environ=environ, inputs=inputs, workspace=workspace
    ).servers


def _decode(raw: bytes, file: str) -> Any:
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        first = exc
    try:
        text = raw.decode("utf-8-sig")
        return msgspec.json.decode(strip_jsonc(text).encode())
    except (UnicodeDecodeError, msgspec.DecodeError):
        raise ConfigurationError(f"{file}: not valid JSON ({first})") from None


def parse_document(
    data: Any,
    *,
    source: str = "<config>",
    environ: Mapping[str, str] | None = None,
    inputs: InputResolver | None = None,
    workspace: str | None = None,
    base: str | None = None,
) -> ConfigFile:
    """A decoded config object as a :class:`ConfigFile` (see :func:`read_config`);
    ``base`` is the directory ``${file:PATH}`` is relative to (default: the workspace)."""
    env = os.environ if environ is None else environ
    workspace = os.getcwd() if workspace is None else workspace
    if not isinstance(data, dict):
        raise ConfigurationError(f"{source}: the top level must be an object with {_FORMATS}")
    fmt, key, entries, raw_inputs = _locate(data, source, workspace)
    specs = _inputs(raw_inputs, source, key)
    home = env.get("HOME") or env.get("USERPROFILE") or str(Path.home())
    answered: dict[str, str] = {}

    def expander(server: str, disabled: bool) -> Expander:
        def input_value(input_id: str) -> str:
            return _input_value(input_id, server, disabled, specs, answered, env, inputs)

        return Expander(env, workspace, home, Path(base or workspace), input_value)

    ctx = EntryContext(source, env, workspace, expander)
    servers: dict[str, ServerConfig] = {}
    warnings: list[str] = []
    for entry_key, name, entry in entries:
        try:
            config, more = parse_entry(name, entry, entry_key, ctx)
        except ConfigurationError as exc:
            # One entry of the wrong shape (a type another client knows and we do not,
            # say) is that server's problem: the file is someone's, written for other
            # clients too, and its other servers stay usable.
            problem = exc.message.removeprefix(f"{source}: ")
            disabled = isinstance(entry, dict) and entry.get("disabled") is True
            config = ServerConfig(name, None, f"{source}:{entry_key}", problem, disabled)
            more = []
        servers.pop(name, None)  # a later scope wins, and comes last
        servers[name] = config
        warnings += more
    return ConfigFile(source, fmt, servers, tuple(warnings), key)


def _locate(
    data: dict[str, Any], source: str, workspace: str
) -> tuple[str, str, list[tuple[str, str, Any]], Any]:
    """(format, servers key, [(key, name, entry)], raw inputs) of a document."""
    found = [k for k in ("mcpServers", "servers") if k in data]
    if len(found) > 1:
        raise ConfigurationError(f"{source}: has both mcpServers and servers: give one")
    if "mcpServers" in data or isinstance(data.get("projects"), dict):
        entries = _entries(data.get("mcpServers", {}), source, "mcpServers")
        fmt = "mcpServers"
        projects = data.get("projects")
        if isinstance(projects, dict):
            # ~/.claude.json: the user's servers, then those of the project in the
            # current directory (Claude Code's local scope wins over the user scope).
            fmt = "claude-code"
            project = projects.get(workspace)
            if isinstance(project, dict) and "mcpServers" in project:
                key = f"projects.{workspace}.mcpServers"
                entries += _entries(project["mcpServers"], source, key)
        return fmt, "mcpServers", entries, None
    if "servers" in data:
        return "vscode", "servers", _entries(data["servers"], source, "servers"), data.get("inputs")
    mcp = data.get("mcp")
    if isinstance(mcp, dict) and "servers" in mcp:
        entries = _entries(mcp["servers"], source, "mcp.servers")
        return "vscode-settings", "mcp.servers", entries, mcp.get("inputs")
    raise ConfigurationError(f"{source}: no servers: expected {_FORMATS}")


def _entries(servers: Any, source: str, key: str) -> list[tuple[str, str, Any]]:
    if not isinstance(servers, dict):
        raise ConfigurationError(f"{source}: key '{key}' must be an object of servers")
    return [(f"{key}.{name}", name, entry) for name, entry in servers.items()]


def _inputs(raw: Any, source: str, key: str) -> dict[str, InputSpec]:
    if raw is None:
        return {}
    at = f"{source}: key '{key.rpartition('servers')[0]}inputs'"
    if not isinstance(raw, list):
        raise ConfigurationError(f"{at} must be a list of inputs")
    specs: dict[str, InputSpec] = {}
    for index, item in enumerate(raw):
        where = f"{at}[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
            raise ConfigurationError(f"{where} must be an object with an id")
        kind = item.get("type", "promptString")
        if kind not in _INPUT_TYPES:
            raise ConfigurationError(f"{where}.type must be one of {', '.join(_INPUT_TYPES)}")
        description, password, default = (
            item.get("description"),
            item.get("password", False),
            item.get("default"),
        )
        options = item.get("options", [])
        if description is not None and not isinstance(description, str):
            raise ConfigurationError(f"{where}.description must be a string")
        if not isinstance(password, bool):
            raise ConfigurationError(f"{where}.password must be true or false")
        if default is not None and not isinstance(default, str):
            raise ConfigurationError(f"{where}.default must be a string")
        if not isinstance(options, list):
            raise ConfigurationError(f"{where}.options must be a list")
        choices = tuple(
            o if isinstance(o, str) else str(o.get("value", ""))
            for o in options
            if isinstance(o, (str, dict))
        )
        specs[item["id"]] = InputSpec(item["id"], kind, description, password, default, choices)
    return specs


def _input_value(  # noqa: PLR0917 - one call site
    input_id: str,
    server: str,
    disabled: bool,
    specs: dict[str, InputSpec],
    answered: dict[str, str],
    environ: Mapping[str, str],
    resolver: InputResolver | None,
) -> str:
    """The answer to ``${input:ID}``: the environment's ``MCPL_HOST_INPUT_<ID>``, else the
    resolver's (asked once per file: VS Code too asks once), else the input's default.
    Raises Unresolved naming the input and how to give it."""
    if input_id in answered:
        return answered[input_id]
    env_name = input_env_name(input_id)
    shown = repr(input_id) if _INPUT_ID.fullmatch(input_id) else "an input"
    given = environ.get(env_name)
    if given is not None:
        answered[input_id] = given
        return given
    # An input no entry of ``inputs`` declares is still answerable; asked hidden.
    spec = specs.get(input_id) or InputSpec(input_id, password=True)
    how = f"set the environment variable {env_name}"
    if disabled:
        raise Unresolved(f"input {shown} was not asked: the server is disabled")
    if spec.type == "command":
        raise Unresolved(f"input {shown} runs a VS Code command, which mcpl-host cannot: {how}")
    answer: str | None = None
    if resolver is not None:
        try:
            answer = resolver(server, spec)
        except ConfigurationError as exc:
            raise Unresolved(f"input {shown}: {exc.message}") from None
    if answer is None and spec.default is not None:
        return spec.default  # not kept: another server's entry may still ask a person
    if answer is None:
        said = f" ({log_value(spec.description, 80)})" if spec.description else ""
        raise Unresolved(
            f"input {shown}{said} has no value: {how}, or run mcpl-host on a terminal to be asked"
        )
    answered[input_id] = answer
    return answer
