#!/usr/bin/env python3
"""Soak: kill -9 a stdio server with requests in flight, many times over.

Each cycle starts 20 requests on a reconnecting connection to the demo server and kills
the server while they wait. Prints cycles, hung and lost requests, zombies, file
descriptor growth and cycles per second; exits 1 if anything hung, was lost or leaked.

    .venv/bin/python scripts/soak.py --cycles 10000
"""

from __future__ import annotations

import argparse
import logging
import sys

import structlog
import trio

from mcpl_host.testing.chaos import run_chaos


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--in-flight", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=5.0, help="each request's timeout")
    args = parser.parse_args()
    # Thousands of reconnects log a lot; the figures below are the point.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
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
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
