"""``mcpl-host check``'s own options (its target and connection options are connect's):
which rules, the tools it may call, the exit grace, colour, and what they mean.

The parser part (:func:`add_check_options`) is called by :mod:`.parser`; what the
options mean together (:func:`check_flags`) by :mod:`.args`. Rule and group names are
checked when the check runs (:func:`mcpl_host.check.select`): this module does not
import the checker.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, Final, Literal

from .callargs import ArgumentsError, arguments

__all__ = [
    "CHECK_EXIT_STATUS",
    "DEFAULT_EXIT_GRACE",
    "CheckFlags",
    "add_check_options",
    "check_flags",
]

DEFAULT_EXIT_GRACE: Final = 5.0
COLORS: Final = ("auto", "always", "never")
CHECK_EXIT_STATUS: Final = (
    "Exit status: 0 no rule failed (warnings allowed), 1 a rule failed, 2 bad usage or "
    "configuration (an unknown rule or group, a bad target), 4 authorization required, "
    "6 the server could not be reached, 128+N ended by signal N. See docs/check.md."
)

Color = Literal["auto", "always", "never"]


@dataclass(frozen=True, slots=True)
class CheckFlags:
    """What ``mcpl-host check`` takes besides the target: ``only`` and ``skip`` (rule
    ids or groups, checked when the run starts), ``list_rules`` (``--list``: print the
    rules, connect to nothing), ``exit_grace`` (seconds a stdio server may take to end),
    ``calls`` (``--call``: the only tools ever called, with their arguments),
    ``color``, and ``show_passing`` (``-v``: every finding's evidence, whole)."""

    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    list_rules: bool = False
    exit_grace: float = DEFAULT_EXIT_GRACE
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    color: Color = "auto"
    show_passing: bool = False


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError("give a positive number of seconds")
    return seconds


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give a rule id or a group, e.g. lifecycle")
    return names


def add_check_options(parser: argparse.ArgumentParser) -> None:
    """``check``'s own options, on its parser."""
    which = parser.add_argument_group("which rules (mcpl-host check --list shows them)")
    which.add_argument(
        "--only",
        type=_names,
        action="append",
        default=[],
        metavar="RULE|GROUP",
        help="check only these rules or groups (repeatable, or comma-separated)",
    )
    which.add_argument(
        "--skip",
        type=_names,
        action="append",
        default=[],
        metavar="RULE|GROUP",
        help="leave out these rules or groups (repeatable, or comma-separated)",
    )
    which.add_argument(
        "--list",
        dest="list_rules",
        action="store_true",
        help="print every rule (id, level, revision, title) by group and exit; connects to nothing",
    )
    how = parser.add_argument_group("how")
    how.add_argument(
        "--exit-grace",
        type=_seconds,
        default=DEFAULT_EXIT_GRACE,
        metavar="SECONDS",
        help="how long a stdio server may take to exit after stdin's EOF or SIGTERM "
        f"(default {DEFAULT_EXIT_GRACE:g})",
    )
    how.add_argument(
        "--call",
        nargs=2,
        action="append",
        default=[],
        metavar=("TOOL", "ARGS"),
        help="call TOOL with ARGS (a JSON object, @FILE or -) and check its result "
        "(repeatable); no tool is ever called otherwise",
    )
    how.add_argument(
        "--color",
        choices=COLORS,
        default="auto",
        help="colour the verdicts: auto (on a terminal, unless NO_COLOR is set), always or never",
    )


def check_flags(sub: argparse.ArgumentParser, ns: argparse.Namespace) -> CheckFlags:
    """The check's flags from its parsed namespace; a bad ``--call`` is ``sub``'s usage
    error (its message never repeats the arguments' text)."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for tool, given in ns.call:
        if not tool:
            sub.error("--call needs a tool name")
        try:
            args = arguments(given, (), _read_stdin)
        except ArgumentsError as exc:
            sub.error(f"--call {tool}: {str(exc).replace('--args', 'ARGS', 1)}")
        calls.append((tool, args))
    return CheckFlags(
        only=tuple(name for names in ns.only for name in names),
        skip=tuple(name for names in ns.skip for name in names),
        list_rules=ns.list_rules,
        exit_grace=ns.exit_grace,
        calls=tuple(calls),
        color=ns.color,
        show_passing=ns.verbose > 0,
    )


def _read_stdin(limit: int) -> bytes:
    return sys.stdin.buffer.read(limit)
