"""How a scripted server says the host did not follow its script."""

from __future__ import annotations

__all__ = ["ScriptFailed"]


class ScriptFailed(AssertionError):
    """A step's expectation was not met: what was awaited, and what arrived instead.

    ``step_number`` counts from 1; ``step`` is the step as written
    (``expect('tools/call')``); ``connection`` is the number of the connection it ran
    on (1 for the first), ``None`` when none was open; ``detail`` says what went wrong.
    An ``AssertionError``, so pytest reports it as a failed expectation.
    """

    def __init__(self, detail: str, *, step_number: int, step: str, connection: int | None) -> None:
        where = f"step {step_number} {step}"
        if connection is not None:
            where += f" on connection {connection}"
        super().__init__(f"scripted server, {where}: {detail}")
        self.detail = detail
        self.step_number = step_number
        self.step = step
        self.connection = connection
