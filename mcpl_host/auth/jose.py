"""The JSON Web Tokens the host signs, with PyJWT over cryptography (no hand-written
crypto): DPoP proofs (RFC 9449) and client assertions (RFC 7523 section 2.2).

Every token made here is a secret once sent (a proof replayed within its lifetime, an
assertion replayed at the token endpoint): the caller has the redactor learn it.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from ..protocol.errors import ConfigurationError

# PyJWT and cryptography (about 11 MB and 40 ms) are imported by the first key or
# assertion made, not by `import mcpl_host.auth`: most hosts never sign a token.

__all__ = ["ClientAssertion", "DpopKey"]

_ASSERTION_LIFETIME: Final = 300


class DpopKey:
    """One DPoP key pair (P-256, ES256), made for one session and never stored: a
    token bound to it dies with the process, as RFC 9449 intends for public clients."""

    algorithm: Final = "ES256"

    def __init__(self) -> None:
        import jwt  # noqa: PLC0415
        from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415

        self._key = ec.generate_private_key(ec.SECP256R1())
        self._jwk: dict[str, Any] = jwt.algorithms.ECAlgorithm.to_jwk(
            self._key.public_key(), as_dict=True
        )

    def proof(
        self, method: str, url: str, *, nonce: str | None = None, access_token: str | None = None
    ) -> str:
        """A proof for one request (RFC 9449 section 4.2): ``htu`` without query and
        fragment, ``ath`` when it accompanies an access token."""
        parts = urlsplit(url)
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
            "iat": int(time.time()),
        }
        if nonce is not None:
            claims["nonce"] = nonce
        if access_token is not None:
            digest = hashlib.sha256(access_token.encode("ascii")).digest()
            claims["ath"] = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
        headers = {"typ": "dpop+jwt", "jwk": self._jwk}
        import jwt  # noqa: PLC0415 - loaded by __init__ already

        return jwt.encode(claims, self._key, algorithm=self.algorithm, headers=headers)


class ClientAssertion:
    """``private_key_jwt``: a signed JWT naming the client (``iss`` and ``sub``) for a
    token endpoint (``aud``), made anew for every request.

    Raises:
        ConfigurationError: a key PyJWT cannot load for ``algorithm``.
    """

    def __init__(self, client_id: str, private_key_pem: str, algorithm: str = "ES256") -> None:
        self.client_id = client_id
        self.algorithm = algorithm
        import jwt  # noqa: PLC0415

        try:
            self._key = jwt.api_jws.get_algorithm_by_name(algorithm).prepare_key(private_key_pem)
        except (ValueError, TypeError, NotImplementedError, jwt.InvalidKeyError) as exc:
            raise ConfigurationError(
                f"the private key for private_key_jwt cannot be used with {algorithm} "
                f"({type(exc).__name__})"
            ) from None

    def __call__(self, audience: str) -> str:
        now = int(time.time())
        claims = {
            "iss": self.client_id,
            "sub": self.client_id,
            "aud": audience,
            "iat": now,
            "exp": now + _ASSERTION_LIFETIME,
            "jti": secrets.token_urlsafe(16),
        }
        import jwt  # noqa: PLC0415 - loaded by __init__ already

        return jwt.encode(claims, self._key, algorithm=self.algorithm)
