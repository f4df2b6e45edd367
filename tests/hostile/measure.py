"""What the measuring host counts about itself while a hostile server works on it.

- live trio tasks, exactly: an instrument sees every task spawned and exited (a sampler
  walking the task tree every few milliseconds would miss a burst between two walks);
- memory: a thread reads VmRSS from ``/proc/<pid>/status`` every few milliseconds, and
  VmHWM (the kernel's own high-water mark, reset through ``clear_refs`` where allowed)
  catches a peak between two samples; the thread keeps sampling when the trio loop is
  too busy to;
- open file descriptors: ``/proc/self/fd``;
- log events by level and kind: structlog configured with a processor that counts each
  event and drops it (so nothing is printed and nothing filters by level first).

Linux only (``/proc``), like the issue's figures.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from typing import Any

import structlog
import trio

__all__ = ["LogCounter", "MemorySampler", "TaskCounter", "open_fds"]

MB = 1024 * 1024


class TaskCounter(trio.abc.Instrument):
    """Live trio tasks now, and the most there were since :meth:`reset_peak`."""

    def __init__(self) -> None:
        self.live = 0
        self.peak = 0

    def task_spawned(self, _task: trio.lowlevel.Task) -> None:
        self.live += 1
        self.peak = max(self.peak, self.live)

    def task_exited(self, _task: trio.lowlevel.Task) -> None:
        self.live -= 1

    def reset_peak(self) -> None:
        self.peak = self.live


# Held while the sampler has /proc/.../status open, so that counting open descriptors
# never counts the sampler's own.
FD_LOCK = threading.Lock()


def open_fds() -> int:
    with FD_LOCK:
        return len(os.listdir("/proc/self/fd"))


def _status(pid: int | str) -> dict[str, int]:
    """VmRSS and VmHWM in bytes (empty once the process is gone)."""
    values: dict[str, int] = {}
    try:
        with FD_LOCK, open(f"/proc/{pid}/status") as file:
            for line in file:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    name, kb, _ = line.split()
                    values[name[:-1]] = int(kb) * 1024
    except (FileNotFoundError, ProcessLookupError, ValueError):
        pass
    return values


class MemorySampler:
    """RSS of a process (this one by default), sampled by a thread of its own."""

    def __init__(self, pid: int | str = "self", interval: float = 0.005) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self.last = 0
        self._hwm_reset = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss sampler", daemon=True)

    def start(self) -> MemorySampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def rss(self) -> int:
        return _status(self.pid).get("VmRSS", 0)

    def reset_peak(self) -> int:
        """Start a new peak from now; returns the RSS now (a baseline)."""
        if self.pid == "self":
            try:  # "5" resets VmHWM to the current RSS (Linux 4.0+), where permitted
                with open("/proc/self/clear_refs", "w") as file:
                    file.write("5")
                self._hwm_reset = True
            except OSError:
                self._hwm_reset = False
        now = self.rss()
        self.peak = now
        return now

    def peak_now(self) -> int:
        """The highest RSS seen since the last reset (the high-water mark included
        where it could be reset, or for another process, whose whole life counts)."""
        status = _status(self.pid)
        peak = max(self.peak, status.get("VmRSS", 0))
        if self._hwm_reset or self.pid != "self":
            peak = max(peak, status.get("VmHWM", 0))
        return peak

    def _run(self) -> None:
        while not self._stop.is_set():
            status = _status(self.pid)
            rss = status.get("VmRSS", 0)
            if not status:
                return  # the process is gone
            self.last = rss
            self.peak = max(self.peak, rss, status.get("VmHWM", 0) if self.pid != "self" else 0)
            time.sleep(self.interval)


class LogCounter:
    """Counts mcpl_host's log events by level and by kind (event and reason), and
    drops them. :meth:`install` configures structlog; mcpl_host's loggers pick it up
    when they are bound (each connection binds its own)."""

    def __init__(self) -> None:
        self.levels: collections.Counter[str] = collections.Counter()
        self.kinds: collections.Counter[str] = collections.Counter()
        self.tracebacks = 0

    def install(self) -> None:
        structlog.configure(processors=[self._count], cache_logger_on_first_use=False)

    def _count(self, _logger: Any, method: str, event: dict[str, Any]) -> Any:
        level = {"exception": "error", "msg": "info", "warn": "warning"}.get(method, method)
        self.levels[level] += 1
        if method == "exception" or event.get("exc_info"):
            self.tracebacks += 1
        if level != "debug":
            reason = str(event.get("reason", ""))[:60]
            self.kinds[f"{level} {event.get('event')} {reason}".rstrip()] += 1
        raise structlog.DropEvent

    @property
    def lines(self) -> int:
        """Lines an application that logs at info would see (debug is opt-in tracing)."""
        return sum(n for level, n in self.levels.items() if level != "debug")

    def snapshot(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "levels": dict(self.levels),
            "tracebacks": self.tracebacks,
            "top": dict(self.kinds.most_common(5)),
        }
