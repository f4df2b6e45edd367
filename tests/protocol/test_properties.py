"""Property tests for the sans-I/O protocol core: envelope, framing, redaction, batches."""

from __future__ import annotations

import itertools
import json
import string
import unicodedata
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcpl_host.protocol.batch import BatchAnswers, BatchPlan, plan_batch
from mcpl_host.protocol.envelope import (
    _TYPED_ENTRY,
    _UNTYPED_ENTRY,
    MAX_SAFE_INTEGER,
    Batch,
    Ignored,
    InvalidRequest,
    Notification,
    Request,
    Response,
    _from_typed,
    _from_untyped,
    classify_entry,
    decode_line,
)
from mcpl_host.protocol.errors import INVALID_REQUEST
from mcpl_host.protocol.framing import LineDecoder, OversizedLine
from mcpl_host.protocol.messages import ResultAnswer
from mcpl_host.protocol.profiles import PROFILES
from mcpl_host.protocol.redact import (
    CUT_MARK,
    LOG_VALUE_LIMIT,
    REDACTION_MARK,
    Redactor,
    log_value,
    utf16_len,
)

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FAST = settings(SETTINGS, max_examples=60)

ENVELOPE_KEYS = ("jsonrpc", "id", "method", "params", "result", "error")
RESULT_TYPES = (Request, Notification, Response, InvalidRequest, Ignored, Batch)

# -- strategies -------------------------------------------------------------------------

integers = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from(
        [
            0,
            MAX_SAFE_INTEGER,
            MAX_SAFE_INTEGER + 1,
            -MAX_SAFE_INTEGER,
            -MAX_SAFE_INTEGER - 1,
            2**63,
            2**64,
            -(2**63) - 1,
        ]
    ),
)
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
json_scalars = st.one_of(st.none(), st.booleans(), integers, finite_floats, st.text(max_size=12))
dict_keys = st.sampled_from(ENVELOPE_KEYS) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(dict_keys, children, max_size=5),
    ),
    max_leaves=12,
)
# Objects that look like envelopes: mostly the six members, each with any value.
envelope_like = st.dictionaries(dict_keys, json_values, max_size=7)

safe_ints = st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER) | st.sampled_from(
    [0, MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER]
)
valid_ids = st.one_of(st.none(), st.text(max_size=10), safe_ints)
unsafe_ints = st.integers(min_value=MAX_SAFE_INTEGER + 1) | st.integers(
    max_value=-MAX_SAFE_INTEGER - 1
)
bad_ids = st.one_of(
    st.booleans(),
    finite_floats,
    st.sampled_from([1.5, 1.0, 0.0, -0.0, 1e300]),
    unsafe_ints,
    st.lists(json_values, max_size=3),
    st.dictionaries(dict_keys, json_values, max_size=3),
)
bad_methods = st.one_of(
    st.none(),
    st.booleans(),
    integers,
    finite_floats,
    st.lists(json_values, max_size=3),
    st.dictionaries(dict_keys, json_values, max_size=3),
)
# Members that may ride along with method and id without changing the verdict.
extra_members = st.dictionaries(
    st.sampled_from(("jsonrpc", "params", "result", "error"))
    | st.text(max_size=8).filter(lambda k: k not in ENVELOPE_KEYS),
    json_values,
    max_size=4,
)

ABSENT = object()


def encode_json(value: Any, how: str) -> bytes:
    if how == "msgspec":
        return msgspec.json.encode(value)
    if how == "json":
        return json.dumps(value).encode()
    return json.dumps(value, indent=1, ensure_ascii=False).encode()


encoders = st.sampled_from(["msgspec", "json", "json-indent"])


def normalise(value: Any) -> Any:
    """A comparable form of a classification: structs by fields, Raw by its bytes."""
    if isinstance(value, msgspec.Raw):
        return ("Raw", bytes(value))
    if isinstance(value, msgspec.Struct):
        return (
            type(value).__name__,
            tuple((name, normalise(getattr(value, name))) for name in value.__struct_fields__),
        )
    if isinstance(value, tuple):
        return tuple(normalise(item) for item in value)
    return (type(value).__name__, value)


# -- 1. the envelope never raises -------------------------------------------------------


@SETTINGS
@given(value=json_values | envelope_like, how=encoders)
def test_decode_line_never_raises_on_any_json_value(value: Any, how: str) -> None:
    line = encode_json(value, how)
    result = decode_line(line)
    assert isinstance(result, RESULT_TYPES)
    if isinstance(value, list):
        assert isinstance(result, Batch)
        entries = result.entries(len(value))
        assert entries is not None
        assert len(entries) == len(value)
        for raw, item in zip(entries, value, strict=True):
            assert msgspec.json.decode(bytes(raw)) == item
            entry = classify_entry(raw)
            assert isinstance(entry, (Request, Notification, Response, InvalidRequest, Ignored))
            if isinstance(item, dict):
                # One rule for lines and batch entries alike.
                assert normalise(entry) == normalise(decode_line(bytes(raw)))
            else:
                assert isinstance(entry, Ignored)
    elif isinstance(value, dict):
        assert not isinstance(result, Batch)
        assert result != Ignored("not JSON")
    else:
        assert isinstance(result, Ignored)


# decode_line promises "never raises" for any framed line, JSON or not. These lines have a
# wrongly typed member *before* a syntax error (a truncated line, trailing bytes), so the
# typed pass fails validation first and the untyped pass must still judge the syntax.
MALFORMED_LINES = [
    b'{"jsonrpc":0',
    b'{"id":true}x',
    b'{"method":1,',
    b'{"id":1.5,"method":"m"',
    b'{"id":1.5,"method":"m"}}',
]


@pytest.mark.parametrize("line", MALFORMED_LINES)
def test_decode_line_never_raises_on_malformed_json(line: bytes) -> None:
    assert decode_line(line) == Ignored("not JSON")


@SETTINGS
@example(line=MALFORMED_LINES[0])
@given(
    line=st.binary(max_size=64)
    | st.tuples(envelope_like, st.integers(min_value=1)).map(
        lambda t: msgspec.json.encode(t[0])[: -t[1]]
    )
    | envelope_like.map(lambda v: msgspec.json.encode(v) + b"x")
)
def test_decode_line_never_raises_on_any_bytes(line: bytes) -> None:
    assert isinstance(decode_line(line), RESULT_TYPES)


# -- 2. an invalid request is never dispatched ------------------------------------------


@st.composite
def invalid_requests(draw: st.DrawFn) -> dict[str, Any]:
    obj: dict[str, Any] = draw(extra_members)
    if draw(st.booleans()):
        obj["method"] = draw(bad_methods)
        id_ = draw(st.sampled_from(["absent", "valid", "bad"]))
        if id_ == "valid":
            obj["id"] = draw(valid_ids)
        elif id_ == "bad":
            obj["id"] = draw(bad_ids)
    else:
        obj["method"] = draw(st.text(max_size=12))
        obj["id"] = draw(bad_ids)
    return obj


def id_is_valid(value: Any) -> bool:
    if value is None or type(value) is str:
        return True
    return type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


@SETTINGS
@given(obj=invalid_requests(), how=encoders)
def test_invalid_request_is_never_dispatched(obj: dict[str, Any], how: str) -> None:
    result = decode_line(encode_json(obj, how))
    assert isinstance(result, InvalidRequest), (obj, result)
    assert result.faults
    assert result.message.startswith("Invalid Request: ")
    method = obj["method"]
    assert result.method == (method if type(method) is str else None)
    id_ = obj.get("id", ABSENT)
    if id_ is not ABSENT and id_is_valid(id_):
        assert result.answer_id == id_
        assert type(result.answer_id) is type(id_)
    else:
        assert result.answer_id is None
    # The batch entry path applies the same rule.
    assert isinstance(classify_entry(encode_json(obj, how)), InvalidRequest)


@SETTINGS
@given(
    extras=extra_members,
    method=st.text(max_size=12),
    id_=valid_ids | st.just(ABSENT),
    how=encoders,
)
def test_valid_request_and_notification(
    extras: dict[str, Any], method: str, id_: Any, how: str
) -> None:
    obj = dict(extras, method=method)
    if id_ is not ABSENT:
        obj["id"] = id_
    result = decode_line(encode_json(obj, how))
    if id_ is ABSENT:
        assert isinstance(result, Notification), (obj, result)
    else:
        assert isinstance(result, Request), (obj, result)
        assert result.id == id_
        assert type(result.id) is type(id_)
    assert result.method == method
    if "params" in obj:
        assert result.params is not None
        assert msgspec.json.decode(bytes(result.params)) == obj["params"]
    else:
        assert result.params is None


# -- 3. the id token as written on the wire ---------------------------------------------

LINE_TEMPLATES = (
    b'{"jsonrpc":"2.0","id":%s,"method":"tools/list"}',
    b'{"method": "tools/list", "id" : %s , "params": {}}',
    b'{"id":%s,"method":"ping","jsonrpc":true}',
)


@pytest.mark.parametrize("template", LINE_TEMPLATES)
@pytest.mark.parametrize(
    "token",
    [
        b"1e400",
        b"1.5",
        b"1.0",
        b"1E2",
        b"-0.0",
        b"9007199254740992",
        b"9007199254740993",
        b"-9007199254740992",
    ],
)
def test_id_token_not_a_safe_integer_is_invalid(template: bytes, token: bytes) -> None:
    line = template % token
    for result in (decode_line(line), classify_entry(line)):
        assert isinstance(result, InvalidRequest)
        assert result.answer_id is None
        assert result.method is not None


@pytest.mark.parametrize("template", LINE_TEMPLATES)
@pytest.mark.parametrize(
    ("token", "expected"),
    [
        (b"9007199254740991", 9007199254740991),
        (b"-9007199254740991", -9007199254740991),
        (b"0", 0),
        (b"-0", 0),
    ],
)
def test_id_token_safe_integer_is_request(template: bytes, token: bytes, expected: int) -> None:
    line = template % token
    for result in (decode_line(line), classify_entry(line)):
        assert isinstance(result, Request)
        assert type(result.id) is int
        assert result.id == expected


# -- 4. the typed fast path and the raw slow path agree ---------------------------------

envelope_values = {
    "jsonrpc": st.sampled_from(["2.0", "1.0", ""]) | st.text(max_size=4) | json_values,
    "id": st.one_of(valid_ids, integers, st.text(max_size=6), json_values),
    "method": st.text(max_size=8) | json_values,
    "params": json_values,
    "result": json_values,
    "error": json_values,
}


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(ENVELOPE_KEYS), unique=True, max_size=6)):
        obj[key] = draw(envelope_values[key])
    obj.update(draw(st.dictionaries(st.text(max_size=4), json_values, max_size=2)))
    return obj


@SETTINGS
@given(obj=envelopes() | envelope_like, how=encoders)
def test_typed_and_untyped_paths_agree(obj: dict[str, Any], how: str) -> None:
    data = encode_json(obj, how)
    slow = _from_untyped(_UNTYPED_ENTRY.decode(data))
    try:
        typed = _TYPED_ENTRY.decode(data)
    except msgspec.ValidationError:
        # The fast path declined: the entry rule is the slow path alone.
        assert normalise(classify_entry(data)) == normalise(slow)
        return
    assert normalise(_from_typed(typed)) == normalise(slow), obj
    assert normalise(classify_entry(data)) == normalise(slow)
    assert normalise(decode_line(data)) == normalise(slow)


# -- 5. framing is independent of chunking ----------------------------------------------

line_bodies = st.one_of(
    st.binary(max_size=150).map(lambda b: b.replace(b"\n", b"")),
    st.lists(st.sampled_from([b"a", b"\r", b"{", b"\xff", b" ", b"\x00"]), max_size=150).map(
        b"".join
    ),
    st.sampled_from([b"", b"\r", b"\r\r"]),
)


@st.composite
def streams(draw: st.DrawFn) -> tuple[int, bytes]:
    bound = draw(st.sampled_from([1, 2, 8, 64]) | st.integers(min_value=1, max_value=80))
    near_bound = st.integers(min_value=max(0, bound - 2), max_value=bound + 2).map(
        lambda n: b"x" * n
    )
    parts: list[bytes] = []
    for body in draw(st.lists(line_bodies | near_bound, max_size=12)):
        parts.append(body + draw(st.sampled_from([b"\n", b"\r\n"])))
    parts.append(draw(st.just(b"") | line_bodies | near_bound))
    return bound, b"".join(parts)


def expected_items(stream: bytes, bound: int) -> list[bytes | OversizedLine]:
    """The reference: split on newlines, bound each line (a CR counts), drop empties."""
    out: list[bytes | OversizedLine] = []
    for line in stream.split(b"\n"):
        if len(line) > bound:
            out.append(OversizedLine(len(line)))
            continue
        if body := line.removesuffix(b"\r"):
            out.append(body)
    return out


def run_decoder(bound: int, chunks: list[bytes]) -> list[bytes | OversizedLine]:
    decoder = LineDecoder(max_message_bytes=bound)
    items: list[bytes | OversizedLine] = []
    for chunk in chunks:
        items += decoder.feed(chunk)
        assert decoder.buffered <= bound + len(chunk)
    items += decoder.close()
    assert decoder.buffered == 0
    for item in items:
        if isinstance(item, bytes):
            assert len(item) <= bound
            assert b"\n" not in item
            assert item
        else:
            assert item.size > bound
    return items


@SETTINGS
@given(case=streams(), data=st.data())
def test_framing_is_independent_of_chunking(case: tuple[int, bytes], data: st.DataObject) -> None:
    bound, stream = case
    whole = run_decoder(bound, [stream])
    assert whole == expected_items(stream, bound)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=20)))
    edges = [0, *cuts, len(stream)]
    chunks = [stream[a:b] for a, b in itertools.pairwise(edges)]
    assert run_decoder(bound, chunks) == whole
    bytewise = [stream[i : i + 1] for i in range(len(stream))]
    assert run_decoder(bound, bytewise) == whole


# -- 6. redaction -----------------------------------------------------------------------

TOKEN_ALPHABET = string.ascii_letters + string.digits + "-_.~+/=:@!$%"
secrets_st = st.text(alphabet=TOKEN_ALPHABET, min_size=4, max_size=40)
any_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=60)
ESCAPED_CATEGORIES = ("Zl", "Zp", "Zs")


def escape_pieces(text: str) -> list[str]:
    """The reference escaping: one piece per character, ``\\uXXXX`` per UTF-16 unit."""
    pieces = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch != " " and (category[0] == "C" or category in ESCAPED_CATEGORIES):
            units = ch.encode("utf-16-be")
            pieces.append(
                "".join(
                    f"\\u{int.from_bytes(units[i : i + 2], 'big'):04x}"
                    for i in range(0, len(units), 2)
                )
            )
        else:
            pieces.append(ch)
    return pieces


@SETTINGS
@given(secret=secrets_st, prefix=any_text, suffix=any_text)
def test_redactor_masks_a_secret_in_any_text(secret: str, prefix: str, suffix: str) -> None:
    redactor = Redactor([secret])
    out = redactor.log_value(prefix + secret + suffix)
    assert secret not in out
    if utf16_len("".join(escape_pieces(prefix))) + len(REDACTION_MARK) <= (
        LOG_VALUE_LIMIT - len(CUT_MARK)
    ):
        assert REDACTION_MARK in out


@SETTINGS
@given(secret=secrets_st, prefix=any_text, suffix=any_text)
def test_redactor_masks_a_secret_inside_json_text(secret: str, prefix: str, suffix: str) -> None:
    text = msgspec.json.encode(prefix + secret + suffix).decode()
    out = Redactor([secret]).log_value(text)
    assert secret not in out


@SETTINGS
@given(
    secrets=st.lists(secrets_st, min_size=1, max_size=4),
    fillers=st.lists(any_text, min_size=1, max_size=6),
    data=st.data(),
)
def test_redactor_masks_interleaved_secrets(
    secrets: list[str], fillers: list[str], data: st.DataObject
) -> None:
    order = data.draw(st.lists(st.sampled_from(secrets), min_size=1, max_size=6))
    pieces: list[str] = []
    for i, secret in enumerate(order):
        pieces.append(fillers[i % len(fillers)])
        pieces.append(secret)
    pieces.append(fillers[-1])
    out = Redactor(secrets).log_value("".join(pieces))
    for secret in secrets:
        assert secret not in out


@SETTINGS
@given(
    base=st.text(alphabet=TOKEN_ALPHABET, min_size=8, max_size=40),
    data=st.data(),
    prefix=any_text,
    suffix=any_text,
)
def test_redactor_masks_overlapping_secrets(
    base: str, data: st.DataObject, prefix: str, suffix: str
) -> None:
    # Secrets cut from one token overlap each other, nest, or abut.
    spans = data.draw(
        st.lists(
            st.tuples(st.integers(0, len(base) - 4), st.integers(4, len(base))),
            min_size=1,
            max_size=4,
        )
    )
    secrets = [base[start : start + length] for start, length in spans]
    text = prefix + base + suffix
    redactor = Redactor(secrets)
    out = redactor.log_value(text)
    for secret in secrets:
        assert secret not in out
    # redact() itself: every occurrence masked, overlapping or touching ones as one mark.
    intervals = sorted(
        (start, start + len(secret))
        for secret in set(secrets)
        for start in range(len(text))
        if text.startswith(secret, start)
    )
    merged: list[list[int]] = []
    for start, end in intervals:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    expected, last = [], 0
    for start, end in merged:
        expected += [text[last:start], REDACTION_MARK]
        last = end
    expected.append(text[last:])
    assert redactor.redact(text) == "".join(expected)


# -- 7. log_value escapes and cuts ------------------------------------------------------

SPECIAL_CHARS = [
    "😀",
    "\U0001f600",
    "\U0001d173",  # an astral format character
    "\U000e0001",  # language tag, format
    "\U0010fffd",  # private use, astral
    "\x00",
    "\n",
    "\r",
    "\t",
    "\x1b",
    "\x7f",
    "\x85",
    "\u00a0",
    "\u200b",
    "\u200e",
    "\u2028",
    "\u2029",
    "\ufeff",
    " ",
    "a",
    "é",
    "漢",
]
PRINTABLE_ASCII = "".join(chr(c) for c in range(0x20, 0x7F))
around_limit = st.integers(min_value=LOG_VALUE_LIMIT - 8, max_value=LOG_VALUE_LIMIT + 8)
log_texts = st.one_of(
    around_limit.flatmap(lambda n: st.text(PRINTABLE_ASCII, min_size=n, max_size=n)),
    around_limit.flatmap(
        lambda n: st.text(
            st.sampled_from(SPECIAL_CHARS) | st.sampled_from(PRINTABLE_ASCII),
            min_size=n // 2,
            max_size=n,
        )
    ),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=300),
    st.text(st.sampled_from(SPECIAL_CHARS) | st.characters(codec="ascii"), max_size=300),
    st.text(st.characters(codec="ascii", categories=["L", "N", "P", "S"]), max_size=300),
)


@settings(SETTINGS, max_examples=300)
@given(text=log_texts)
def test_log_value_escapes_and_cuts(text: str) -> None:
    out = log_value(text)
    assert utf16_len(out) <= LOG_VALUE_LIMIT
    out.encode("utf-16-le")  # strict: no lone surrogate half
    for ch in out:
        category = unicodedata.category(ch)
        assert category[0] != "C", repr(ch)
        assert category not in ("Zl", "Zp")
        assert category != "Zs" or ch == " "
    if utf16_len(text) <= LOG_VALUE_LIMIT and text.isascii() and text.isprintable():
        assert out == text
    pieces = escape_pieces(text)
    full = "".join(pieces)
    if utf16_len(full) <= LOG_VALUE_LIMIT:
        assert out == full
        return
    assert out.endswith(CUT_MARK)
    # The longest run of whole pieces (no split escape or surrogate pair) that fits.
    budget = LOG_VALUE_LIMIT - utf16_len(CUT_MARK)
    kept, used = [], 0
    for piece in pieces:
        if used + utf16_len(piece) > budget:
            break
        kept.append(piece)
        used += utf16_len(piece)
    assert out == "".join(kept) + CUT_MARK


# -- 8. batch answers keep request order ------------------------------------------------


@st.composite
def batch_entries(draw: st.DrawFn, kinds: list[str]) -> list[tuple[str, Any]]:
    """(kind, JSON value) pairs; ids of requests and invalid entries are distinct."""
    ids = iter(
        draw(
            st.lists(
                st.text(max_size=6) | safe_ints,
                unique_by=lambda v: (type(v), v),
                min_size=len(kinds),
                max_size=len(kinds),
            )
        )
    )
    entries: list[tuple[str, Any]] = []
    for kind in kinds:
        extras = draw(st.dictionaries(st.sampled_from(("jsonrpc", "params")), json_values))
        id_ = next(ids)
        if kind == "request":
            value: Any = dict(extras, method=draw(st.text(max_size=8)), id=id_)
        elif kind == "notification":
            value = dict(extras, method=draw(st.text(max_size=8)))
        elif kind == "response":
            value = {"jsonrpc": "2.0", "id": id_, "result": draw(json_values)}
        elif kind == "bad-method":
            value = dict(extras, method=draw(bad_methods), id=id_)
        elif kind == "bad-id":
            value = dict(extras, method=draw(st.text(max_size=8)), id=draw(bad_ids))
        else:  # not JSON-RPC at all: inside a batch it is an invalid request
            value = draw(json_scalars | st.just({}) | st.lists(json_scalars, max_size=2))
        entries.append((kind, value))
    return entries


ENTRY_KINDS = ["request", "notification", "response", "bad-method", "bad-id", "junk"]


@SETTINGS
@given(
    entries=st.lists(st.sampled_from(ENTRY_KINDS), min_size=1, max_size=8).flatmap(batch_entries),
    data=st.data(),
)
def test_batch_answers_follow_request_order(
    entries: list[tuple[str, Any]], data: st.DataObject
) -> None:
    batch = Batch(msgspec.json.encode([value for _, value in entries]))
    plan = plan_batch(batch, PROFILES["2025-03-26"])
    assert isinstance(plan, BatchPlan)
    assert len(plan.entries) == len(entries)

    expected: list[tuple[str, Any]] = []
    requests: list[int] = []
    for index, ((kind, value), entry) in enumerate(zip(entries, plan.entries, strict=True)):
        if kind == "request":
            assert isinstance(entry, Request)
            requests.append(index)
            expected.append(("result", value["id"]))
        elif kind in ("bad-method", "bad-id", "junk"):
            assert isinstance(entry, InvalidRequest)
            answer_id = value["id"] if kind == "bad-method" else None
            assert entry.answer_id == answer_id
            expected.append(("error", answer_id))
        else:
            assert isinstance(entry, (Notification, Response))

    answers = BatchAnswers(plan)
    assert sorted(answers.slot_of) == requests
    order = data.draw(st.permutations(requests))
    for step, index in enumerate(order):
        assert not answers.complete
        if step == 0:
            with pytest.raises(RuntimeError):
                answers.encode()
        entry = plan.entries[index]
        assert isinstance(entry, Request)
        answers.fill(index, ResultAnswer(id=entry.id, result={"entry": index}))
    assert answers.complete

    line = answers.encode()
    if not expected:
        assert line is None
        return
    assert line is not None
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    written = json.loads(line)
    assert isinstance(written, list)
    got = [("result" if "result" in item else "error", item["id"]) for item in written]
    assert got == expected
    request_slots = [item for item in written if "result" in item]
    assert [item["result"]["entry"] for item in request_slots] == requests
    for item in written:
        assert item["jsonrpc"] == "2.0"
        if "error" in item:
            assert item["error"]["code"] == INVALID_REQUEST


@FAST
@given(
    entries=st.lists(st.sampled_from(["notification", "response"]), min_size=1, max_size=6).flatmap(
        batch_entries
    )
)
def test_batch_of_only_notifications_writes_nothing(entries: list[tuple[str, Any]]) -> None:
    batch = Batch(msgspec.json.encode([value for _, value in entries]))
    plan = plan_batch(batch, PROFILES["2025-03-26"])
    assert isinstance(plan, BatchPlan)
    answers = BatchAnswers(plan)
    assert answers.complete
    assert answers.slot_of == {}
    assert answers.encode() is None
