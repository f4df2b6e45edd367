#!/usr/bin/env python3
"""Soak: the chaos scenarios of mcpl_host.testing.chaos, many times over.

- kill -9 of a stdio server with requests in flight (``--cycles``, default 1000): prints
  hung and lost requests, zombies and file descriptor growth;
- a server that dies right after ``initialize`` (``--quick-deaths``): with
  ``max_attempts=5`` it must end ``failed`` after five handshakes, and without a limit it
  may be respawned only as the backoff allows over ``--watch`` seconds;
- MCPL traffic racing each new transport's grant (``--mcpl-race``, default 1000
  reconnects): no push may be admitted under a stale grant.

Exits 1 if any check fails.

    .venv/bin/python scripts/soak.py --cycles 10000 --mcpl-race 1000 --quick-deaths
"""

from __future__ import annotations

import argparse
import logging
import math
import sys

import structlog
import trio

from mcpl_host import Reconnect
from mcpl_host.testing.chaos import run_chaos, run_mcpl_race, run_quick_deaths


def kill_9(args: argparse.Namespace) -> bool:
    report = trio.run(
        lambda: run_chaos(args.cycles, in_flight=args.in_flight, request_timeout=args.timeout)
    )
    print(f"cycles        {report.cycles}")
    print(f"requests      {report.requests}")
    print(f"answered      {report.answered}")
    print(f"typed errors  {report.failed_typed}  {report.errors}")
    print(f"hung          {report.hung}")
    print(f"lost          {report.lost}")
    print(f"zombies       {report.zombies}")
    print(f"fd growth     {report.fd_growth}")
    print(f"cycles/s      {report.cycles / report.seconds:.1f}  ({report.seconds:.1f} s)")
    return report.ok


def quick_deaths(args: argparse.Namespace) -> bool:
    limited = Reconnect(initial=0.05, jitter=0.0, max_attempts=5, stable=2.0)
    report = trio.run(lambda: run_quick_deaths(limited, watch=60))
    print(f"quick deaths, max_attempts=5: {report.handshakes} handshakes, {report.state}")
    ok = report.state == "failed" and report.handshakes == 5 and report.zombies == 0
    unlimited = Reconnect(initial=0.2, jitter=0.0, stable=2.0)
    report = trio.run(lambda: run_quick_deaths(unlimited, watch=args.watch))
    # Handshakes at 0, then 0.2 * (2**k - 1) seconds: the backoff's own bound.
    bound = 1 + math.floor(math.log2(args.watch / 0.2 + 1))
    print(
        f"quick deaths, no limit: {report.handshakes} handshakes in {args.watch:g} s"
        f" (the backoff allows {bound}), {report.state}"
    )
    return ok and report.handshakes <= bound and report.zombies == 0


def mcpl_race(args: argparse.Namespace) -> bool:
    report = trio.run(lambda: run_mcpl_race(args.mcpl_race))
    print(
        f"mcpl race: {report.reconnects} reconnects, {report.admitted} admitted,"
        f" {report.denied} denied, {report.stale} under a stale grant,"
        f" {report.unanswered} unanswered"
    )
    return report.stale == 0 and report.unanswered == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycles", type=int, default=1000, help="kill -9 cycles (0: skip)")
    parser.add_argument("--in-flight", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=5.0, help="each request's timeout")
    parser.add_argument("--quick-deaths", action="store_true")
    parser.add_argument("--watch", type=float, default=5.0, help="seconds of quick deaths")
    parser.add_argument("--mcpl-race", type=int, default=1000, help="reconnects (0: skip)")
    args = parser.parse_args()
    # Thousands of reconnects log a lot; the figures below are the point.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    ok = True
    if args.cycles:
        ok &= kill_9(args)
    if args.quick_deaths:
        ok &= quick_deaths(args)
    if args.mcpl_race:
        ok &= mcpl_race(args)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
