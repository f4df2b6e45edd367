"""Property tests of the report writers over arbitrary JSON: whatever shape a server's
answer has, in any member, the readable report renders it (never raises), keeps
control characters and secrets out, and ``--json`` writes it back whole and redacted.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpl_host.cli.output import write_json
from mcpl_host.cli.render import (
    IDENTIFIER_LIMIT,
    Style,
    render_call,
    render_connect,
    render_many,
)
from mcpl_host.protocol.redact import Redactor

SECRET = "tok-5ecret-9f2a"
REDACTOR = Redactor([SECRET])
# Text a server might send to get at the terminal or the secret.
NASTY = ["\x1b[2J", "\x1b]0;owned\x07", "\r", "\u2028", "\x00", "\u202e", SECRET, "a\nb", "é"]
_OURS = re.compile(r"\x1b\[[0-9;]*m")  # the report's own colour codes
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

text = st.text(max_size=12) | st.sampled_from(NASTY)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=16,
)


def maybe_raw(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A value as the report may hold it: decoded, or still the raw JSON."""
    return values | values.map(lambda v: msgspec.Raw(msgspec.json.encode(v)))


def shaped(**members: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """An object whose known members may be present, of the right kind or of any JSON,
    with other members beside them; or any JSON at all in its place."""
    known = {name: strategy | json_values for name, strategy in members.items()}
    objects = st.fixed_dictionaries({}, optional=known).flatmap(
        lambda d: st.dictionaries(text, json_values, max_size=2).map(lambda extra: extra | d)
    )
    return objects | json_values


kinds = st.sampled_from(["text", "image", "audio", "resource", "resource_link"]) | json_values
contents = shaped(uri=text, mimeType=text, text=text, blob=text)
block = shaped(type=kinds, text=text, data=text, mimeType=text, uri=text, resource=contents)
blocks = st.lists(block, max_size=4)
tool_result = shaped(content=blocks, isError=st.booleans(), structuredContent=json_values)
read_result = shaped(contents=st.lists(contents, max_size=3))
prompt_result = shaped(
    description=text, messages=st.lists(shaped(role=text, content=block), max_size=3)
)
argument = shaped(name=text, required=st.booleans(), description=text)
item = shaped(
    name=text,
    title=text,
    description=text,
    uri=text,
    uriTemplate=text,
    mimeType=text,
    arguments=st.lists(argument, max_size=3),
    inputSchema=json_values,
)
listing = st.none() | st.lists(maybe_raw(item), max_size=4) | json_values
server_info = shaped(name=text, version=text)

connect_reports = st.fixed_dictionaries(
    {
        "ok": st.just(True),
        "target": st.just("stdio:server (+1 arg)"),
        "protocolVersion": json_values,
        "serverInfo": server_info,
        "capabilities": shaped(tools=json_values, resources=json_values) | json_values,
        "instructions": json_values,
        "timings_ms": st.just({"spawn": 1.0, "initialize": 2.5, "list": 3.0, "total": 7.0}),
        "tools": listing,
        "resources": listing,
        "resourceTemplates": listing,
        "prompts": listing,
    }
)
failed_reports = st.fixed_dictionaries(
    {
        "ok": st.just(False),
        "target": st.just("tcp://127.0.0.1:9"),
        "error": st.fixed_dictionaries(
            {
                "kind": st.sampled_from(["request-error", "protocol-error", "limit-exceeded"]),
                "message": text,
                "code": st.none() | st.integers(),
                "data": json_values,
            }
        ),
        "stderr": st.lists(text, max_size=3),
    }
)
call = st.sampled_from(["tools/call", "resources/read", "prompts/get"])
results = {"tools/call": tool_result, "resources/read": read_result, "prompts/get": prompt_result}


def call_report(method: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "ok": st.just(True),
            "target": st.just("stdio:server (+1 arg)"),
            "protocolVersion": st.just("2025-11-25"),
            "serverInfo": server_info,
            "result": maybe_raw(results[method]),
        }
    )


def assert_safe(output: str) -> None:
    assert isinstance(output, str)
    shown = _OURS.sub("", output)
    assert not _CONTROL.search(shown), ascii(shown)
    assert SECRET not in shown


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    report=connect_reports | failed_reports,
    colour=st.booleans(),
    width=st.none() | st.integers(0, 200),
)
def test_connect_renders_any_shape(report: dict[str, Any], colour: bool, width: int | None) -> None:
    assert_safe(render_connect(report, REDACTOR, Style(colour), width))


@SETTINGS
@given(data=st.data(), colour=st.booleans())
def test_call_renders_any_shape(data: st.DataObject, colour: bool) -> None:
    method = data.draw(call)
    report = data.draw(call_report(method) | failed_reports)
    assert_safe(render_call(report, method, REDACTOR, Style(colour), 80))


long_text = st.text(max_size=300) | text | st.builds(lambda t, n: t * n, text, st.integers(1, 60))


@SETTINGS
@given(
    uris=st.lists(long_text, min_size=1, max_size=4),
    names=st.lists(long_text, min_size=1, max_size=4),
    schema=json_values,
    width=st.none() | st.integers(0, 200),
)
def test_identifiers_are_shown_whole_at_any_width(
    uris: list[str], names: list[str], schema: Any, width: int | None
) -> None:
    report = {
        "ok": True,
        "target": "t",
        "protocolVersion": "2025-11-25",
        "resources": [{"uri": uri, "description": "d " * 100} for uri in uris],
        "resourceTemplates": [{"uriTemplate": uri} for uri in uris],
        "tools": [{"name": name, "inputSchema": schema} for name in names],
        "prompts": [{"name": name, "arguments": [{"name": n} for n in names]} for name in names],
    }
    output = render_connect(report, REDACTOR, Style(False), width)
    assert_safe(output)
    for identifier in [*uris, *names]:
        assert REDACTOR.log_value(identifier, IDENTIFIER_LIMIT) in output
    for name in names:
        assert REDACTOR.log_value(name, IDENTIFIER_LIMIT) + "(" in output
        assert REDACTOR.log_value(name, IDENTIFIER_LIMIT) + "?" in output  # an argument


@SETTINGS
@given(uri=long_text, kind=st.sampled_from(["resource_link", "resource"]), colour=st.booleans())
def test_resource_links_and_embedded_resources_show_their_uri_whole(
    uri: str, kind: str, colour: bool
) -> None:
    resource = {"uri": uri, "name": "n", "mimeType": "text/plain"}
    block = (
        {"type": kind, **resource}
        if kind == "resource_link"
        else {"type": kind, "resource": resource}
    )
    report = {"ok": True, "target": "t", "result": {"content": [block]}}
    output = _OURS.sub("", render_call(report, "tools/call", REDACTOR, Style(colour), 40))
    assert_safe(output)
    label = "[resource link]" if kind == "resource_link" else "[resource]"
    assert f"{label} {REDACTOR.log_value(uri, IDENTIFIER_LIMIT)}  n [text/plain]\n" in output


@SETTINGS
@given(servers=st.dictionaries(text, connect_reports | failed_reports, max_size=3))
def test_many_renders_any_shape(servers: dict[str, Any]) -> None:
    report = {"ok": False, "servers": servers, "skipped": {"off": "disabled"}}
    assert_safe(render_many(report, REDACTOR, Style(False), 80))


def redacted(value: Any) -> Any:
    """What --json must write for ``value``: every string masked, raw JSON decoded."""
    if isinstance(value, msgspec.Raw):
        value = msgspec.json.decode(value)
    if isinstance(value, str):
        return REDACTOR.redact(value)
    if isinstance(value, list):
        return [redacted(v) for v in value]
    if isinstance(value, dict):
        return {redacted(k): redacted(v) for k, v in value.items()}
    return value


@SETTINGS
@given(report=connect_reports | failed_reports | call.flatmap(call_report))
def test_json_writes_any_shape_back_whole_and_redacted(report: dict[str, Any]) -> None:
    stream = io.StringIO()
    write_json(report, REDACTOR, stream)
    written = stream.getvalue()
    assert written.endswith("}\n")
    assert SECRET not in written
    assert json.loads(written) == redacted(report)


def test_raw_json_that_is_not_utf_8_is_shown_and_written_with_replacement() -> None:
    item = msgspec.Raw(b'{"name": "bad\xff", "description": "ok"}')
    report = {"ok": True, "target": "t", "protocolVersion": "2025-11-25", "tools": [item]}
    assert "bad\ufffd" in render_connect(report, REDACTOR, Style(False), 80)
    for redactor in (Redactor(), REDACTOR):  # written as received, and decoded
        stream = io.StringIO()
        write_json(report, redactor, stream)
        assert json.loads(stream.getvalue())["tools"] == [
            {"name": "bad\ufffd", "description": "ok"}
        ]


def test_an_item_is_written_as_received_only_when_no_secret_can_hide_in_it() -> None:
    escaped = msgspec.Raw(b'{"a": "\\u0074ok-5ecret-9f2a", "b": "x\\/y"}')
    plain = msgspec.Raw(b'{"a":   "tok-5ecret-9f2a", "b": "line\\nbreak"}')
    stream = io.StringIO()
    write_json({"tools": [escaped, plain]}, REDACTOR, stream)
    written = json.loads(stream.getvalue())
    assert written["tools"] == [{"a": "***", "b": "x/y"}, {"a": "***", "b": "line\nbreak"}]
