"""``--otel`` and the standard ``OTEL_*`` variables: the command's spans and metrics
exported over OTLP/HTTP (docs/cli.md, "OpenTelemetry").

The library only ever uses the OpenTelemetry API and whatever providers the application
set (:mod:`mcpl_host.telemetry`); the command owns its process, so here it is the
application: it sets up the SDK (a ``TracerProvider`` with a ``BatchSpanProcessor``
and a ``MeterProvider`` with a ``PeriodicExportingMetricReader``, each over the
OTLP/HTTP exporter), sets them as the global providers before any connection is made,
and flushes and shuts them down before the command exits, whatever ended it.

Export must never cost the command its result: an unreachable or slow collector delays
the exit by :data:`CLOSE_BUDGET` seconds at most and is said in one warning line on
stderr. The exporters' own logging (a traceback per failed batch, retry notices, the
collector's answer) is taken off the terminal: it is never shown, it only decides
whether that line is written. The line names the collector by scheme, host and port
only, never its path, query or user information, and never a header: the headers
(``OTEL_EXPORTER_OTLP_HEADERS`` often holds an API key) are read by the exporter itself
and are masked in everything the command writes (:func:`env_secrets`).

Nothing here imports OpenTelemetry until export is asked for: a command without
``--otel`` and without the variables pays nothing.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, TextIO
from urllib.parse import unquote, urlsplit

from .. import __version__

__all__ = [
    "CLOSE_BUDGET",
    "INSTALL",
    "Export",
    "Unavailable",
    "env_secrets",
    "requested",
    "start",
]

#: The most seconds the command waits at its end for the last spans and metrics to go.
CLOSE_BUDGET: Final = 3.0
#: Each export request's own bound, unless an ``OTEL_EXPORTER_OTLP_*TIMEOUT`` says
#: another: the exporter retries a refused connection with backoff until it passes.
EXPORT_TIMEOUT: Final = 2.0
INSTALL: Final = "pip install 'mcpl-host[otel-export]'"
SERVICE_NAME: Final = "mcpl-host"
_DEFAULT_ENDPOINT: Final = "http://localhost:4318"
_SIGNALS: Final = {"traces": "TRACES", "metrics": "METRICS"}
_HEADER_VARIABLES: Final = (
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
)
_ENDPOINT_VARIABLES: Final = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)
_TIMEOUT_VARIABLES: Final = (
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
)
# The records that are the export's (the SDK's processors and readers, the exporters,
# and the parser of OTEL_EXPORTER_OTLP_HEADERS, which logs a malformed entry whole,
# credential included): taken off the terminal while it runs, as are those of the HTTP
# library under them. The API's own (a context detached twice) are the library's bugs:
# they stay shown.
_EXPORT_LOGGERS: Final = ("opentelemetry.exporter", "opentelemetry.sdk", "opentelemetry.util")
_QUIETED: Final = (*_EXPORT_LOGGERS, "urllib3", "requests")


class Unavailable(Exception):
    """``--otel`` was given but the SDK or the OTLP exporter is not installed."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def requested(flag: bool, environ: Mapping[str, str]) -> bool:
    """Whether the command exports: ``--otel`` was given, or the variables ask for it
    (an ``OTEL_*_EXPORTER`` of ``otlp``, or an OTLP endpoint), unless
    ``OTEL_SDK_DISABLED`` is true. Raises nothing."""
    if flag:
        return True
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    chosen = (environ.get(f"OTEL_{kind}_EXPORTER", "") for kind in _SIGNALS.values())
    return any("otlp" in _names(value) for value in chosen) or any(
        environ.get(name, "").strip() for name in _ENDPOINT_VARIABLES
    )


def env_secrets(environ: Mapping[str, str]) -> list[str]:
    """The values of the OTLP headers the variables set (``key=value,...``, values
    percent-encoded), as written and decoded: masked in everything the command writes.
    Raises nothing."""
    found: list[str] = []
    for name in _HEADER_VARIABLES:
        for entry in environ.get(name, "").split(","):
            _, eq, value = entry.partition("=")
            if not eq:  # malformed ("authorization: Bearer TOKEN"): all past the name
                value = entry.strip().partition(":" if ":" in entry else " ")[2]
            if value.strip():
                found += [value.strip(), unquote(value.strip())]
                # "Bearer TOKEN", "ApiKey TOKEN": the token alone too.
                found.append(unquote(value.strip()).partition(" ")[2].strip())
    return [value for value in found if value]


def start(flag: bool, endpoint: str | None, environ: Mapping[str, str]) -> Export | None:
    """Set up the export and make its providers the global ones, when
    :func:`requested`; None when it is not, or when only the variables asked and the SDK
    is not installed, or when its setup failed (said in one line on stderr).

    ``endpoint`` (``--otel URL``) is the collector's base URL (``/v1/traces`` and
    ``/v1/metrics`` are added), winning over the variables.
    Raises :class:`Unavailable` when ``flag`` is set and the SDK or the exporter is not
    installed."""
    if not requested(flag, environ):
        return None
    try:
        sdk = _import_sdk()
    except ImportError:
        if not flag:  # the variables alone: they may be meant for another program
            return None
        raise Unavailable(
            f"--otel needs the OpenTelemetry SDK and OTLP exporter: {INSTALL}"
        ) from None
    on = {
        signal
        for signal, kind in _SIGNALS.items()
        if _exports(environ.get(f"OTEL_{kind}_EXPORTER"))
    }
    if not on:
        return None
    failures = _Failures()
    failures.install()
    endpoints = {signal: _endpoint(signal, endpoint, environ) for signal in on}
    try:
        return Export(
            sdk,
            signals=on,
            endpoint=endpoint,
            endpoints=endpoints,
            failures=failures,
            environ=environ,
        )
    except Exception as exc:  # a bad variable, a credential provider that failed
        failures.remove()
        _say(
            f"mcpl-host: warning: OpenTelemetry export is off: its setup failed "
            f"({type(exc).__name__})"
        )
        return None


class Export:
    """The SDK's providers, set as the global ones, and their bounded end."""

    def __init__(
        self,
        sdk: Any,
        *,
        signals: set[str],
        endpoint: str | None,
        endpoints: dict[str, str],
        failures: _Failures,
        environ: Mapping[str, str],
    ) -> None:
        self._failures = failures
        self._origins = {_origin(url) for url in endpoints.values()}
        timeout = None if any(environ.get(name) for name in _TIMEOUT_VARIABLES) else EXPORT_TIMEOUT
        resource = _resource(sdk)
        # shutdown_on_exit=False: the SDK's atexit handler would shut down again, unbounded.
        self._closers: list[Callable[[], object]] = []
        self._exporters: list[Any] = []
        # Everything is built before anything is made global: a setup that fails half-way
        # (a bad OTEL_METRIC_EXPORT_INTERVAL) must leave no provider exporting, and what
        # was built is shut down.
        tracer_provider = meter_provider = None
        try:
            if "traces" in signals:
                spans = sdk.OTLPSpanExporter(
                    endpoint=None if endpoint is None else endpoints["traces"], timeout=timeout
                )
                self._exporters.append(spans)
                tracer_provider = sdk.TracerProvider(resource=resource, shutdown_on_exit=False)
                tracer_provider.add_span_processor(sdk.BatchSpanProcessor(spans))
            if "metrics" in signals:
                metrics = sdk.OTLPMetricExporter(
                    endpoint=None if endpoint is None else endpoints["metrics"], timeout=timeout
                )
                self._exporters.append(metrics)
                reader = sdk.PeriodicExportingMetricReader(metrics)
                meter_provider = sdk.MeterProvider(
                    resource=resource, metric_readers=[reader], shutdown_on_exit=False
                )
        except Exception:
            for built in (tracer_provider, *self._exporters):
                if built is not None:
                    _quietly(built.shutdown)()
            raise
        if tracer_provider is not None:
            sdk.trace.set_tracer_provider(tracer_provider)
            self._closers.append(tracer_provider.shutdown)
        if meter_provider is not None:
            sdk.metrics.set_meter_provider(meter_provider)
            budget = CLOSE_BUDGET * 1000
            self._closers.append(lambda: meter_provider.shutdown(timeout_millis=budget))

    def close(self, stream: TextIO | None = None, budget: float = CLOSE_BUDGET) -> None:
        """Export what is left and shut the providers down, within ``budget`` seconds;
        past it, the exporters are stopped mid-retry and what they held is lost. Says a
        failure in one line on ``stream`` (default stderr). Raises nothing but what a
        signal handler raises (a second Ctrl-C stops the wait)."""
        deadline = time.monotonic() + budget
        # Each signal in a thread of its own: a slow trace export does not eat the
        # metrics' time, and the command's thread waits with a deadline it keeps.
        threads = [
            threading.Thread(target=_quietly(closer), name="mcpl-host otel close", daemon=True)
            for closer in self._closers
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        late = any(thread.is_alive() for thread in threads)
        if late:
            for exporter in self._exporters:  # ends a retry's backoff at once
                with contextlib.suppress(Exception):
                    exporter.shutdown()
            # Daemons: one still stuck in a request (no retry to cut short) dies at exit.
            grace = time.monotonic() + 0.2
            for thread in threads:
                thread.join(max(0.0, grace - time.monotonic()))
        self._failures.remove()
        where = _origin_text(self._origins)
        if late:
            _say(
                f"mcpl-host: warning: OpenTelemetry export to {where} did not finish "
                f"within {budget:g} s; spans or metrics were lost",
                stream,
            )
        elif self._failures.failed:
            detail = f" ({self._failures.detail})" if self._failures.detail else ""
            _say(
                f"mcpl-host: warning: OpenTelemetry export to {where} failed{detail}; "
                "spans or metrics were lost",
                stream,
            )


def _import_sdk() -> Any:
    """The SDK's and the exporter's names, as one namespace; ImportError without them."""
    from types import SimpleNamespace  # noqa: PLC0415

    from opentelemetry import metrics, trace  # noqa: PLC0415
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # noqa: PLC0415
        OTLPMetricExporter,
    )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
        OTLPSpanExporter,
    )
    from opentelemetry.sdk import resources  # noqa: PLC0415
    from opentelemetry.sdk.metrics import MeterProvider  # noqa: PLC0415
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader  # noqa: PLC0415
    from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
    from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: PLC0415

    return SimpleNamespace(
        trace=trace,
        metrics=metrics,
        resources=resources,
        TracerProvider=TracerProvider,
        BatchSpanProcessor=BatchSpanProcessor,
        MeterProvider=MeterProvider,
        PeriodicExportingMetricReader=PeriodicExportingMetricReader,
        OTLPSpanExporter=OTLPSpanExporter,
        OTLPMetricExporter=OTLPMetricExporter,
    )


def _resource(sdk: Any) -> Any:
    """The SDK's resource (its detectors read ``OTEL_RESOURCE_ATTRIBUTES`` and
    ``OTEL_SERVICE_NAME``), named ``mcpl-host`` where they name no service."""
    resources = sdk.resources
    from_env = resources.OTELResourceDetector().detect().attributes
    ours: dict[str, str] = {}
    if resources.SERVICE_NAME not in from_env:
        ours[resources.SERVICE_NAME] = SERVICE_NAME
    if resources.SERVICE_VERSION not in from_env:
        ours[resources.SERVICE_VERSION] = __version__
    return resources.Resource.create(ours)


def _names(value: str | None) -> list[str]:
    return [name.strip().lower() for name in (value or "").split(",") if name.strip()]


def _exports(value: str | None) -> bool:
    """Whether a signal is exported by its ``OTEL_*_EXPORTER``: unset is the
    specification's default, otlp; ``none`` (or only exporters the command does not
    have, such as ``console``) is not."""
    names = _names(value)
    return not names or "otlp" in names


def _endpoint(signal: str, base: str | None, environ: Mapping[str, str]) -> str:
    """The URL a signal goes to, by the exporter's own rule: ``--otel URL`` first, then
    the signal's variable as written, then the general one with the signal's path."""
    path = f"v1/{signal}"
    if base is None:
        own = environ.get(f"OTEL_EXPORTER_OTLP_{_SIGNALS[signal]}_ENDPOINT", "").strip()
        if own:
            return own
        base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or _DEFAULT_ENDPOINT
    return f"{base.removesuffix('/')}/{path}"


def _origin(url: str) -> str | None:
    """``scheme://host:port`` of a URL: never its user information, path or query."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname or parts.scheme not in ("http", "https"):
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + ("" if port is None else f":{port}")


def _origin_text(origins: set[str | None]) -> str:
    if len(origins) == 1 and None not in origins:
        return str(next(iter(origins)))
    return "the OTLP collector"


def _say(line: str, stream: TextIO | None = None) -> None:
    with contextlib.suppress(OSError, ValueError):  # a closed stderr must not fail the command
        out = stream or sys.stderr
        out.write(line + "\n")
        out.flush()


def _quietly(fn: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        # A thread's exception would be printed with its traceback by threading's hook.
        with contextlib.suppress(Exception):
            fn()

    return run


class _Failures(logging.Handler):
    """Takes the export's log records off the terminal, noting whether one said the
    export failed and a safe word on why: an HTTP status, or an exception's type name.
    Their text is never shown: it may quote the collector's answer or the endpoint."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.failed = False
        self.detail: str | None = None
        self._saved: list[tuple[logging.Logger, bool]] = []

    def install(self) -> None:
        for name in _QUIETED:
            logger = logging.getLogger(name)
            self._saved.append((logger, logger.propagate))
            logger.addHandler(self)
            logger.propagate = False  # else the root's last-resort handler prints it

    def remove(self) -> None:
        for logger, propagate in self._saved:
            logger.removeHandler(self)
            logger.propagate = propagate
        self._saved.clear()

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith(_EXPORT_LOGGERS):
            return
        if self.detail is None:
            self.detail = _detail(record)
        if record.levelno >= logging.ERROR:
            self.failed = True

    def handleError(self, record: logging.LogRecord) -> None:
        pass  # never a traceback of its own on stderr


def _detail(record: logging.LogRecord) -> str | None:
    """What a failed export's record says safely: ``HTTP 401``, ``ConnectionError``."""
    args = record.args if isinstance(record.args, tuple) else ()
    if record.exc_info and record.exc_info[1] is not None:
        args = (*args, record.exc_info[1])
    for arg in args:
        if isinstance(arg, int) and not isinstance(arg, bool) and 100 <= arg <= 599:
            return f"HTTP {arg}"
    for arg in args:
        if isinstance(arg, BaseException):
            return type(arg).__name__
    return None
