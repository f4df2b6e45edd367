"""What the host says of a bad config file."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mcpl_host import ConfigurationError
from mcpl_host.config import ServerConfig


def error_of(load: Callable[[], Mapping[str, ServerConfig]], source: str) -> str:
    """The file's own error (one that makes the whole file unusable), or else the
    problem of its one unusable entry, as ``mcpl-host`` reports it (``SOURCE: key
    '...' ...``): an entry of the wrong shape leaves the file readable."""
    try:
        servers = load()
    except ConfigurationError as exc:
        return exc.message
    (problem,) = [config.problem for config in servers.values() if config.problem is not None]
    return f"{source}: {problem}"
