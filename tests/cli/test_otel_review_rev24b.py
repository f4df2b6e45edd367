"""Review of issue 24's CLI export (reviewer rev24b): the real command as a subprocess,
exporting to the real OTLP receiver of tests/cli/otlp.py. Each test fails until its
defect is fixed."""

from __future__ import annotations

import os
import subprocess

from .helpers import CLI
from .otlp import receiver

SECRET = "hdr-s3cret-api-key-3141"


def test_a_malformed_otlp_header_is_not_printed_with_its_secret() -> None:
    """The OTLP exporter parses OTEL_EXPORTER_OTLP_HEADERS itself and, for an entry it
    cannot read (``authorization: Bearer TOKEN``, a colon where ``=`` belongs, or a
    value with a character it refuses), logs the whole entry through the stdlib logger
    ``opentelemetry.util.re``. cli/otel.py quiets only ``opentelemetry.exporter`` and
    ``opentelemetry.sdk`` (_QUIETED), and the stdlib records do not pass the command's
    LogMask: the header, token and all, goes to stderr by logging's last-resort
    handler (once per exporter). env_secrets does not even know it as a secret (it
    looks for ``=``)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environment["OTEL_EXPORTER_OTLP_HEADERS"] = f"authorization: Bearer {SECRET}"
    with receiver() as got:
        done = subprocess.run(
            [
                *CLI,
                "--otel",
                got.url,
                "call",
                "--tool",
                "echo",
                "--args",
                '{"text": "x"}',
                "--demo",
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
            env=environment,
        )
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stderr, done.stderr
    assert SECRET not in done.stdout


def test_a_setup_that_fails_halfway_leaves_no_provider_exporting() -> None:
    """Export.__init__ sets the global tracer provider (with its BatchSpanProcessor
    thread) before it makes the metrics reader; when that raises (here
    ``OTEL_METRIC_EXPORT_INTERVAL=0``: PeriodicExportingMetricReader's ValueError),
    otel.start says "export is off: its setup failed" and returns None, but the
    tracer provider stays the global one: every span is still recorded and exported
    by its thread, never flushed or shut down within the budget, with the exporter's
    logging no longer taken off the terminal (failures.remove())."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environment["OTEL_METRIC_EXPORT_INTERVAL"] = "0"
    environment["OTEL_BSP_SCHEDULE_DELAY"] = "50"  # the processor's thread exports at once
    with receiver() as got:
        done = subprocess.run(
            [
                *CLI,
                "--otel",
                got.url,
                "call",
                "--tool",
                "echo",
                "--args",
                '{"text": "x"}',
                "--demo",
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
            env=environment,
        )
        exported = [span.name for span in got.spans()]
    assert done.returncode == 0, done.stderr
    assert "export is off" in done.stderr, done.stderr
    assert exported == [], f"said export is off, yet exported {exported}"
