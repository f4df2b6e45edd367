"""The measuring host: opens mcpl_host against one hostile server, does one row's
action, prints one JSON object of figures on stdout.

    python -m tests.hostile.host ACTION '{"count": 30000}'

(from the repository root). The actions are in ``actions_*.py``; their parameters come
as JSON, so the tests run small versions and scripts/hostile.py the issue's sizes. The
hostile servers are scripts in ``servers/``; the stdio ones are spawned by the
connection, the HTTP and WebSocket ones by the action (after the baseline, and gone
before the figures are taken).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import trio

from . import actions_http, actions_lists, actions_stdio
from .harness import ACTIONS
from .measure import LogCounter, TaskCounter
from .probe import Probe

_LOADED = (actions_http, actions_lists, actions_stdio)  # they register their actions


async def measure(name: str, params: dict[str, Any], tasks: TaskCounter, logs: LogCounter) -> Any:
    probe = Probe(tasks, logs)
    await ACTIONS[name](probe, params)
    figures = await probe.figures()
    return {"action": name, "params": params, **figures}


def main() -> None:
    name, params = sys.argv[1], json.loads(sys.argv[2] if len(sys.argv) > 2 else "{}")
    if name not in ACTIONS:
        sys.exit(f"unknown action {name!r}; actions: {', '.join(ACTIONS)}")
    tasks, logs = TaskCounter(), LogCounter()
    logs.install()
    figures = trio.run(measure, name, params, tasks, logs, instruments=[tasks])
    sys.stdout.write(json.dumps(figures) + "\n")
    sys.stdout.flush()
    os._exit(0)  # the measuring is done: no wait for a thread a hostile peer left blocked


if __name__ == "__main__":
    main()
