"""The pure protocol core: bytes and values in, decisions and bytes out.

Nothing in this package performs I/O or imports trio; the trio driver moves bytes and
tasks and asks this package what every message means.
"""
