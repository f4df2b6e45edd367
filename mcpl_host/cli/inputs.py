"""Answers to VS Code's ``${input:ID}`` from a person at the terminal.

The config layer does no terminal I/O: it calls the resolver made here. The person is
asked on stderr (stdout may be the ``--json`` report), the answer read from the
terminal, hidden for an input with ``password: true``. Without a terminal the resolver
answers None and the config layer says how to give the value instead
(``MCPL_HOST_INPUT_<ID>``). Answers are secrets: the config layer records them so.
"""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Collection

from ..config import InputResolver, InputSpec
from ..protocol.errors import ConfigurationError
from ..protocol.redact import log_value
from . import auth

__all__ = ["terminal_inputs"]


def terminal_inputs(servers: Collection[str] | None) -> InputResolver:
    """A resolver that asks for the inputs of ``servers`` (None: of every server) when
    stdin and stderr are a terminal; None for any other (nobody to ask)."""

    def ask(server: str, spec: InputSpec) -> str | None:
        if (servers is not None and server not in servers) or not auth.interactive():
            return None
        return _prompt(server, spec)

    return ask


def _prompt(server: str, spec: InputSpec) -> str:
    """Ask once. Raises ConfigurationError when the terminal ends (EOF) or the answer is
    not one of a pickString's options."""
    answer: str | None
    what = log_value(spec.description or spec.id, 120)
    choices = f" [{', '.join(log_value(o, 40) for o in spec.options)}]" if spec.options else ""
    empty = " (empty: its default)" if spec.default is not None else ""
    prompt = f"mcpl-host: {log_value(server, 64)} needs {what}{choices}{empty}: "
    try:
        if spec.password and os.name != "posix":
            answer = getpass.getpass(prompt, stream=sys.stderr)
        else:
            sys.stderr.write(prompt)
            sys.stderr.flush()
            line = _hidden_line() if spec.password else sys.stdin.readline()
            answer = line.rstrip("\r\n") if line else None
    except EOFError:
        answer = None
    if answer is None:
        raise ConfigurationError("no answer was given (end of input)")
    if not answer and spec.default is not None:
        return spec.default
    if spec.options and answer not in spec.options:
        raise ConfigurationError("the answer is not one of its options")
    return answer


def _hidden_line() -> str:
    """A line read from stdin with the terminal's echo off (not through ``/dev/tty``, as
    getpass does, which may be another terminal than the one asked)."""
    import termios  # noqa: PLC0415 - POSIX only

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    quiet = termios.tcgetattr(fd)
    quiet[3] &= ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSAFLUSH, quiet)
    try:
        return sys.stdin.readline()
    finally:
        termios.tcsetattr(fd, termios.TCSAFLUSH, saved)
        sys.stderr.write("\n")  # the person's Enter was not echoed
        sys.stderr.flush()
