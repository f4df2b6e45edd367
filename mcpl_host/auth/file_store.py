"""A :class:`~mcpl_host.auth.store.TokenStore` in one JSON file per user, so a login
survives a restart and is shared by every process of that user.

The file holds secrets, so it is created 0600 from its first byte (never chmod-ed after
the secrets are in it) in a directory created 0700. Every change is a read-modify-write
under an exclusive ``flock`` on a sidecar ``<file>.lock``, written to a temporary file
in the same directory and moved over the old one with ``os.replace``: two processes
refreshing tokens at once both keep their changes, and a crash leaves the old file or
the new one, never half of either. Reads take no lock, as a replace is atomic.

A file that cannot be read or decoded counts as empty; the first write after that moves
it aside to ``<file>.corrupt`` (with a warning) instead of overwriting it, so a person
can still recover what it held.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Final

import msgspec
import trio

from .._log import get_logger
from ..protocol.errors import ConfigurationError
from .records import ClientInfo, TokenSet
from .store import MemoryTokenStore, TokenStore

# POSIX only (flock, file modes); imported conditionally so that the package, and the
# memory store, still import on Windows.
if sys.platform != "win32":
    import fcntl

__all__ = ["AUTH_FILE_ENV", "FileTokenStore", "StoredEntry", "default_auth_file", "user_store"]

AUTH_FILE_ENV: Final = "MCPL_HOST_AUTH_FILE"
VERSION: Final = 1

_FILE_MODE: Final = 0o600
_DIR_MODE: Final = 0o700

_log = get_logger(__name__)


def default_auth_file() -> Path:
    """Where the store keeps its file when given no path: ``$MCPL_HOST_AUTH_FILE``, else
    ``$XDG_STATE_HOME/mcpl-host/auth.json``, else ``~/.local/state/mcpl-host/auth.json``.

    Tokens are state, not configuration: they change on their own and are worth less
    than the loss of a config file that held them. A relative ``XDG_STATE_HOME`` is
    ignored, as the XDG Base Directory specification says.
    """
    explicit = os.environ.get(AUTH_FILE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state) if state and os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "mcpl-host" / "auth.json"


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """What the store holds for one (issuer, client, resource), for a person to see:
    never the tokens themselves, only whether a refresh token is there."""

    issuer: str
    client_id: str
    resource: str
    token_type: str
    expires_at: float | None
    scope: str | None
    has_refresh_token: bool


# The file's format is its own contract, kept apart from the records: a change to
# ClientInfo or TokenSet must not silently change what older versions read.
class _Client(msgspec.Struct, omit_defaults=True):
    client_id: str
    client_secret: str | None = None
    token_endpoint_auth_method: str = "none"
    redirect_uris: list[str] = msgspec.field(default_factory=list)
    source: str = "dcr"
    client_secret_expires_at: float | None = None


class _Tokens(msgspec.Struct, omit_defaults=True):
    issuer: str
    client_id: str
    resource: str
    access_token: str
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = None
    scope: str | None = None
    refresh_at: float | None = None


class _Document(msgspec.Struct):
    version: int = VERSION
    clients: dict[str, _Client] = msgspec.field(default_factory=dict)
    tokens: list[_Tokens] = msgspec.field(default_factory=list)


class _Head(msgspec.Struct):
    version: int


_DECODER: Final = msgspec.json.Decoder(_Document)
_HEAD: Final = msgspec.json.Decoder(_Head)
_ENCODER: Final = msgspec.json.Encoder()


class _Unreadable(Exception):
    """The file exists but cannot be read or decoded; ``reason`` names why without
    quoting it (a decode error's text could carry part of a secret)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Contents:
    """The file's contents as the store works on them: one entry per key (a file edited
    by hand may repeat one; the last wins, as it would on read)."""

    def __init__(self, document: _Document) -> None:
        self.clients: dict[str, _Client] = dict(document.clients)
        self.tokens: dict[tuple[str, str, str], _Tokens] = {
            (t.issuer, t.client_id, t.resource): t for t in document.tokens
        }

    def document(self) -> _Document:
        return _Document(VERSION, dict(self.clients), list(self.tokens.values()))


class FileTokenStore:
    """Registrations and tokens in one JSON file that outlives the process.

    ``path`` defaults to :func:`default_auth_file`, chosen when the store is made. Each
    operation reads the file afresh (another process may have changed it) in a worker
    thread, so the event loop never waits on the disk. The async methods implement
    :class:`~mcpl_host.auth.store.TokenStore`; :meth:`entries` and :meth:`forget` are
    synchronous, for the command line.
    """

    # Its I/O already runs in threads under trio: the faces use it as it is.
    trio_native = True

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        """Raises ConfigurationError on Windows, which has neither flock nor POSIX modes."""
        if sys.platform == "win32":
            raise ConfigurationError("FileTokenStore needs a POSIX system (flock, file modes)")
        chosen = default_auth_file() if path is None else Path(path).expanduser()
        # Absolute now: a relative path must not follow a later chdir.
        self.path: Path = chosen.absolute()
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._corrupt_path = self.path.with_name(self.path.name + ".corrupt")

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.path)!r})"

    # -- the TokenStore interface ------------------------------------------------------

    async def get_client(self, issuer: str) -> ClientInfo | None:
        """The registration kept for ``issuer``, or None.

        Raises ConfigurationError when the file was written by a newer mcpl_host.
        """
        contents = await trio.to_thread.run_sync(self._read)
        entry = contents.clients.get(issuer)
        return None if entry is None else _client_info(entry)

    async def set_client(self, issuer: str, client: ClientInfo | None) -> None:
        """Keep ``client`` for ``issuer``; None forgets it.

        Raises OSError when the file or its directory cannot be written, and
        ConfigurationError when the file was written by a newer mcpl_host.
        """

        def change(contents: _Contents) -> bool:
            if client is None:
                return contents.clients.pop(issuer, None) is not None
            contents.clients[issuer] = _client_entry(client)
            return True

        await trio.to_thread.run_sync(partial(self._update, change))

    async def get_tokens(self, issuer: str, client_id: str, resource: str) -> TokenSet | None:
        """The tokens kept for (``issuer``, ``client_id``, ``resource``), or None.

        Raises ConfigurationError when the file was written by a newer mcpl_host.
        """
        contents = await trio.to_thread.run_sync(self._read)
        entry = contents.tokens.get((issuer, client_id, resource))
        return None if entry is None else _token_set(entry)

    async def set_tokens(
        self, issuer: str, client_id: str, resource: str, tokens: TokenSet | None
    ) -> None:
        """Keep ``tokens`` for (``issuer``, ``client_id``, ``resource``); None forgets them.

        Raises OSError when the file or its directory cannot be written, and
        ConfigurationError when the file was written by a newer mcpl_host.
        """
        key = (issuer, client_id, resource)

        def change(contents: _Contents) -> bool:
            if tokens is None:
                return contents.tokens.pop(key, None) is not None
            contents.tokens[key] = _tokens_entry(key, tokens)
            return True

        await trio.to_thread.run_sync(partial(self._update, change))

    # -- for the command line (synchronous) --------------------------------------------

    def entries(self) -> list[StoredEntry]:
        """Every token entry, sorted by issuer, resource and client id, without the
        tokens themselves.

        Raises ConfigurationError when the file was written by a newer mcpl_host.
        """
        contents = self._read()
        return sorted(
            (
                StoredEntry(
                    issuer=t.issuer,
                    client_id=t.client_id,
                    resource=t.resource,
                    token_type=t.token_type,
                    expires_at=t.expires_at,
                    scope=t.scope,
                    has_refresh_token=t.refresh_token is not None,
                )
                for t in contents.tokens.values()
            ),
            key=lambda e: (e.issuer, e.resource, e.client_id),
        )

    def forget(self, *, resource: str | None = None, issuer: str | None = None) -> int:
        """Remove the token entries for ``resource`` and/or ``issuer`` (every entry when
        both are None) and return how many were removed. The client registrations go
        too when ``issuer`` is given (that issuer's) or when both are None (all): a
        person forgetting an issuer means to register anew there.

        Raises OSError when the file or its directory cannot be written, and
        ConfigurationError when the file was written by a newer mcpl_host.
        """
        removed = 0

        def change(contents: _Contents) -> bool:
            nonlocal removed
            doomed = [
                key
                for key in contents.tokens
                if (issuer is None or key[0] == issuer) and (resource is None or key[2] == resource)
            ]
            for key in doomed:
                del contents.tokens[key]
            removed = len(doomed)
            clients = len(contents.clients)
            if issuer is not None:
                contents.clients.pop(issuer, None)
            elif resource is None:
                contents.clients.clear()
            return bool(doomed) or len(contents.clients) != clients

        self._update(change)
        return removed

    # -- the file ----------------------------------------------------------------------

    def _read(self) -> _Contents:
        try:
            return _Contents(self._load())
        except _Unreadable as exc:
            # Not a warning: every operation reads, and the write that follows moves the
            # file aside with one.
            _log.debug(
                "auth file unreadable, taken as empty", path=str(self.path), reason=exc.reason
            )
            return _Contents(_Document())

    def _load(self) -> _Document:
        """The file's document (empty when there is no file).

        Raises _Unreadable, and ConfigurationError for a newer version's file.
        """
        try:
            with open(self.path, "rb") as file:
                data = file.read()
        except FileNotFoundError:
            return _Document()
        except OSError as exc:
            raise _Unreadable(type(exc).__name__) from None
        return self._decode(data)

    def _decode(self, data: bytes) -> _Document:
        if not data.strip():
            return _Document()  # truncated by hand to clear it: nothing to keep aside
        try:
            document = _DECODER.decode(data)
        except msgspec.DecodeError as exc:
            # A newer version may have changed the shape of everything but the version.
            with contextlib.suppress(msgspec.DecodeError):
                self._check_version(_HEAD.decode(data).version)
            raise _Unreadable(type(exc).__name__) from None
        self._check_version(document.version)
        return document

    def _check_version(self, version: int) -> None:
        if version > VERSION:
            raise ConfigurationError(
                f"the auth file {self.path} is version {version}, written by a newer"
                f" mcpl_host; this one reads version {VERSION}"
            )
        if version < VERSION:
            raise _Unreadable("unknown version")

    def _update(self, change: Callable[[_Contents], bool]) -> None:
        """Apply ``change`` to the file's contents under the lock; write them back when
        it says it changed something."""
        with self._locked():
            try:
                contents = _Contents(self._load())
                unreadable: str | None = None
            except _Unreadable as exc:
                contents, unreadable = _Contents(_Document()), exc.reason
            if not change(contents):
                return
            if unreadable is not None:
                self._set_aside(unreadable)
            self._write(_ENCODER.encode(contents.document()))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self._make_directory()
        # The lock file is never written, but 0600 all the same: it sits beside secrets.
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, _FILE_MODE)
        try:
            # flock, not fcntl's record locks: those belong to the process, so two
            # threads of one process would not exclude each other.
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _make_directory(self) -> None:
        # Only a directory made here is made 0700: an existing one (a home directory,
        # given as the path's parent) is the person's to set.
        self.path.parent.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)

    def _set_aside(self, reason: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.path, self._corrupt_path)
            _log.warning(
                "auth file unreadable, moved aside",
                path=str(self.path),
                moved_to=str(self._corrupt_path),
                reason=reason,
            )

    def _write(self, data: bytes) -> None:
        # mkstemp opens with O_CREAT | O_EXCL and mode 0600: the secrets are never in a
        # file anyone else could open, not even for a moment.
        fd, temporary = tempfile.mkstemp(
            dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp"
        )
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        _fsync_directory(self.path.parent)


def _fsync_directory(directory: Path) -> None:
    # The rename is durable only once the directory is; a platform or file system that
    # cannot fsync a directory still has the rename, which is atomic regardless.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _client_info(entry: _Client) -> ClientInfo:
    return ClientInfo(
        client_id=entry.client_id,
        client_secret=entry.client_secret,
        token_endpoint_auth_method=entry.token_endpoint_auth_method,
        redirect_uris=tuple(entry.redirect_uris),
        source=entry.source,
        client_secret_expires_at=entry.client_secret_expires_at,
    )


def _client_entry(client: ClientInfo) -> _Client:
    return _Client(
        client_id=client.client_id,
        client_secret=client.client_secret,
        token_endpoint_auth_method=client.token_endpoint_auth_method,
        redirect_uris=list(client.redirect_uris),
        source=client.source,
        client_secret_expires_at=client.client_secret_expires_at,
    )


def _token_set(entry: _Tokens) -> TokenSet:
    return TokenSet(
        access_token=entry.access_token,
        token_type=entry.token_type,
        expires_at=entry.expires_at,
        refresh_token=entry.refresh_token,
        scope=entry.scope,
        refresh_at=entry.refresh_at,
    )


def _tokens_entry(key: tuple[str, str, str], tokens: TokenSet) -> _Tokens:
    issuer, client_id, resource = key
    return _Tokens(
        issuer=issuer,
        client_id=client_id,
        resource=resource,
        access_token=tokens.access_token,
        token_type=tokens.token_type,
        expires_at=tokens.expires_at,
        refresh_token=tokens.refresh_token,
        scope=tokens.scope,
        refresh_at=tokens.refresh_at,
    )


def user_store() -> TokenStore:
    """The user's token file (:func:`default_auth_file`); a store in memory where there
    can be none (not POSIX): tokens then last as long as the process. Raises nothing."""
    try:
        return FileTokenStore()
    except ConfigurationError:
        return MemoryTokenStore()
