"""Dual-era negotiation: the exchange that opens each transport (MCP 2026-07-28,
``basic/versioning``).

With a stateless revision in the allowlist the host asks ``server/discover`` first. A
``DiscoverResult`` or a modern error means the server is stateless; any other error, or
no answer within ``discover_timeout`` (a handshake-era server may ignore what it does not
know before ``initialize``), means the handshake era: ``initialize`` follows on the same
transport. The era found is remembered per target (:data:`ERAS`), so the next transport
to the same server goes straight to the exchange that worked; a server that changed era
says so (-32022 to ``initialize`` names its stateless revisions) and is asked again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any, Final

import trio

from ..protocol.discover import Discovery, Fallback, Retry
from ..protocol.errors import (
    UNSUPPORTED_VERSION,
    InitializeError,
    RequestTimeout,
    VersionError,
    request_error,
)
from ..protocol.handshake import Established, Failed, Handshake
from ..protocol.profiles import handshake_era, stateless_era
from ..protocol.redact import Redactor
from .epoch import Epoch

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["DEFAULT_DISCOVER_TIMEOUT", "ERAS", "Negotiator"]

DEFAULT_DISCOVER_TIMEOUT: Final = 5.0
STATELESS: Final = "stateless"
HANDSHAKE: Final = "handshake"
_ERA_MEMORY: Final = 256


class _Eras:
    """The era last found per target, the oldest forgotten first (bounded).

    Keyed by the target itself (targets are frozen and hashable): the whole command,
    working directory and env of a stdio server, the URL and headers of an HTTP one. A
    label such as ``stdio:python (+1 arg)`` would make every such server one.
    """

    def __init__(self) -> None:
        self._known: OrderedDict[Hashable, str] = OrderedDict()

    def get(self, key: Hashable | None) -> str | None:
        return None if key is None else self._known.get(key)

    def remember(self, key: Hashable | None, era: str) -> None:
        if key is None:
            return
        self._known[key] = era
        self._known.move_to_end(key)
        while len(self._known) > _ERA_MEMORY:
            self._known.popitem(last=False)

    def clear(self) -> None:
        self._known.clear()


ERAS: Final = _Eras()
"""Per process: the era each target was last found in."""


class Negotiator:
    """Runs the opening exchange(s) of one transport and returns how it settled."""

    def __init__(
        self,
        *,
        allowlist: tuple[str, ...],
        capabilities: Mapping[str, Any],
        stateless_capabilities: Mapping[str, Any],
        client_info: Mapping[str, Any],
        redactor: Redactor,
        next_id: Callable[[], int],
        discover_timeout: float,
        era_key: Hashable | None,
    ) -> None:
        self.allowlist = allowlist
        self._stateless = stateless_era(allowlist)
        self._handshake = handshake_era(allowlist)
        self._capabilities = capabilities
        self._stateless_capabilities = stateless_capabilities
        self._client_info = client_info
        self._redactor = redactor
        self._next_id = next_id
        self._discover_timeout = discover_timeout
        self._era_key = era_key

    async def run(self, epoch: Epoch, parent: Span | None = None) -> Established | Failed:
        """Negotiate on ``epoch``: at most two discovers and one initialize. The caller
        bounds the whole of it (``initialize_timeout``). With telemetry each request
        is a CLIENT span, a child of ``parent`` (the connect span's handshake step)."""
        if getattr(epoch.transport, "handshake_only", False):
            # The legacy HTTP+SSE transport is 2024-11-05's: no stateless revision runs
            # over it, so server/discover is not asked there.
            if not self._handshake:
                return Failed(
                    VersionError(
                        "the legacy HTTP+SSE transport carries only handshake-era revisions "
                        f"(allowed: {', '.join(self.allowlist)})",
                        offered=self.allowlist[0],
                        answered=None,
                        allowed=self.allowlist,
                    )
                )
            probe = False
        else:
            probe = bool(self._stateless) and not (
                self._handshake and ERAS.get(self._era_key) == HANDSHAKE
            )
        revision: str | None = None
        for _round in range(2):
            if probe:
                step = await self._discover(epoch, revision, parent)
                if isinstance(step, Retry):
                    if revision is not None:  # asked twice: the server contradicts itself
                        return Failed(self._version_error(step.revision))
                    revision = step.revision
                    step = await self._discover(epoch, revision, parent)
                    if isinstance(step, Retry):
                        return Failed(self._version_error(step.revision))
                if isinstance(step, Established):
                    ERAS.remember(self._era_key, STATELESS)
                    return step
                if isinstance(step, Failed):
                    return step
                # A Fallback, or no answer in time: the handshake era.
            step = await self._exchange(
                epoch,
                Handshake(
                    allowlist=self.allowlist,
                    request_id=self._next_id(),
                    capabilities=self._capabilities,
                    client_info=self._client_info,
                    redactor=self._redactor,
                ),
                None,
                parent,
            )
            assert not isinstance(step, Fallback | Retry | None)
            if isinstance(step, Established):
                if self._stateless:
                    # Known to be of the handshake era only where server/discover could
                    # be (or was remembered to be) refused: an allowlist without the
                    # stateless revision proves nothing about the server.
                    ERAS.remember(self._era_key, HANDSHAKE)
                return step
            error = step.error
            if (
                isinstance(error, InitializeError)
                and error.code == UNSUPPORTED_VERSION
                and self._stateless
                and not probe
            ):
                # Remembered as handshake-era, but the server now speaks a stateless
                # revision: ask it as one.
                probe = True
                continue
            return step
        raise AssertionError("unreachable")  # pragma: no cover - the second round returns

    async def _discover(
        self, epoch: Epoch, revision: str | None, parent: Span | None
    ) -> Established | Failed | Fallback | Retry | None:
        discovery = Discovery(
            allowlist=self.allowlist,
            request_id=self._next_id(),
            capabilities=self._stateless_capabilities,
            client_info=self._client_info,
            revision=revision,
            redactor=self._redactor,
        )
        # Only a short wait when initialize is there to fall back on.
        limit = self._discover_timeout if self._handshake else None
        step = await self._exchange(epoch, discovery, limit, parent)
        if step is None:
            epoch.log.info(
                "discover unanswered",
                reason=f"no answer to server/discover within {limit:g} s: trying initialize",
            )
        elif isinstance(step, Fallback):
            epoch.log.info("handshake era", reason=step.reason)
        return step

    @staticmethod
    async def _exchange(
        epoch: Epoch, machine: Handshake | Discovery, limit: float | None, parent: Span | None
    ) -> Established | Failed | Fallback | Retry | None:
        """Write ``machine``'s request and wait for the reader to settle it; None when
        ``limit`` passes first."""
        epoch.handshake = machine
        epoch.handshake_step = None
        epoch.handshake_done = trio.Event()
        telemetry = epoch.telemetry
        if telemetry is None:
            await epoch.write(machine.request())
            with trio.move_on_after(limit if limit is not None else float("inf")):
                await epoch.handshake_done.wait()
            return epoch.handshake_step
        # Not through Outbound: the span is made here, its context carried in _meta.
        method = "initialize" if isinstance(machine, Handshake) else "server/discover"
        trace = telemetry.request(method, None, parent=parent)
        trace.sent(machine.request_id)
        try:
            await epoch.write(machine.request(trace.carrier))
            with trio.move_on_after(limit if limit is not None else float("inf")):
                await epoch.handshake_done.wait()
        except BaseException as exc:
            timed_out = isinstance(exc, trio.Cancelled) and (
                trio.current_time() >= epoch.handshake_deadline
            )
            trace.end(_timed_out(method) if timed_out else exc)
            raise
        step = epoch.handshake_step
        if isinstance(step, Failed):
            trace.end(step.error)
        elif step is None:
            trace.end(_timed_out(method, limit))
        elif isinstance(step, Fallback) and step.code is not None:
            trace.end(request_error(step.code, step.reason, None))  # refused: the era is older
        else:
            trace.end()
        return step

    def _version_error(self, named: str) -> VersionError:
        return VersionError(
            f"the server named a revision it then refused ({self._redactor.log_value(named, 64)})",
            offered=named,
            answered=named,
            allowed=self.allowlist,
        )


def _timed_out(method: str, limit: float | None = None) -> RequestTimeout:
    """How a handshake request's span ends when no answer came in time."""
    within = "in time" if limit is None else f"within {limit:g} s"
    return RequestTimeout(f"no answer to {method} {within}", method=method, timeout=limit or 0.0)
