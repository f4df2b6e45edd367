"""mcpl_host only, over stdio and a Unix socket (the SDKs have neither a socket transport
to a local server nor a reconnect): memory per idle connection, and the time from
``kill -9`` of a stdio server to the connection being back."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time

from measure import SERVER, Setup, rss_kib


def child_idle(setup: Setup) -> None:
    """Memory per idle connection: RSS growth from 10 to ``--idle`` open connections to
    one server over a Unix socket, divided by the connections added."""
    import gc
    import resource
    import tempfile

    import trio

    from mcpl_host import Connection, UnixTarget

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4 * setup.idle)), hard))
    path = os.path.join(tempfile.mkdtemp(), "bench.sock")
    server = subprocess.Popen([*SERVER, "--unix", path])
    try:
        while not os.path.exists(path):
            time.sleep(0.01)

        async def main() -> None:
            async with trio.open_nursery() as nursery:
                conns = [await nursery.start(Connection(UnixTarget(path)).run) for _ in range(10)]
                gc.collect()
                before = rss_kib()
                for _ in range(setup.idle - 10):
                    conns.append(await nursery.start(Connection(UnixTarget(path)).run))
                await trio.sleep(0.2)  # every reader is parked
                gc.collect()
                grown = rss_kib() - before
                print(json.dumps({"idle_kib": grown / (setup.idle - 10), "idle": setup.idle}))
                for conn in conns:
                    nursery.start_soon(conn.aclose)

        trio.run(main)
    finally:
        server.kill()
        server.wait()


def child_reconnect(setup: Setup) -> None:
    """Seconds from ``kill -9`` of the stdio server to ``Reconnected`` (a new server
    spawned and initialized), ``--kills`` times; the median is reported."""
    import signal

    import trio

    from mcpl_host import Connection, Reconnect, Reconnected, StdioTarget

    back = trio.Event()

    def on_event(event: object) -> None:
        if isinstance(event, Reconnected):
            back.set()

    async def main() -> None:
        nonlocal back
        seconds = []
        # stable=0: each kill is of a server that was up for a moment only, which the
        # default rule counts as a quick death and backs off from; this measures the
        # reconnect itself.
        policy = Reconnect(initial=0.05, jitter=0.0, stable=0.0)
        async with Connection(StdioTarget.of(SERVER), reconnect=policy, on_event=on_event) as c:
            for _ in range(setup.kills):
                back = trio.Event()
                pid = int((await c.call_tool("pid")).text)
                began = time.perf_counter()
                os.kill(pid, signal.SIGKILL)
                with trio.fail_after(10):
                    await back.wait()
                seconds.append(time.perf_counter() - began)
        print(json.dumps({"reconnect_s": statistics.median(seconds), "kills": setup.kills}))

    trio.run(main)
