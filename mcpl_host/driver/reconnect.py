"""The reconnect policy: when and how often a lost connection is re-established.

Only connect+handshake is retried (tenacity, sleeping with ``trio.sleep``); a permanent
error (a version outside the allowlist, a configuration error) is never retried.
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from ..protocol.errors import ConfigurationError, McplHostError

if TYPE_CHECKING:
    from tenacity import AsyncRetrying, RetryCallState

__all__ = ["Reconnect"]


@dataclass(frozen=True, slots=True)
class Reconnect:
    """Exponential backoff with jitter and a cap; ``max_attempts=None`` tries forever.

    The first attempt runs at once; attempt ``n > 1`` waits
    ``min(initial * multiplier ** (n - 2), maximum)`` plus up to ``jitter`` seconds.

    A connection that ends less than ``stable`` seconds after its handshake counts as a
    failed attempt: the next reconnect goes on counting from there (it waits, and
    ``max_attempts`` can end it), so a server that dies right after ``initialize`` is not
    respawned at once, forever. One that lived ``stable`` seconds or more starts afresh.

    Raises :class:`~mcpl_host.ConfigurationError` for negative or non-finite values.
    """

    initial: float = 0.5
    maximum: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.5
    max_attempts: int | None = None
    stable: float = 10.0

    def __post_init__(self) -> None:
        for name in ("initial", "maximum", "multiplier", "jitter", "stable"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ConfigurationError(f"Reconnect.{name} must be a finite number >= 0")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ConfigurationError("Reconnect.max_attempts must be at least 1 (or None)")

    def delay(self, attempt: int) -> float:
        """The wait before attempt ``attempt`` (1 for the first), jitter included."""
        if attempt <= 1:
            return 0.0
        base = min(self.initial * self.multiplier ** (attempt - 2), self.maximum)
        return base + random.uniform(0, self.jitter)

    def retrying(
        self, on_sleep: Callable[[int, float], None], *, failed_before: int = 0
    ) -> AsyncRetrying:
        """A tenacity controller for one reconnect whose first attempt is attempt
        ``failed_before + 1``; ``on_sleep(next_attempt, delay)`` is called before each
        wait. The caller waits before that first attempt itself (``delay``)."""
        # Imported here: only a connection that lost its transport needs tenacity.
        from tenacity import (  # noqa: PLC0415
            AsyncRetrying,
            retry_if_exception,
            stop_after_attempt,
            stop_never,
        )

        def before_sleep(state: RetryCallState) -> None:
            delay = state.next_action.sleep if state.next_action else 0.0
            on_sleep(failed_before + state.attempt_number + 1, delay)

        def wait(state: RetryCallState) -> float:
            return self.delay(failed_before + state.attempt_number + 1)

        left = None if self.max_attempts is None else self.max_attempts - failed_before
        return AsyncRetrying(
            wait=wait,
            stop=stop_after_attempt(left) if left is not None else stop_never,
            retry=retry_if_exception(_retryable),
            sleep=_sleep,
            before_sleep=before_sleep,
            reraise=True,
        )


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, McplHostError) and not exc.permanent


def _sleep(seconds: float) -> Awaitable[None]:
    return trio.sleep(seconds)
