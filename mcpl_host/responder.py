"""Old import path: responders live in :mod:`mcpl_host.driver.responder` (import them
from :mod:`mcpl_host`)."""

from .driver.responder import Handler, Responder, ServerRequest

__all__ = ["Handler", "Responder", "ServerRequest"]
