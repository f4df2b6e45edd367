"""Server configuration files, in the formats users already have.

Read as their owners write them (docs/cli.md, "Config files"): Claude Desktop's
``claude_desktop_config.json``, Claude Code's ``.mcp.json`` and ``~/.claude.json``
(``mcpServers``, and ``projects.<dir>.mcpServers`` for the current directory), Cursor's
and Windsurf's ``mcpServers`` files, VS Code's ``mcp.json`` (``servers`` and ``inputs``)
and ``settings.json`` (``mcp.servers``)::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@scope/server"],
                  "env": {"TOKEN": "${GITHUB_TOKEN}"}, "envFile": ".env", "cwd": "/srv"},
        "remote": {"type": "sse", "url": "https://host/sse", "headers": {"X-Key": "${env:KEY}"}}
    }}

A stdio server has ``command`` (``args``, ``env``, ``envFile``, ``cwd``); the others a
``url`` (Windsurf: ``serverUrl``): ``tcp://``, ``unix:``, ``ws(s)://`` (``headers``,
``token``), ``http(s)://`` (``headers``, ``auth``: :class:`AuthSpec`). ``type`` (stdio,
http or streamable-http, sse, ws) must agree with it; ``sse`` picks the legacy HTTP+SSE
transport. Variables are expanded in every string the host uses (:mod:`._expand`).

Modules: :mod:`._file` (a file: its format, inputs, warnings), :mod:`._entry` (one
server), :mod:`._keys` (its keys), :mod:`._expand` (variables), :mod:`._envfile`,
:mod:`._jsonc`, :mod:`._auth`, :mod:`._discover` (the clients' files on this machine),
:mod:`._filter` (what of a server the manager's catalogue shows).

Every error names the file and the key, never a header value, a token or a secret.
"""

from __future__ import annotations

from ._auth import TOKEN_ENDPOINT_AUTH_METHODS, AuthSpec
from ._discover import KnownFile, candidate_files, discover
from ._entry import ServerConfig
from ._expand import INPUT_ENV_PREFIX, InputResolver, InputSpec, input_env_name
from ._file import (
    MAX_CONFIG_BYTES,
    ConfigFile,
    load_config,
    parse_config,
    parse_document,
    read_config,
)
from ._filter import CatalogueFilter
from ._keys import IGNORED_KEYS

__all__ = [
    "IGNORED_KEYS",
    "INPUT_ENV_PREFIX",
    "MAX_CONFIG_BYTES",
    "TOKEN_ENDPOINT_AUTH_METHODS",
    "AuthSpec",
    "CatalogueFilter",
    "ConfigFile",
    "InputResolver",
    "InputSpec",
    "KnownFile",
    "ServerConfig",
    "candidate_files",
    "discover",
    "input_env_name",
    "load_config",
    "parse_config",
    "parse_document",
    "read_config",
]
