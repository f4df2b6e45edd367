"""What the authorization flow keeps between requests and across restarts: the client
registration an authorization server knows the host by, and the tokens it issued."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["ClientInfo", "TokenSet"]

# A token is refreshed this long before it expires: a request sent in its last seconds
# could reach the server after it has.
REFRESH_MARGIN = 30.0


@dataclass(frozen=True, slots=True)
class ClientInfo:
    """The host's identity at one authorization server (keyed by its issuer).

    ``source`` says how it was had: ``"preregistered"`` (configured), ``"cimd"`` (a
    Client ID Metadata Document URL is the client id) or ``"dcr"`` (RFC 7591 dynamic
    registration). ``client_secret`` is a secret: never logged, never shown.
    ``client_secret_expires_at`` is seconds since the epoch, None or 0 for never.
    """

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: str = "none"
    redirect_uris: tuple[str, ...] = ()
    source: str = "dcr"
    client_secret_expires_at: float | None = None

    def expired(self, now: float | None = None) -> bool:
        """The registration's secret has expired: register anew."""
        at = self.client_secret_expires_at
        return bool(at) and (now if now is not None else time.time()) >= float(at or 0)


@dataclass(frozen=True, slots=True)
class TokenSet:
    """Tokens for one (issuer, client, resource). ``expires_at`` is seconds since the
    epoch (None: the server did not say). ``token_type`` is ``Bearer`` or ``DPoP``.
    Both tokens are secrets: never logged, never shown (``repr`` leaves them out)."""

    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = field(default=None, repr=False)
    scope: str | None = None
    # When to refresh: a tenth of a short life before its end (a 10 s token is not
    # refreshed before every request), at most REFRESH_MARGIN before it.
    refresh_at: float | None = None

    def expiring(self, now: float | None = None) -> bool:
        """The access token has expired, or is due to be refreshed."""
        if self.expires_at is None:
            return False
        due = self.refresh_at if self.refresh_at is not None else self.expires_at - REFRESH_MARGIN
        return (now if now is not None else time.time()) >= due

    def expired(self, now: float | None = None) -> bool:
        """The access token's lifetime has passed."""
        if self.expires_at is None:
            return False
        return (now if now is not None else time.time()) >= self.expires_at

    @staticmethod
    def refresh_time(now: float, lifetime: float) -> float:
        """When a token obtained at ``now`` for ``lifetime`` seconds is refreshed."""
        return now + lifetime - min(REFRESH_MARGIN, lifetime / 10)
