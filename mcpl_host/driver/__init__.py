"""The trio driver: the machinery under :class:`~mcpl_host.Connection`.

Internal: import what you use from :mod:`mcpl_host`. One module per job (see
docs/architecture.md):

- ``core``: :class:`~mcpl_host.driver.core.Driver`, a connection's lifetime: open a
  transport, run the handshake, supervise, reconnect, close;
- ``epoch``: one transport's lifetime, its profile and its one writer;
- ``inbound``: the reader: every line read, classified once and acted on;
- ``outbound``: the host's requests: ids, the pending table, timeouts, cancellation,
  rebinding after a reconnect;
- ``pending``: one outbound request that outlives transports;
- ``rebind``: the rule for which lost requests are sent again;
- ``timeouts``: one deadline heap for every request;
- ``responder``: answers the server's requests, once, on the transport they came on;
- ``reconnect``: the backoff policy (tenacity);
- ``mcpl_session``: MCPL on a connection: the grant, the hold, the server's MCPL methods;
- ``lifetime``: owning a nursery as an async context manager, without exception groups.

It imports nothing of the client layer above it (checked by import-linter).
"""
