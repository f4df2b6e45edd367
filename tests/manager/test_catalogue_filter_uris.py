"""Review of issue 22's filters: ``read_resource(uri, server=...)`` applies the server's
resource patterns to a URI the caller wrote (an agent's model may choose it). The same
resource written another way (a dot segment, the scheme's case) must not pass an
exclude pattern that the plain spelling does not pass."""

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
                # Bug: only the plain spelling is refused; the others reach the server
                # (a RequestError -32601 from the script here; a real file server
                # resolves them to /etc/passwd).
                with pytest.raises(UnknownResource):
                    await manager.read_resource(uri, server="s")
            await server.wait_done()
    assert server.record.requests("resources/read") == []
