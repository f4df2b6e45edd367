"""Inbound batches: what to do with a JSON array, by the negotiated profile (DESIGN 3.4).

| array | batching revisions (2024-11-05, 2025-03-26) | later revisions |
|---|---|---|
| requests | each handled, one array of answers in request order | one -32600, id null |
| notifications / responses | handled, no entry in the answer | refused as above |
| only notifications / responses | nothing written | refused |
| empty | one -32600 | refused |
| invalid entry | -32600 for that entry only | refused |
| ``initialize`` request | -32600 for that entry only | refused |
| more than ``max_entries`` entries | one -32600, id null, no entry handled | refused |

Before a revision is negotiated an array is ignored. Entries are decoded only when the
profile takes batches, and never more than ``max_entries`` + 1 of them, so a refused
array costs its line, not an object per entry.

The answers to one batch are bounded: at most ``max_entries`` of them, and an invalid
entry's answer is a fixed text plus the id it echoes, whose bytes come from the entry
itself; so the core's part of the answer line is at most the line's length plus
``max_entries`` × :data:`ANSWER_BYTES_PER_ENTRY`.
"""

from __future__ import annotations

from typing import Final

import msgspec

from .envelope import (
    NESTED_TOO_DEEP,
    Batch,
    Classified,
    Ignored,
    InvalidRequest,
    Outcome,
    Request,
    classify_entry,
)
from .errors import INVALID_REQUEST
from .messages import ErrorAnswer, ResultAnswer, encode_batch, error_answer
from .profiles import Profile

__all__ = [
    "ANSWER_BYTES_PER_ENTRY",
    "DEFAULT_MAX_BATCH_ENTRIES",
    "MAX_BATCH_ENTRIES_CEILING",
    "BatchAnswers",
    "BatchPlan",
    "BatchRefused",
    "plan_batch",
]

DEFAULT_MAX_BATCH_ENTRIES: Final = 1000
"""The most entries one inbound batch may have; past it the whole batch is refused."""

MAX_BATCH_ENTRIES_CEILING: Final = 100_000
"""The largest ``max_entries`` accepted: the entry decoder holds ``max_entries`` + 1
slots, built once per value (about 0.4 s and 1 MB at the ceiling) and filled per batch."""

ANSWER_BYTES_PER_ENTRY: Final = 256
"""The most bytes an invalid entry's -32600 answer (with its separator) takes beyond
the bytes of the entry itself; tests/protocol/test_batch_limits.py checks the longest."""


class BatchRefused(msgspec.Struct, frozen=True, gc=False):
    """Write ``answer`` alone; handle no entry."""

    answer: ErrorAnswer
    outcome: Outcome


class BatchPlan(msgspec.Struct, frozen=True, gc=False):
    """Handle every entry; answer the requests (and invalid entries) in one array.

    ``entries`` are classified by the envelope rule; an entry that is not JSON-RPC at
    all (``1``, ``{}``) is an :class:`InvalidRequest` here, since inside a batch it can
    only have been meant as one.
    """

    entries: tuple[Classified, ...]


_BEFORE_NEGOTIATION: Final = Ignored("a batch before a protocol revision was negotiated")
_INITIALIZE_BATCHED: Final = ("initialize must not be part of a batch",)


def plan_batch(
    batch: Batch, profile: Profile | None, max_entries: int = DEFAULT_MAX_BATCH_ENTRIES
) -> BatchPlan | BatchRefused | Ignored:
    """Decide what an inbound array means under ``profile`` (None: not negotiated yet).

    Never raises on peer input. Raises ``ValueError`` when ``max_entries`` is outside
    1 to :data:`MAX_BATCH_ENTRIES_CEILING` (a configuration error, checked first).
    """
    if not 1 <= max_entries <= MAX_BATCH_ENTRIES_CEILING:
        raise ValueError(
            f"max_entries must be between 1 and {MAX_BATCH_ENTRIES_CEILING}, not {max_entries}"
        )
    if profile is None:
        return _BEFORE_NEGOTIATION
    if not profile.accepts_batches:
        return BatchRefused(
            error_answer(
                None,
                INVALID_REQUEST,
                f"Invalid Request: protocol revision {profile.revision} does not allow "
                "JSON-RPC batches; send one message per line",
            ),
            Outcome.REFUSED_BY_PROFILE,
        )
    entries = batch.entries(max_entries)
    if entries is None:
        return _invalid(NESTED_TOO_DEEP.message)
    if not entries:
        return _invalid("Invalid Request: the batch is empty")
    if len(entries) > max_entries:
        return _invalid(
            f"Invalid Request: the batch has more than {max_entries} entries, "
            "the most this host takes in one batch"
        )
    return BatchPlan(tuple(_entry(raw) for raw in entries))


def _invalid(message: str) -> BatchRefused:
    return BatchRefused(error_answer(None, INVALID_REQUEST, message), Outcome.ANSWERED_INVALID)


def _entry(raw: msgspec.Raw) -> Classified:
    entry = classify_entry(raw)
    if type(entry) is Ignored:
        return InvalidRequest(
            (f"a batch entry must be a request, a notification or a response ({entry.reason})",),
            None,
        )
    if type(entry) is Request and entry.method == "initialize":
        # 2025-03-26 lifecycle: initialize MUST NOT be part of a batch. A malformed
        # request, so -32600 for the entry (seed 000), not -32601 from a method lookup.
        return InvalidRequest(_INITIALIZE_BATCHED, entry.id, entry.method)
    return entry


class BatchAnswers:
    """Collects a batch's answers as its requests finish, in any order.

    Slots follow request order; an invalid entry's -32600 is filled in at once.
    :meth:`encode` gives the one line to write, or None when the batch held only
    notifications and responses (nothing is written then).
    """

    __slots__ = ("_answers", "_dropped", "_missing", "slot_of")

    def __init__(self, plan: BatchPlan) -> None:
        self.slot_of: dict[int, int] = {}
        self._answers: list[ResultAnswer | ErrorAnswer | None] = []
        self._dropped: set[int] = set()
        for index, entry in enumerate(plan.entries):
            if type(entry) is Request:
                self.slot_of[index] = len(self._answers)
                self._answers.append(None)
            elif type(entry) is InvalidRequest:
                self._answers.append(error_answer(entry.answer_id, INVALID_REQUEST, entry.message))
        self._missing = len(self.slot_of)

    @property
    def complete(self) -> bool:
        return self._missing == 0

    def fill(self, index: int, answer: ResultAnswer | ErrorAnswer) -> None:
        """Record the answer of entry ``index``. A second answer for one entry is a bug."""
        slot = self.slot_of[index]
        if self._answers[slot] is not None:
            raise RuntimeError(f"batch entry {index} answered twice")
        self._answers[slot] = answer
        self._missing -= 1

    def drop(self, index: int) -> None:
        """Leave entry ``index`` out of the answer (the peer cancelled that request)."""
        slot = self.slot_of.pop(index)
        if self._answers[slot] is not None:
            raise RuntimeError(f"batch entry {index} already answered")
        self._dropped.add(slot)
        self._missing -= 1

    def encode(self) -> bytes | None:
        if self._missing:
            raise RuntimeError(f"{self._missing} batch answers are still missing")
        answers = [a for i, a in enumerate(self._answers) if i not in self._dropped]
        if not answers:
            return None
        return encode_batch(answers)
