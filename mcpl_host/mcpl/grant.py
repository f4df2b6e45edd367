"""The capability grant as a state machine: ``featureSets/update`` and its receipt.

Sans I/O, like h11: :meth:`Grant.propose` returns the Request params to send,
:meth:`Grant.receipt` and :meth:`Grant.failed` take what came back and return what it
means. The driver owns JSON-RPC ids and timeouts; it maps its request id to the
``update_id`` of the :class:`Update` it sent.

The rules (MCPL §5.3, §5.4, §6.7):

- Nothing is granted on a transport epoch until a receipt arrives on it: :meth:`allows`
  is false for every path, and :attr:`Grant.released` is false. The first update after
  ``initialize`` is sent even when it grants nothing.
- A **reduction** applies at once, inside :meth:`propose`, before the Request is sent.
  An **expansion** applies only when a receipt with ``accepted: true`` arrives; an
  update answered with an error or never answered (:meth:`failed`) never applies it,
  while its reduction stays.
- A receipt never widens the grant beyond what was proposed: the grant becomes the
  proposal minus the capability paths the server names as unavailable, and any other
  member of the receipt (extra paths, notes) is ignored. Entries of
  ``unavailableFeatures`` that are objects (``{featureSet, missingCapabilities,
  effect}``) are reported back, not applied: they are the server's testimony about its
  feature sets, which confers nothing and takes nothing away from the host's grant.
  Entries that are strings are capability paths the server says it cannot use; they are
  removed, since narrowing on testimony is always safe.
- ``accepted: false`` turns MCPL off on this epoch: the grant is empty, and the outcome
  names the server's ``fallback`` (``"mcp-only"``: keep plain MCP; ``"close"``: close
  the connection). A receipt that is not a valid receipt (``accepted`` not a boolean, a
  refusal without a known ``fallback``, a ``mode`` other than ``"degraded"``, a malformed
  ``unavailableFeatures``) is a refusal with ``fallback: "mcp-only"`` carrying a
  :class:`ProtocolError`: fail closed, keep the weaker outcome MCPL §3.2 defines, and
  let the driver close if it prefers.

**Overlapping proposals** (a second update sent before the first one's receipt):

- Each outstanding proposal keeps a *ceiling*: the intersection of its own set with
  every proposal sent after it. Proposing narrows the live grant and every ceiling.
- An accepted receipt sets the grant to its proposal's ceiling minus what the server
  named unavailable, and settles that proposal and every older one. So a receipt for an
  older proposal never applies anything the newest proposal (or any later one) left
  out, and the grant is always a subset of the newest proposal.
- A receipt (or failure) for a proposal already settled, superseded by a newer accepted
  receipt, failed, or sent on an earlier epoch is :class:`Stale`: nothing changes.
- A refusal for any outstanding proposal turns MCPL off: a server that refuses any
  policy has said it will not run MCPL as the host configured it.

**When the hold ends.** :attr:`Grant.released` becomes true with the first receipt of the
epoch (accepted or not). It also becomes true when the last outstanding update of an
epoch that has had no receipt fails: held requests are then admitted against the empty
grant and refused, rather than waiting forever for a receipt that will not come (MCPL
§6.6: a request that will never be served must get an error).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, Final, Literal

import msgspec

from mcpl_host.protocol.errors import ProtocolError
from mcpl_host.protocol.redact import log_value, value_kind

from .capabilities import HOST_LOCAL_PATHS

__all__ = [
    "UPDATE_METHOD",
    "Applied",
    "Failed",
    "Fallback",
    "Grant",
    "GrantState",
    "ReceiptOutcome",
    "Refused",
    "Stale",
    "UnavailableFeature",
    "Update",
]

UPDATE_METHOD: Final = "featureSets/update"

Fallback = Literal["mcp-only", "close"]
_FALLBACKS: Final = ("mcp-only", "close")


class GrantState(enum.Enum):
    AWAITING = "awaiting"  # no receipt on this epoch yet
    ACTIVE = "active"  # an accepted receipt; the grant is in force
    MCP_ONLY = "mcp-only"  # refused (or a malformed receipt): MCPL off, MCP goes on
    CLOSE = "close"  # refused with ``fallback: "close"``: the driver closes


class Update(msgspec.Struct, frozen=True, gc=False):
    """Send ``featureSets/update`` as a Request with ``params``; report its answer with
    ``update_id``. ``reduced`` left the grant already; ``expansion`` waits for the
    receipt."""

    update_id: int
    params: dict[str, Any]
    proposed: frozenset[str]
    reduced: frozenset[str]
    expansion: frozenset[str]
    method: str = UPDATE_METHOD


class UnavailableFeature(msgspec.Struct, frozen=True, gc=False):
    """A feature set the server reports it disabled or degraded (testimony only)."""

    feature_set: str
    effect: str
    missing_capabilities: tuple[str, ...] = ()


class Applied(msgspec.Struct, frozen=True, gc=False):
    """An accepted receipt: ``granted`` is in force now.

    ``added`` became allowed and ``removed`` stopped being allowed with this receipt.
    ``released`` is true when this is the first receipt of the epoch (release the hold).
    """

    update_id: int
    granted: frozenset[str]
    added: frozenset[str]
    removed: frozenset[str]
    degraded: bool
    unavailable_features: tuple[UnavailableFeature, ...]
    released: bool


class Refused(msgspec.Struct, frozen=True, gc=False):
    """MCPL is off on this epoch and nothing is granted.

    ``fallback`` is what to do: ``"mcp-only"`` keeps plain MCP, ``"close"`` closes the
    connection. ``error`` is set when the receipt was not a valid receipt at all (the
    fallback is then ``"mcp-only"``). ``reason`` is the server's text, escaped and cut.
    """

    update_id: int
    fallback: Fallback
    reason: str | None
    missing_capabilities: tuple[str, ...]
    error: ProtocolError | None
    released: bool


class Stale(msgspec.Struct, frozen=True, gc=False):
    """An answer for no outstanding update: nothing changed (log it)."""

    update_id: int
    reason: str


class Failed(msgspec.Struct, frozen=True, gc=False):
    """The update got an error answer or none: its expansion never applies.
    ``released`` is true when this failure ended the hold (see the module rules)."""

    update_id: int
    released: bool


ReceiptOutcome = Applied | Refused | Stale


class _Outstanding:
    __slots__ = ("ceiling",)

    def __init__(self, proposed: frozenset[str]) -> None:
        self.ceiling = proposed


class _Accepted(msgspec.Struct, frozen=True, gc=False):
    unavailable_paths: frozenset[str]
    features: tuple[UnavailableFeature, ...]
    degraded: bool


class _Refusal(msgspec.Struct, frozen=True, gc=False):
    fallback: Fallback
    reason: str | None
    missing: tuple[str, ...]


_STALE_REASON: Final = (
    "no outstanding featureSets/update with this id "
    "(already settled, superseded, failed, or sent on an earlier epoch)"
)


class Grant:
    """What one MCPL connection may do, per transport epoch. See the module rules."""

    def __init__(self) -> None:
        self._next_id = 1  # never reset: an old epoch's answer can never match
        self._granted: frozenset[str] = frozenset()
        self._outstanding: dict[int, _Outstanding] = {}  # in proposal order
        self._latest: frozenset[str] | None = None
        self._released = False
        self.state = GrantState.AWAITING
        self.epoch = 0

    @property
    def granted(self) -> frozenset[str]:
        """The paths in force now."""
        return self._granted

    @property
    def released(self) -> bool:
        """A receipt arrived on this epoch (or every update of it failed): end the hold."""
        return self._released

    @property
    def latest(self) -> frozenset[str] | None:
        """The newest proposal of this epoch, or None before the first."""
        return self._latest

    @property
    def outstanding(self) -> tuple[int, ...]:
        """Ids of the updates still waiting for an answer, oldest first."""
        return tuple(self._outstanding)

    def allows(self, path: str) -> bool:
        return path in self._granted

    def propose(
        self,
        new: Iterable[str],
        *,
        denied: Iterable[str] = (),
        enabled: Iterable[str] | None = None,
        disabled: Iterable[str] | None = None,
    ) -> Update:
        """The host wants ``new`` as the effective grant: reduce now, expand on receipt.

        ``denied`` becomes ``deniedCapabilities`` (diagnostic; omitted when empty);
        ``enabled``/``disabled`` name feature sets and are sent when given. Host-local
        paths (``hostCommand``) are part of the grant but never sent.

        Raises ``RuntimeError`` once MCPL is off on this epoch (call :meth:`reset` for a
        new one) and ``ValueError`` when a path is both proposed and denied (the server
        would have to reject the message as malformed, §5.4).
        """
        if self.state in (GrantState.MCP_ONLY, GrantState.CLOSE):
            raise RuntimeError(f"MCPL is off on this epoch ({self.state.value}); reset() first")
        proposed = frozenset(new)
        denied_set = frozenset(denied) - HOST_LOCAL_PATHS
        both = proposed & denied_set
        if both:
            raise ValueError(f"paths both granted and denied: {', '.join(sorted(both))}")
        reduced = self._granted - proposed
        self._granted &= proposed
        for entry in self._outstanding.values():
            entry.ceiling &= proposed
        update_id = self._next_id
        self._next_id += 1
        self._outstanding[update_id] = _Outstanding(proposed)
        self._latest = proposed
        params: dict[str, Any] = {"effectiveCapabilities": sorted(proposed - HOST_LOCAL_PATHS)}
        if denied_set:
            params["deniedCapabilities"] = sorted(denied_set)
        if enabled is not None:
            params["enabled"] = list(enabled)
        if disabled is not None:
            params["disabled"] = list(disabled)
        return Update(
            update_id=update_id,
            params=params,
            proposed=proposed,
            reduced=reduced,
            expansion=proposed - self._granted,
        )

    def receipt(self, update_id: int, result: object) -> ReceiptOutcome:
        """Apply the ``result`` of update ``update_id``: a decoded JSON value, or its
        JSON text (``bytes`` or :class:`msgspec.Raw`). Never raises."""
        entry = self._outstanding.get(update_id)
        if entry is None:
            return Stale(update_id, _STALE_REASON)
        parsed = _parse_receipt(result)
        if isinstance(parsed, ProtocolError):
            return self._turn_off(update_id, _Refusal("mcp-only", None, ()), parsed)
        if isinstance(parsed, _Refusal):
            return self._turn_off(update_id, parsed, None)
        before = self._granted
        self._granted = entry.ceiling - parsed.unavailable_paths
        for settled in list(self._outstanding):
            del self._outstanding[settled]
            if settled == update_id:
                break
        self.state = GrantState.ACTIVE
        first = not self._released
        self._released = True
        return Applied(
            update_id=update_id,
            granted=self._granted,
            added=self._granted - before,
            removed=before - self._granted,
            degraded=parsed.degraded,
            unavailable_features=parsed.features,
            released=first,
        )

    def failed(self, update_id: int) -> Failed | Stale:
        """Update ``update_id`` got an error answer, timed out, or cannot be answered
        (its transport closed): forget it; its expansion never applies."""
        if self._outstanding.pop(update_id, None) is None:
            return Stale(update_id, _STALE_REASON)
        ends_hold = not self._released and not self._outstanding
        if ends_hold:
            self._released = True
        return Failed(update_id, released=ends_hold)

    def reset(self) -> None:
        """A new transport epoch: nothing granted until a receipt arrives on it."""
        self.epoch += 1
        self._granted = frozenset()
        self._outstanding.clear()
        self._latest = None
        self._released = False
        self.state = GrantState.AWAITING

    def _turn_off(self, update_id: int, refusal: _Refusal, error: ProtocolError | None) -> Refused:
        self._granted = frozenset()
        self._outstanding.clear()
        self.state = GrantState.CLOSE if refusal.fallback == "close" else GrantState.MCP_ONLY
        first = not self._released
        self._released = True
        return Refused(
            update_id=update_id,
            fallback=refusal.fallback,
            reason=refusal.reason,
            missing_capabilities=refusal.missing,
            error=error,
            released=first,
        )


_DECODER: Final = msgspec.json.Decoder()


def _malformed(what: str) -> ProtocolError:
    return ProtocolError(f"malformed featureSets/update receipt: {what}")


def _strings(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _parse_receipt(result: object) -> _Accepted | _Refusal | ProtocolError:
    if isinstance(result, bytes | bytearray | msgspec.Raw):
        try:
            result = _DECODER.decode(result)
        except msgspec.DecodeError:
            return _malformed("not JSON")
    if not isinstance(result, dict):
        return _malformed(f"the result must be an object, not {value_kind(result)}")
    accepted = result.get("accepted")
    if not isinstance(accepted, bool):
        return _malformed(f"accepted must be a boolean, not {value_kind(accepted)}")
    if not accepted:
        return _parse_refusal(result)
    mode = result.get("mode", msgspec.UNSET)
    if mode is not msgspec.UNSET and mode != "degraded":
        shown = log_value(mode, 64) if isinstance(mode, str) else value_kind(mode)
        return _malformed(f'mode must be "degraded" or absent, not {shown}')
    entries = result.get("unavailableFeatures", [])
    if not isinstance(entries, list):
        return _malformed(f"unavailableFeatures must be an array, not {value_kind(entries)}")
    paths: set[str] = set()
    features: list[UnavailableFeature] = []
    for index, entry in enumerate(entries):
        if isinstance(entry, str):
            paths.add(entry)
            continue
        feature = _parse_feature(entry)
        if feature is None:
            return _malformed(
                f"unavailableFeatures[{index}] must be a capability path or an object with "
                "string featureSet and effect members"
            )
        features.append(feature)
    return _Accepted(frozenset(paths), tuple(features), degraded=mode == "degraded")


def _parse_feature(entry: object) -> UnavailableFeature | None:
    if not isinstance(entry, dict):
        return None
    feature_set = entry.get("featureSet")
    effect = entry.get("effect")
    missing = _strings(entry.get("missingCapabilities", []))
    if not isinstance(feature_set, str) or not isinstance(effect, str) or missing is None:
        return None
    return UnavailableFeature(feature_set, effect, missing)


def _parse_refusal(result: dict[Any, Any]) -> _Refusal | ProtocolError:
    fallback = result.get("fallback")
    if fallback not in _FALLBACKS:
        shown = log_value(fallback, 64) if isinstance(fallback, str) else value_kind(fallback)
        return _malformed(f'a refusal must name fallback "mcp-only" or "close", not {shown}')
    reason = result.get("reason")
    return _Refusal(
        fallback="close" if fallback == "close" else "mcp-only",
        reason=log_value(reason) if isinstance(reason, str) else None,
        missing=_strings(result.get("missingCapabilities")) or (),
    )
