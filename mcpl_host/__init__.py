"""mcpl_host: a trio-based, host-side connection manager for MCP and MCPL servers."""

from __future__ import annotations

from .protocol.envelope import Outcome, RequestId
from .protocol.errors import (
    ConfigurationError,
    InitializeError,
    McplHostError,
    ProtocolError,
    VersionError,
)
from .protocol.framing import DEFAULT_MAX_MESSAGE_BYTES
from .protocol.profiles import KNOWN_REVISIONS, PROFILES, Profile
from .protocol.redact import Redactor

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "KNOWN_REVISIONS",
    "PROFILES",
    "ConfigurationError",
    "InitializeError",
    "McplHostError",
    "Outcome",
    "Profile",
    "ProtocolError",
    "Redactor",
    "RequestId",
    "VersionError",
]

__version__ = "0.1.0.dev0"
