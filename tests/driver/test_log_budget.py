"""The per-kind budget of log lines a peer can cause."""

from __future__ import annotations

from typing import Any

import pytest

from mcpl_host import _log
from mcpl_host._log import PeerLogBudget


class Recorder:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def bind(self, **_values: Any) -> Recorder:
        return self

    def __getattr__(self, level: str) -> Any:
        return lambda event, **values: self.lines.append((level, event, values))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(_log.time, "monotonic", lambda: now[0])
    return now


def test_the_first_few_of_a_kind_in_full_then_one_count_per_interval(clock: list[float]) -> None:
    out = Recorder()
    log = PeerLogBudget(burst=3, interval=10).wrap(out)
    for _ in range(100):
        log.warning("message", outcome="response-unmatched", id=1)
    assert len(out.lines) == 3
    clock[0] += 10
    log.warning("message", outcome="response-unmatched", id=2)
    assert out.lines[3] == (
        "warning",
        "log events suppressed",
        {
            "suppressed_event": "message",
            "suppressed_outcome": "response-unmatched",
            "suppressed": 97,
            "interval_s": 10,
        },
    )
    assert out.lines[4] == ("warning", "message", {"outcome": "response-unmatched", "id": 2})


def test_kinds_are_counted_apart_and_flush_writes_what_is_left(clock: list[float]) -> None:
    out = Recorder()
    budget = PeerLogBudget(burst=1, interval=60)
    log = budget.wrap(out)
    for _ in range(5):
        log.info("message", outcome="ignored")
        log.info("message", outcome="answered-invalid")
        log.warning("message", outcome="ignored")
    assert len(out.lines) == 3
    budget.flush()
    counts = {(e[0], e[2]["suppressed_outcome"]): e[2]["suppressed"] for e in out.lines[3:]}
    assert counts == {
        ("info", "ignored"): 4,
        ("info", "answered-invalid"): 4,
        ("warning", "ignored"): 4,
    }
    budget.flush()
    assert len(out.lines) == 6  # nothing twice


def test_debug_is_never_counted(clock: list[float]) -> None:
    out = Recorder()
    log = PeerLogBudget(burst=1).wrap(out)
    for _ in range(50):
        log.debug("message", outcome="dispatched")
    assert len(out.lines) == 50


def test_past_max_kinds_new_kinds_share_one_budget(clock: list[float]) -> None:
    out = Recorder()
    log = PeerLogBudget(burst=1, max_kinds=2).wrap(out)
    for n in range(100):
        log.info(f"event-{n}")
    assert len(out.lines) == 3  # two kinds of their own, then one shared
