"""Signalling, watching and reaping a stdio server's process group (POSIX).

Each server is spawned as the leader of its own session, so its process group holds
everything it started: ``npx``/``uvx``/``sh -c`` wrappers and their children. POSIX does
not reuse a process group id while any member lives, so signalling the group after the
leader is reaped reaches only what the server left behind.
"""

from __future__ import annotations

import os
import signal
from typing import Final

from .._log import get_logger

__all__ = ["group_alive", "reap_adopted", "signal_group"]

_log = get_logger("mcpl_host.transports")
_PROC: Final = "/proc"


def signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to every process in group ``pgid``; false if the group is gone.

    Raises nothing: a group we may not signal is logged and reported as not signalled.
    """
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        _log.warning("cannot signal the server's process group", pgid=pgid, signal=sig.name)
        return False
    return True


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (zombies do not count).

    A killed member stays in its group as a zombie until its new parent (init, or a
    subreaper) collects it; counting those would make a clean shutdown wait on
    somebody else's reaping. Where ``/proc`` is missing, zombies count.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # a member exists that we may not signal; /proc can still tell its state
    members = _members_from_proc(pgid)
    return True if members is None else any(state != "Z" for state in members)


def _members_from_proc(pgid: int) -> list[str] | None:
    """The states of group ``pgid``'s processes, read from /proc; None without /proc."""
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return None
    states: list[str] = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"{_PROC}/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # it exited while we looked
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 3 and fields[2].isdigit() and int(fields[2]) == pgid:
            states.append(fields[0].decode("ascii", "replace"))
    return states


def reap_adopted(pgid: int) -> None:
    """Collect any exited member of group ``pgid`` that became our child.

    Members outlive their leader as orphans and are re-parented to init, or to us when
    this process is PID 1 or a subreaper (common in containers); then only we can reap
    them. Only that group is waited on, so no other child's status is taken; call it
    only once the leader itself is reaped, or its exit status would be lost.
    """
    while True:
        try:
            pid, _status = os.waitpid(-pgid, os.WNOHANG)
        except OSError:  # ChildProcessError: none of our children is in that group
            return
        if pid == 0:
            return
