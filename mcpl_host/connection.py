"""Old import path: :class:`Connection` lives in :mod:`mcpl_host.client.connection` (import
it from :mod:`mcpl_host`)."""

from .client.connection import Connection, ProgressCallback, TransportFactory

__all__ = ["Connection", "ProgressCallback", "TransportFactory"]
