"""The metric instruments of :mod:`mcpl_host.telemetry`: the conventions' histograms
for MCP, and what they do not cover under ``mcpl_host.``."""

from __future__ import annotations

from typing import Any, Final

from opentelemetry import metrics

__all__ = ["SCOPE", "Meters", "meters"]

#: The instrumentation scope of every tracer and meter (the package's name).
SCOPE: Final = "mcpl_host"
# The conventions' advice for MCP operation durations, in seconds.
_DURATION_BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)

_GLOBAL_METERS: list[Meters] = []  # the one set on the global provider (see meters)


def meters(provider: Any) -> Meters:
    """The instruments of ``provider``. An SDK's provider gives back the meter and the
    instruments it made already under the same names; the API's global proxy keeps
    every meter it is asked for, for good: its instruments are made once."""
    if provider is not None:
        return Meters(provider)
    if not _GLOBAL_METERS:
        _GLOBAL_METERS.append(Meters(None))
    return _GLOBAL_METERS[0]


class Meters:
    """The metric instruments of a meter provider."""

    def __init__(self, provider: Any) -> None:
        meter = metrics.get_meter(SCOPE, meter_provider=provider)
        buckets = list(_DURATION_BUCKETS)
        self.client_duration = meter.create_histogram(
            "mcp.client.operation.duration",
            unit="s",
            description="MCP request duration as observed by the host, sent to answered",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.server_duration = meter.create_histogram(
            "mcp.server.operation.duration",
            unit="s",
            description="Duration of a server's request the host served, received to answered",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.session_duration = meter.create_histogram(
            "mcp.client.session.duration",
            unit="s",
            description="How long one transport to the server lasted, connected to lost or closed",
            explicit_bucket_boundaries_advisory=buckets,
        )
        self.client_active = meter.create_up_down_counter(
            "mcpl_host.client.requests.active",
            unit="{request}",
            description="Requests the host sent that are waiting for their answer",
        )
        self.server_active = meter.create_up_down_counter(
            "mcpl_host.server.requests.active",
            unit="{request}",
            description="Requests of the server's the host is serving",
        )
        self.reconnects = meter.create_counter(
            "mcpl_host.reconnects",
            unit="{attempt}",
            description="Attempts to replace a lost transport, by outcome",
        )
        self.refusals = meter.create_counter(
            "mcpl_host.refusals",
            unit="{message}",
            description="Messages of the server's the host refused or dropped, by reason",
        )
        self.io = meter.create_counter(
            "mcpl_host.transport.io",
            unit="By",
            description="Bytes of MCP messages written to and read from the server",
        )
