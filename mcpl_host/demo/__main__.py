"""``python -m mcpl_host.demo``: the demo server over stdio."""

from .stdio import main

main()
