"""``python -m mcpl_host.cli``: the same as the ``mcpl-host`` command."""

from __future__ import annotations

from . import main

raise SystemExit(main())
