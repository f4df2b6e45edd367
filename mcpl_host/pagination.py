"""Old import path: pagination lives in :mod:`mcpl_host.client.pagination`."""

from .client.pagination import DEFAULT_MAX_PAGES, collect, collect_raw

__all__ = ["DEFAULT_MAX_PAGES", "collect", "collect_raw"]
