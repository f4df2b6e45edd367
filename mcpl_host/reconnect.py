"""Old import path: :class:`Reconnect` lives in :mod:`mcpl_host.driver.reconnect` (import it
from :mod:`mcpl_host`)."""

from .driver.reconnect import Reconnect

__all__ = ["Reconnect"]
