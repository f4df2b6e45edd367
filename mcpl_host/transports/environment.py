"""The environment a stdio server's process starts with.

A host typically runs with credentials in its environment (cloud keys, API tokens, a
GitHub token, database URLs). A tool server is third-party code: it gets only what it
is configured with, plus the small allowlist below that programs need to run at all,
so it never sees the host's credentials by accident (DESIGN 3.11).

The allowlist, and why each group is on it:

- finding programs and the user: ``PATH``, ``HOME``, ``USER``, ``LOGNAME``, ``SHELL``;
- terminal and text: ``TERM``, ``LANG``, ``LANGUAGE``, every ``LC_*``, ``TZ``,
  ``PYTHONIOENCODING`` (so a server's stdio encoding matches the host's framing);
- scratch space: ``TMPDIR``, ``TMP``, ``TEMP``;
- TLS trust stores, so a server behind a corporate CA can reach its API:
  ``SSL_CERT_FILE``, ``SSL_CERT_DIR``, ``REQUESTS_CA_BUNDLE``, ``NODE_EXTRA_CA_CERTS``;
- proxies, in both spellings tools read: ``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``,
  ``http_proxy``, ``https_proxy``, ``no_proxy`` (a proxy URL can carry the proxy's own
  login; a server needs it to reach the network at all);
- Windows basics without which processes fail to start or find their profile:
  ``SYSTEMROOT``, ``COMSPEC``, ``PATHEXT``, ``APPDATA``, ``LOCALAPPDATA``, ``USERPROFILE``;
- per-user directories: ``XDG_RUNTIME_DIR``, ``XDG_CONFIG_HOME``, ``XDG_CACHE_HOME``,
  ``XDG_DATA_HOME``;
- launchers that servers are commonly started through (``npx``, ``nvm``):
  ``NVM_DIR``, ``npm_config_cache``.

Anything else a server needs goes in its configured ``env``, which always wins over the
host's value. ``inherit=True`` is the explicit opt-out: the whole host environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

__all__ = ["ALLOWED_PREFIXES", "ALLOWED_VARIABLES", "child_environment"]

ALLOWED_VARIABLES: Final = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "TERM",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "TMP",
        "TEMP",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "SYSTEMROOT",
        "COMSPEC",
        "PATHEXT",
        "APPDATA",
        "LOCALAPPDATA",
        "USERPROFILE",
        "XDG_RUNTIME_DIR",
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "NVM_DIR",
        "npm_config_cache",
        "PYTHONIOENCODING",
    }
)
ALLOWED_PREFIXES: Final = ("LC_",)


def _allowed(name: str) -> bool:
    return name in ALLOWED_VARIABLES or name.startswith(ALLOWED_PREFIXES)


def child_environment(
    configured: Mapping[str, str],
    *,
    inherit: bool = False,
    host_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for a stdio server: allowlisted host variables plus ``configured``.

    ``host_env`` defaults to this process's environment. With ``inherit=True`` every
    host variable is passed. ``configured`` wins over the host's value either way.
    Raises nothing.
    """
    host = os.environ if host_env is None else host_env
    env = dict(host) if inherit else {n: v for n, v in host.items() if _allowed(n)}
    env.update(configured)
    return env
