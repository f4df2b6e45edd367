"""``mcpl-host --otel`` and the OTEL_* variables (docs/cli.md, "OpenTelemetry";
docs/observability.md, "The command line"): the real command, as
a subprocess, exporting to a real OTLP/HTTP receiver on 127.0.0.1 whose protobuf bodies
are decoded with the collector's own message types.

Every run that exports is a subprocess: the command sets the global providers, which a
process can set once only (the suite's own process never sets them).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from mcpl_host.cli import otel
from mcpl_host.cli.args import Options, UsageError, parse
from mcpl_host.cli.completion import commands
from mcpl_host.cli.parser import build

from .helpers import CLI, TIMEOUT, closed_port_url, server
from .otlp import Point, Receiver, Span, receiver, silent_collector

ROOT = Path(__file__).resolve().parents[2]
# The section is a page of its own until it is merged into docs/observability.md: the
# examples are read from whichever holds them.
PAGES = ("observability.md",)
SECRET_ENV = "env-s3cret-value-0451"
SECRET_HEADER = "hdr-s3cret-api-key-7788"
ECHO = ("--tool", "echo", "--args", '{"text": "traced"}', "--demo")


def command(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``mcpl-host ARGS`` with none of this machine's OTEL_* variables, plus ``env``."""
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "COLUMNS"
    }
    environment.update(env or {})
    return subprocess.run(
        [*CLI, *args], check=False, capture_output=True, text=True, timeout=TIMEOUT, env=environment
    )


def one(spans: list[Span], name: str) -> Span:
    found = [span for span in spans if span.name == name]
    assert len(found) == 1, [span.name for span in spans]
    return found[0]


def points(found: list[Point], metric: str) -> list[Point]:
    return [point for point in found if point.metric == metric]


class Flagged:
    """One run of ``mcpl-host --otel URL call ... --demo`` with a secret in the server's
    env and one in the exporter's headers (which the tool call echoes), and what the
    receiver got from it."""

    def __init__(self, done: subprocess.CompletedProcess[str], got: Receiver, took: float) -> None:
        self.done = done
        self.took = took  # seconds: the SDK's import and a good export included
        self.got = got
        self.spans = got.spans()
        self.points = got.points()


@pytest.fixture(scope="module")
def flagged() -> Iterator[Flagged]:
    with receiver() as got:
        started = time.monotonic()
        done = command(
            "--otel",
            got.url,
            "call",
            "--json",
            "--env",
            f"DEMO_TOKEN={SECRET_ENV}",
            # The server echoes the exporter's secret back: the report masks it.
            *ECHO[:2],
            "--args",
            json.dumps({"text": f"traced {SECRET_HEADER}"}),
            "--demo",
            env={"OTEL_EXPORTER_OTLP_HEADERS": f"x-api-key={SECRET_HEADER}"},
        )
        took = time.monotonic() - started
        got.wait_for("/v1/metrics")
        yield Flagged(done, got, took)


def test_the_flag_exports_the_calls_client_span_and_its_metric(flagged: Flagged) -> None:
    assert flagged.done.returncode == 0, flagged.done.stderr
    assert json.loads(flagged.done.stdout)["result"]["content"][0]["text"] == "traced ***"
    assert flagged.done.stderr == ""
    span = one(flagged.spans, "tools/call echo")
    assert span.kind == "CLIENT"
    assert span.status == 0  # answered
    attributes = span.attributes
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "echo"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["network.transport"] == "pipe"
    assert attributes["mcp.protocol.version"] == "2025-11-25"
    assert attributes["jsonrpc.request.id"].isdigit()
    assert attributes["mcpl_host.server.name"] == "demo"
    # The SDK's resource, named for the command (no OTEL_SERVICE_NAME given).
    assert span.resource["service.name"] == "mcpl-host"
    assert span.resource["telemetry.sdk.name"] == "opentelemetry"
    durations = points(flagged.points, "mcp.client.operation.duration")
    called = [p for p in durations if p.attributes.get("mcp.method.name") == "tools/call"]
    assert len(called) == 1
    assert called[0].count == 1
    assert called[0].attributes["gen_ai.tool.name"] == "echo"
    assert "error.type" not in called[0].attributes
    # The exporter's POSTs carried the header the variable sets (the secret is real).
    assert all(r.headers["x-api-key"] == SECRET_HEADER for r in flagged.got.received)
    assert {r.headers["content-type"] for r in flagged.got.received} == {"application/x-protobuf"}


def test_no_secret_is_printed_or_exported(flagged: Flagged) -> None:
    for secret in (SECRET_ENV, SECRET_HEADER):
        assert secret not in flagged.done.stdout
        assert secret not in flagged.done.stderr
        for request in flagged.got.received:
            assert secret.encode() not in request.body, request.path
    # Nor the command line that held the env secret (the process detector is off).
    assert all("process.command_args" not in span.resource for span in flagged.spans)


def test_the_connect_span_is_exported_with_its_steps(flagged: Flagged) -> None:
    connect = one(flagged.spans, "mcpl_host.connect")
    assert connect.kind == "INTERNAL"
    children = {s.name for s in flagged.spans if s.parent_id == connect.span_id}
    assert {"mcpl_host.spawn", "mcpl_host.handshake"} <= children


def _page_commands() -> list[str]:
    """The ``$ `` lines of the docs page's console example that run mcpl-host."""
    for name in PAGES:
        page = ROOT / "docs" / name
        if page.is_file() and "--otel" in page.read_text():
            text = page.read_text()
            return [
                line[2:]
                for line in text.splitlines()
                if line.startswith("$ ") and "mcpl-host" in line and "localhost:4318" in line
            ]
    raise AssertionError(f"no page of {PAGES} shows --otel")


def _as_run(line: str, url: str) -> tuple[list[str], dict[str, str]]:
    """A console line's words (after the leading NAME=VALUE ones, which are its env),
    the documented collector replaced by the receiver."""
    words = [word.replace("http://localhost:4318", url) for word in shlex.split(line)]
    env: dict[str, str] = {}
    while "=" in words[0] and not words[0].startswith("-"):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words[0] == "mcpl-host", line
    return words[1:], env


def test_the_pages_examples_export_by_the_flag_and_by_the_variables() -> None:
    lines = _page_commands()
    assert len(lines) == 2, lines
    flag_line, variables_line = lines
    assert "--otel" in flag_line
    assert "--otel" not in variables_line
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=" in variables_line
    for line in lines:
        with receiver() as got:
            args, env = _as_run(line, got.url)
            done = command(*args, env=env)
            assert done.returncode == 0, done.stderr
            assert done.stderr == ""
            got.wait_for("/v1/metrics")
            spans = got.spans()
            call = one(spans, "tools/call echo" if "echo" in line else "tools/call add")
            assert call.kind == "CLIENT"
            # OTEL_SERVICE_NAME names the service: the SDK reads it, the command lets it.
            assert call.resource["service.name"] == env.get("OTEL_SERVICE_NAME", "mcpl-host")
            assert points(got.points(), "mcp.client.operation.duration")


def test_a_failed_request_is_exported_with_its_error_code() -> None:
    with receiver() as got:
        done = command("call", "--otel", got.url, "--resource", "demo://nothing", "--demo")
        assert done.returncode == 1
        assert done.stderr == ""
        read = one(got.spans(), "resources/read")
    assert read.status == 2  # error
    assert read.attributes["error.type"] == "-32002"
    assert read.attributes["rpc.response.status_code"] == "-32002"
    assert read.attributes["mcp.resource.uri"] == "demo://nothing"


def _elapsed(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    done = command(*args)
    return time.monotonic() - started, done


def test_a_collector_that_is_down_costs_a_second_or_two_and_one_line(flagged: Flagged) -> None:
    baseline = flagged.took  # the same command, its collector up
    took, done = _elapsed("call", "--json", "--otel", closed_port_url().removesuffix("/mcp"), *ECHO)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True  # stdout is still one JSON object
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("mcpl-host: warning: OpenTelemetry export to http://127.0.0.1:")
    assert "failed (ConnectionError); spans or metrics were lost" in lines[0]
    # A refused connection fails at once: within the budget, with a loaded machine's margin.
    assert took - baseline < otel.CLOSE_BUDGET + 4.0, (took, baseline)


def test_a_collector_that_never_answers_is_given_up_within_the_budget(flagged: Flagged) -> None:
    baseline = flagged.took
    with silent_collector() as url:
        # The export's own timeout set long: only the command's budget ends the wait.
        started = time.monotonic()
        done = command("--otel", url, "call", *ECHO, env={"OTEL_EXPORTER_OTLP_TIMEOUT": "30"})
        took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "traced" in done.stdout
    lines = done.stderr.splitlines()
    assert lines == [
        f"mcpl-host: warning: OpenTelemetry export to {url} did not finish within "
        f"{otel.CLOSE_BUDGET:g} s; spans or metrics were lost"
    ]
    # Far short of the 30 s the export would wait: a loaded machine gets its margin.
    assert took - baseline < otel.CLOSE_BUDGET + 10.0, (took, baseline)


# A server that answers the handshake, then marks the file named by its argument once a
# tools/call has come and never answers it (it ends with its stdin).
BLOCKING = """\
request = read_initialize()
initialized(request)
for line in sys.stdin:
    if json.loads(line).get("method") == "tools/call":
        open(sys.argv[1], "w").close()
"""


def test_ctrl_c_still_exports_the_cancelled_call(tmp_path: Path) -> None:
    mark = tmp_path / "called"
    argv = server(tmp_path, "blocking", BLOCKING)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    with receiver() as got:
        process = subprocess.Popen(
            [*CLI, "--otel", got.url, "call", "--tool", "wait", "--", *argv, str(mark)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
        )
        try:
            deadline = time.monotonic() + 30
            while not mark.exists() and time.monotonic() < deadline:
                assert process.poll() is None, process.communicate()
                time.sleep(0.02)
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=TIMEOUT)
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == 130, err
        assert "Traceback" not in err
        call = one(got.spans(), "tools/call wait")
    assert call.status == 2
    assert call.attributes["error.type"] == "cancelled"


# Makes `import opentelemetry.exporter` fail, as where the exporter is not installed.
NO_EXPORTER = """\
import sys

class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry.exporter" or name.startswith("opentelemetry.exporter."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, _NotInstalled())
"""


def test_without_the_exporter_the_flag_says_how_to_install_it(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(NO_EXPORTER)
    shim = {"PYTHONPATH": str(tmp_path)}
    done = command("--otel", "call", *ECHO, env=shim)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "mcpl-host: error: --otel needs the OpenTelemetry SDK and OTLP exporter: "
        "pip install 'mcpl-host[otel-export]'\n"
    )
    # --json: the one JSON object says it too.
    done = command("call", "--json", "--otel", *ECHO, env=shim)
    assert done.returncode == 2
    report = json.loads(done.stdout)
    assert report["error"]["kind"] == "config-error"
    assert "pip install 'mcpl-host[otel-export]'" in report["error"]["message"]
    # The variables alone do nothing without it: they may be meant for another program.
    done = command("call", *ECHO, env={**shim, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:1"})
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


# -- the command line and the variables, in process (nothing exported) --------------------


def _options(*args: str) -> Options:
    options = parse(list(args))
    assert isinstance(options, Options)
    return options


@pytest.mark.parametrize(
    ("args", "endpoint"),
    [
        (("--otel", "call", *ECHO), None),
        (("--otel", "http://c:4318", "call", *ECHO), "http://c:4318"),
        (("call", "--otel", *ECHO), None),
        (("call", "--otel", "https://c/otlp", *ECHO), "https://c/otlp"),
        (("connect", "--otel=http://c:4318", "http://server/mcp"), "http://c:4318"),
        (("shell", "--otel", "--demo"), None),
    ],
)
def test_the_flag_goes_before_the_command_or_with_it(
    args: tuple[str, ...], endpoint: str | None
) -> None:
    options = _options(*args)
    assert options.otel is True
    assert options.otel_endpoint == endpoint
    assert _options("call", *ECHO).otel is False


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("check", "--otel", "--demo"), "--otel goes with connect, call and shell"),
        (("--otel", "check", "--demo"), "--otel goes with connect, call and shell"),
        (("--otel", "auth", "status"), "--otel goes with connect, call and shell"),
        (("config", "list", "--otel"), "--otel goes with connect, call and shell"),
        (("connect", "--otel=grpc://c:4317", "--demo"), "the collector's URL is http(s)://"),
        (
            ("connect", "--otel", "http://server/mcp"),
            "the URL after --otel was taken for the collector's",
        ),
    ],
)
def test_the_flag_is_refused_where_it_has_nothing_to_export(
    args: tuple[str, ...], says: str
) -> None:
    with pytest.raises(UsageError) as refused:
        parse(list(args))
    assert says in refused.value.message
    assert "grpc://c" not in refused.value.message  # a URL is never repeated


def test_a_stdio_fix_keeps_the_flag_as_written() -> None:
    with pytest.raises(UsageError) as refused:
        parse(["connect", "--otel", "npx", "-y", "pkg"])
    assert refused.value.message.endswith("mcpl-host connect --otel -- npx -y pkg")


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:4318/v1/metrics"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_METRICS_EXPORTER": "console,otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, False),
        ({"OTEL_SERVICE_NAME": "x"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"}, False),
    ],
)
def test_the_variables_that_ask_for_export(environ: dict[str, str], wanted: bool) -> None:
    assert otel.requested(False, environ) is wanted
    assert otel.requested(True, environ) is True


def test_the_exporters_header_values_are_secrets() -> None:
    environ = {
        "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=abc%20def123,authorization=Bearer tok-9876",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-other=zzz-4444",
    }
    found = otel.env_secrets(environ)
    assert {"abc%20def123", "abc def123", "Bearer tok-9876", "tok-9876", "zzz-4444"} <= set(found)


def test_a_warning_names_the_collector_by_origin_only() -> None:
    assert otel._origin("https://user:pw@c.example:4318/otlp/v1/traces?k=v") == (
        "https://c.example:4318"
    )
    assert otel._origin("http://[::1]:4318/v1/traces") == "http://[::1]:4318"
    assert otel._origin("not a url") is None
    assert otel._endpoint("traces", "http://c:4318/", {}) == "http://c:4318/v1/traces"
    assert otel._endpoint("metrics", None, {}) == "http://localhost:4318/v1/metrics"
    own = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/x", "OTEL_EXPORTER_OTLP_ENDPOINT": "h"}
    assert otel._endpoint("traces", None, own) == "http://t/x"
    assert otel._endpoint("traces", "http://flag:1", own) == "http://flag:1/v1/traces"


def test_completion_takes_the_flags_url_as_optional() -> None:
    root = {option.strings[-1]: option for option in commands()[""].options}
    assert root["--otel"].takes_value is False


def test_the_help_names_the_flag() -> None:
    parser, subcommands = build()
    for text in (parser.format_help(), subcommands["call"].format_help()):
        assert "--otel [URL]" in text
        assert "mcpl-host[otel-export]" in "".join(text.split())
    assert "--otel" not in subcommands["check"].format_help()


def test_the_shell_exports_each_call_of_the_session() -> None:
    from .shellterm import Terminal  # noqa: PLC0415 - pexpect, for this test only

    with receiver() as got:
        terminal = Terminal("--otel", got.url, "--demo", env={"OTEL_SERVICE_NAME": "shell-run"})
        try:
            terminal.expect(r"\[demo\] 8 tools")
            terminal.line("call demo__add a=2 b=40")
            terminal.expect(r'\{"sum": ?42\}')
            assert terminal.leave() == 0
        finally:
            terminal.close()
        got.wait_for("/v1/traces")
        spans = got.spans()
    add = one(spans, "tools/call add")
    assert add.kind == "CLIENT"
    assert add.resource["service.name"] == "shell-run"
    assert "warning" not in terminal.seen()
