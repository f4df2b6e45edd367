"""``read_resource(uri, server=...)`` applies the server's resource patterns to a URI
the caller wrote (an agent's model may choose it): the same resource written another
way (a dot segment, the scheme's case, an escape) must not pass an exclude pattern that
the plain spelling does not pass; an admitted one is sent as written."""

from __future__ import annotations

import pytest
import trio

from mcpl_host.manager import CatalogueFilter, ConnectionManager, UnknownResource
from mcpl_host.testing import Script, serve


@pytest.mark.parametrize(
    "uri",
    [
        "file:///etc/passwd",
        "file:///./etc/passwd",
        "file:///pub/../etc/passwd",
        "FILE:///etc/passwd",
        "file:///%65tc/passwd",
        "file:///pub%2F..%2Fetc/passwd",  # a server that decodes %2F would see ../etc
        "file:///pub\\..\\etc/passwd",
    ],
)
async def test_an_excluded_uri_written_another_way_is_refused_too(
    autojump_clock: trio.abc.Clock, uri: str
) -> None:
    script = (
        Script()
        .handshake(capabilities={"resources": {}})
        .expect_close()  # nothing may be read: a resources/read is answered -32601, recorded
    )
    hidden = CatalogueFilter(exclude_resources=["file:///etc/*"])
    with trio.fail_after(60):
        async with serve(script) as server:
            async with ConnectionManager({"s": server.target}, filters={"s": hidden}) as manager:
                await manager.wait_ready()
                with pytest.raises(UnknownResource):
                    await manager.read_resource(uri, server="s")
            await server.wait_done()
    assert server.record.requests("resources/read") == []


async def test_an_admitted_uri_is_sent_as_written(autojump_clock: trio.abc.Clock) -> None:
    script = (
        Script()
        .handshake(capabilities={"resources": {}})
        .expect("resources/read", {"uri": "file:///pub/%61.txt"})
        .reply({"contents": [{"uri": "file:///pub/a.txt", "text": "a"}]})
        .expect_close()
    )
    only_pub = CatalogueFilter(include_resources=["file:///pub/*"])
    with trio.fail_after(60):
        async with serve(script) as server:
            async with ConnectionManager({"s": server.target}, filters={"s": only_pub}) as manager:
                await manager.wait_ready()
                read = await manager.read_resource("file:///pub/%61.txt", server="s")
                assert read.contents[0].text == "a"
                # Inside the include as written, outside it once its dot segment is gone.
                with pytest.raises(UnknownResource):
                    await manager.read_resource("file:///pub/../etc/passwd", server="s")
                # Inside it normalised, but not as written (the scheme's case).
                with pytest.raises(UnknownResource):
                    await manager.read_resource("FILE:///pub/a.txt", server="s")
            await server.wait_done()


@pytest.mark.parametrize(
    "uri",
    [
        "notes://MyNote",  # a custom scheme's "host" is often a case-sensitive name
        "file:///home/%7Ealice/notes.txt",  # the server's own listed spelling
    ],
)
async def test_a_uri_the_filter_has_no_word_on_is_sent_as_the_server_spells_it(
    autojump_clock: trio.abc.Clock, uri: str
) -> None:
    # Servers look resources up by the exact URI they listed (the SDKs' resource maps):
    # a pattern for other URIs (here: secret://*) must not make the manager send
    # "notes://mynote" or "~alice", which the server does not know.
    script = (
        Script()
        .handshake(capabilities={"resources": {}})
        .expect("resources/read", {"uri": uri})
        .reply({"contents": [{"uri": uri, "text": "kept"}]})
        .expect_close()
    )
    no_secrets = CatalogueFilter(exclude_resources=["secret://*"])
    with trio.fail_after(60):
        async with serve(script) as server:
            async with ConnectionManager({"s": server.target}, filters={"s": no_secrets}) as m:
                await m.wait_ready()
                read = await m.read_resource(uri, server="s", timeout=5)
                assert read.contents[0].text == "kept"
            await server.wait_done()
    assert [r["params"]["uri"] for r in server.record.requests("resources/read")] == [uri]
