"""FileTokenStore: one JSON file per user that survives restarts, is never readable by
anyone else, keeps every change when processes write at once, and never shows a secret
in a log."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
import trio

from mcpl_host.auth import (
    ClientInfo,
    FileTokenStore,
    StoredEntry,
    TokenSet,
    TokenStore,
    default_auth_file,
)
from mcpl_host.protocol.errors import ConfigurationError

from ..logcheck import strings

ISSUER = "https://as.example"
OTHER_ISSUER = "https://other-as.example"
RESOURCE = "https://mcp.example/mcp"
OTHER_RESOURCE = "https://files.example/mcp"
ACCESS = "at-very-secret-access-token"
REFRESH = "rt-very-secret-refresh-token"
CLIENT_SECRET = "cs-very-secret-client-secret"


@pytest.fixture
def auth_file(tmp_path: Path) -> Path:
    return tmp_path / "state" / "mcpl-host" / "auth.json"


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A umask that takes nothing away: any mode seen is the one the store asked for."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def tokens(access: str = ACCESS, **fields: object) -> TokenSet:
    return TokenSet(access_token=access, **fields)  # type: ignore[arg-type]


def client(client_id: str = "client-1") -> ClientInfo:
    return ClientInfo(
        client_id=client_id,
        client_secret=CLIENT_SECRET,
        token_endpoint_auth_method="client_secret_post",
        redirect_uris=("http://127.0.0.1/callback",),
        source="dcr",
        client_secret_expires_at=2_000_000_000.0,
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# -- where the file is ---------------------------------------------------------------


def test_the_default_file_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MCPL_HOST_AUTH_FILE", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert default_auth_file() == tmp_path / "home/.local/state/mcpl-host/auth.json"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")  # not absolute: ignored
    assert default_auth_file() == tmp_path / "home/.local/state/mcpl-host/auth.json"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_auth_file() == tmp_path / "xdg/mcpl-host/auth.json"
    monkeypatch.setenv("MCPL_HOST_AUTH_FILE", str(tmp_path / "mine.json"))
    assert default_auth_file() == tmp_path / "mine.json"
    assert FileTokenStore().path == tmp_path / "mine.json"


def test_a_relative_path_is_fixed_when_the_store_is_made(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    store = FileTokenStore("auth.json")
    assert store.path == tmp_path / "auth.json"


# -- round trips and the format ------------------------------------------------------


async def test_a_new_store_on_the_same_file_reads_what_the_last_one_wrote(
    auth_file: Path,
) -> None:
    with trio.fail_after(10):
        first: TokenStore = FileTokenStore(auth_file)
        full = tokens(
            token_type="DPoP", expires_at=1_900_000_000.5, refresh_token=REFRESH, scope="a b"
        )
        await first.set_client(ISSUER, client())
        await first.set_tokens(ISSUER, "client-1", RESOURCE, full)
        await first.set_tokens(ISSUER, "client-1", OTHER_RESOURCE, tokens("other"))

        restarted: TokenStore = FileTokenStore(auth_file)
        assert await restarted.get_client(ISSUER) == client()
        assert await restarted.get_tokens(ISSUER, "client-1", RESOURCE) == full
        assert await restarted.get_tokens(ISSUER, "client-1", OTHER_RESOURCE) == tokens("other")
        # The key is all three: another client or issuer has nothing here.
        assert await restarted.get_tokens(ISSUER, "client-2", RESOURCE) is None
        assert await restarted.get_tokens(OTHER_ISSUER, "client-1", RESOURCE) is None
        assert await restarted.get_client(OTHER_ISSUER) is None


async def test_none_forgets_and_a_second_set_replaces(auth_file: Path) -> None:
    with trio.fail_after(10):
        store = FileTokenStore(auth_file)
        await store.set_client(ISSUER, client())
        await store.set_client(ISSUER, client("client-2"))
        await store.set_tokens(ISSUER, "client-2", RESOURCE, tokens("first"))
        await store.set_tokens(ISSUER, "client-2", RESOURCE, tokens("second"))
        assert await store.get_client(ISSUER) == client("client-2")
        assert await store.get_tokens(ISSUER, "client-2", RESOURCE) == tokens("second")
        assert len(json.loads(auth_file.read_bytes())["tokens"]) == 1

        await store.set_client(ISSUER, None)
        await store.set_tokens(ISSUER, "client-2", RESOURCE, None)
        assert await store.get_client(ISSUER) is None
        assert await store.get_tokens(ISSUER, "client-2", RESOURCE) is None


async def test_reading_and_forgetting_nothing_creates_no_file(auth_file: Path) -> None:
    with trio.fail_after(10):
        store = FileTokenStore(auth_file)
        assert await store.get_client(ISSUER) is None
        assert await store.get_tokens(ISSUER, "c", RESOURCE) is None
        await store.set_tokens(ISSUER, "c", RESOURCE, None)
        assert store.entries() == []
        assert store.forget() == 0
        assert not auth_file.exists()


async def test_the_file_is_the_documented_json(auth_file: Path) -> None:
    with trio.fail_after(10):
        store = FileTokenStore(auth_file)
        await store.set_client(ISSUER, client())
        await store.set_tokens(ISSUER, "client-1", RESOURCE, tokens(refresh_token=REFRESH))
    document = json.loads(auth_file.read_bytes())
    assert document["version"] == 1
    assert document["clients"][ISSUER]["client_id"] == "client-1"
    assert document["clients"][ISSUER]["client_secret"] == CLIENT_SECRET
    assert document["clients"][ISSUER]["redirect_uris"] == ["http://127.0.0.1/callback"]
    [entry] = document["tokens"]
    assert entry["issuer"] == ISSUER
    assert entry["client_id"] == "client-1"
    assert entry["resource"] == RESOURCE
    assert entry["access_token"] == ACCESS
    assert entry["refresh_token"] == REFRESH


async def test_a_file_written_by_hand_with_few_fields_reads(auth_file: Path) -> None:
    auth_file.parent.mkdir(parents=True)
    auth_file.write_text(
        json.dumps(
            {
                "version": 1,
                "clients": {ISSUER: {"client_id": "c", "future_field": 1}},
                "tokens": [
                    {"issuer": ISSUER, "client_id": "c", "resource": RESOURCE, "access_token": "a"},
                    {"issuer": ISSUER, "client_id": "c", "resource": RESOURCE, "access_token": "b"},
                ],
            }
        )
    )
    with trio.fail_after(10):
        store = FileTokenStore(auth_file)
        assert await store.get_client(ISSUER) == ClientInfo(client_id="c")
        # A key repeated by hand: the last one wins.
        assert await store.get_tokens(ISSUER, "c", RESOURCE) == tokens("b")


# -- modes ---------------------------------------------------------------------------


async def test_the_file_is_0600_and_its_new_directory_0700_whatever_the_umask(
    auth_file: Path, open_umask: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A mode set after the secrets are written would leave a moment they are readable.
    def refuse(*args: object) -> None:
        raise AssertionError("the store must create its files with their mode, not chmod them")

    monkeypatch.setattr(os, "chmod", refuse)
    monkeypatch.setattr(os, "fchmod", refuse)
    with trio.fail_after(10):
        await FileTokenStore(auth_file).set_tokens(ISSUER, "c", RESOURCE, tokens())
    assert mode(auth_file) == 0o600
    assert mode(auth_file.parent) == 0o700
    assert mode(auth_file.with_name("auth.json.lock")) == 0o600
    # Nothing else beside it: the temporary file was moved into place.
    assert sorted(p.name for p in auth_file.parent.iterdir()) == ["auth.json", "auth.json.lock"]


async def test_an_existing_directory_keeps_its_mode(tmp_path: Path, open_umask: None) -> None:
    tmp_path.chmod(0o755)
    with trio.fail_after(10):
        await FileTokenStore(tmp_path / "auth.json").set_tokens(ISSUER, "c", RESOURCE, tokens())
    assert mode(tmp_path) == 0o755
    assert mode(tmp_path / "auth.json") == 0o600


# -- concurrent writers --------------------------------------------------------------

_WRITER = """
import os, sys, time
import trio
from mcpl_host.auth import FileTokenStore, TokenSet

path, go, tag = sys.argv[1:4]
store = FileTokenStore(path)
while not os.path.exists(go):  # both start writing at once
    time.sleep(0.001)

async def main():
    for i in range(50):
        await store.set_tokens(
            "https://as.example", "client", f"https://{tag}.example/{i}",
            TokenSet(access_token=f"{tag}-{i}"),
        )

trio.run(main)
"""


async def test_two_processes_writing_at_once_keep_every_entry(auth_file: Path) -> None:
    go = auth_file.parent.parent / "go"
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for tag in ("one", "two"):
                nursery.start_soon(
                    trio.run_process,
                    [sys.executable, "-c", _WRITER, str(auth_file), str(go), tag],
                )
            await trio.sleep(0.2)
            go.parent.mkdir(parents=True, exist_ok=True)
            go.touch()
    store = FileTokenStore(auth_file)
    entries = store.entries()
    assert len(entries) == 100
    for tag in ("one", "two"):
        for i in range(50):
            got = await store.get_tokens(ISSUER, "client", f"https://{tag}.example/{i}")
            assert got == tokens(f"{tag}-{i}")


async def test_tasks_of_one_process_writing_at_once_keep_every_entry(auth_file: Path) -> None:
    # Each write runs in its own worker thread: the lock must hold between threads too.
    store = FileTokenStore(auth_file)
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            for i in range(30):
                nursery.start_soon(
                    store.set_tokens, ISSUER, "c", f"{RESOURCE}/{i}", tokens(f"t{i}")
                )
    assert len(store.entries()) == 30


# -- a corrupt file ------------------------------------------------------------------


async def test_a_corrupt_file_reads_as_empty_and_is_moved_aside_once(auth_file: Path) -> None:
    auth_file.parent.mkdir(parents=True)
    corrupt = b'{"version": 1, "tokens": [{"access_token": "' + ACCESS.encode() + b'", '
    auth_file.write_bytes(corrupt)
    aside = auth_file.with_name("auth.json.corrupt")
    store = FileTokenStore(auth_file)
    with trio.fail_after(10), structlog.testing.capture_logs() as logs:
        assert await store.get_tokens(ISSUER, "c", RESOURCE) is None
        assert store.entries() == []
        assert auth_file.read_bytes() == corrupt  # reading destroys nothing

        await store.set_tokens(ISSUER, "c", RESOURCE, tokens("new"))
        assert aside.read_bytes() == corrupt
        assert await store.get_tokens(ISSUER, "c", RESOURCE) == tokens("new")

        await store.set_tokens(ISSUER, "c", OTHER_RESOURCE, tokens("newer"))
        assert aside.read_bytes() == corrupt
        assert len(store.entries()) == 2

    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert len(warnings) == 1
    assert warnings[0]["event"] == "auth file unreadable, moved aside"
    assert warnings[0]["moved_to"] == str(aside)
    text = [s for event in logs for s in strings(event)]
    assert not any(ACCESS in s or corrupt.decode() in s for s in text)


@pytest.mark.parametrize(
    "content",
    [
        b"[1, 2, 3]",
        b'{"version": 1, "tokens": "no"}',
        b'{"version": 0}',
        b'{"version": 1, "tokens": [{"issuer": "i"}]}',
        b"\xff\xfe not utf-8",
    ],
)
async def test_any_wrong_shape_is_corrupt(auth_file: Path, content: bytes) -> None:
    auth_file.parent.mkdir(parents=True)
    auth_file.write_bytes(content)
    store = FileTokenStore(auth_file)
    with trio.fail_after(10):
        assert await store.get_client(ISSUER) is None
        await store.set_client(ISSUER, client())
    assert auth_file.with_name("auth.json.corrupt").read_bytes() == content
    assert await store.get_client(ISSUER) == client()


async def test_an_empty_file_is_an_empty_store_not_a_corrupt_one(auth_file: Path) -> None:
    auth_file.parent.mkdir(parents=True)
    auth_file.write_bytes(b"\n")
    store = FileTokenStore(auth_file)
    with trio.fail_after(10):
        await store.set_tokens(ISSUER, "c", RESOURCE, tokens())
        assert await store.get_tokens(ISSUER, "c", RESOURCE) == tokens()
    assert not auth_file.with_name("auth.json.corrupt").exists()


async def test_an_unreadable_file_is_moved_aside_not_overwritten(auth_file: Path) -> None:
    # A directory where the file should be: unreadable as a file, for root as well (a
    # mode of 000 would not stop root reading it).
    (auth_file / "kept").mkdir(parents=True)
    store = FileTokenStore(auth_file)
    with trio.fail_after(10), structlog.testing.capture_logs() as logs:
        assert await store.get_tokens(ISSUER, "c", RESOURCE) is None
        await store.set_tokens(ISSUER, "c", RESOURCE, tokens())
        assert await store.get_tokens(ISSUER, "c", RESOURCE) == tokens()
    assert (auth_file.with_name("auth.json.corrupt") / "kept").is_dir()
    [warning] = [e for e in logs if e["log_level"] == "warning"]
    assert warning["reason"] == "IsADirectoryError"


async def test_a_newer_version_is_refused_and_left_alone(auth_file: Path) -> None:
    auth_file.parent.mkdir(parents=True)
    newer = b'{"version": 2, "whatever": {"shape": "it has now"}}'
    auth_file.write_bytes(newer)
    store = FileTokenStore(auth_file)
    with trio.fail_after(10):
        with pytest.raises(ConfigurationError, match="version 2"):
            await store.get_tokens(ISSUER, "c", RESOURCE)
        with pytest.raises(ConfigurationError, match="newer"):
            await store.set_tokens(ISSUER, "c", RESOURCE, tokens())
        with pytest.raises(ConfigurationError):
            store.entries()
    assert auth_file.read_bytes() == newer
    assert not auth_file.with_name("auth.json.corrupt").exists()


# -- the command line's view ---------------------------------------------------------


async def _filled(auth_file: Path) -> FileTokenStore:
    store = FileTokenStore(auth_file)
    await store.set_client(ISSUER, client("c1"))
    await store.set_client(OTHER_ISSUER, client("c2"))
    await store.set_tokens(ISSUER, "c1", RESOURCE, tokens(refresh_token=REFRESH, scope="s"))
    await store.set_tokens(ISSUER, "c1", OTHER_RESOURCE, tokens(expires_at=5.0))
    await store.set_tokens(OTHER_ISSUER, "c2", RESOURCE, tokens(token_type="DPoP"))
    return store


async def test_entries_show_everything_but_the_tokens(auth_file: Path) -> None:
    with trio.fail_after(10):
        store = await _filled(auth_file)
    assert store.entries() == [
        StoredEntry(ISSUER, "c1", OTHER_RESOURCE, "Bearer", 5.0, None, False),
        StoredEntry(ISSUER, "c1", RESOURCE, "Bearer", None, "s", True),
        StoredEntry(OTHER_ISSUER, "c2", RESOURCE, "DPoP", None, None, False),
    ]
    assert ACCESS not in repr(store.entries())
    assert REFRESH not in repr(store.entries())


async def test_forget_a_resource_keeps_the_registrations(auth_file: Path) -> None:
    with trio.fail_after(10):
        store = await _filled(auth_file)
        assert store.forget(resource=RESOURCE) == 2
        assert [e.resource for e in store.entries()] == [OTHER_RESOURCE]
        assert await store.get_client(ISSUER) == client("c1")
        assert await store.get_client(OTHER_ISSUER) == client("c2")
        assert store.forget(resource=RESOURCE) == 0


async def test_forget_an_issuer_drops_its_registration(auth_file: Path) -> None:
    with trio.fail_after(10):
        store = await _filled(auth_file)
        assert store.forget(issuer=ISSUER) == 2
        assert [e.issuer for e in store.entries()] == [OTHER_ISSUER]
        assert await store.get_client(ISSUER) is None
        assert await store.get_client(OTHER_ISSUER) == client("c2")


async def test_forget_an_issuer_and_resource(auth_file: Path) -> None:
    with trio.fail_after(10):
        store = await _filled(auth_file)
        assert store.forget(issuer=OTHER_ISSUER, resource=RESOURCE) == 1
        assert len(store.entries()) == 2
        assert await store.get_client(OTHER_ISSUER) is None


async def test_forget_everything(auth_file: Path) -> None:
    with trio.fail_after(10):
        store = await _filled(auth_file)
        assert store.forget() == 3
        assert store.entries() == []
        assert await store.get_client(ISSUER) is None
        assert await store.get_client(OTHER_ISSUER) is None
    assert json.loads(auth_file.read_bytes()) == {"version": 1, "clients": {}, "tokens": []}


# -- logs ----------------------------------------------------------------------------


async def test_no_log_event_shows_the_file_or_a_secret(auth_file: Path) -> None:
    with trio.fail_after(10), structlog.testing.capture_logs() as logs:
        store = await _filled(auth_file)
        await store.get_tokens(ISSUER, "c1", RESOURCE)
        content = auth_file.read_text()
        auth_file.write_text(content[:-5])  # corrupt: the next write moves it aside
        await store.get_client(ISSUER)
        await store.set_tokens(ISSUER, "c1", RESOURCE, tokens(refresh_token=REFRESH))
        store.entries()
        store.forget()
    assert logs  # the corrupt file was reported
    for text in (s for event in logs for s in strings(event)):
        for secret in (ACCESS, REFRESH, CLIENT_SECRET, content, content[:-5]):
            assert secret not in text
    assert repr(store) == f"FileTokenStore({str(auth_file)!r})"
