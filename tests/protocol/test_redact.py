"""DESIGN 3.11: escaping, the 256-unit cut, and credentials masked everywhere."""

from __future__ import annotations

import msgspec
import pytest

from mcpl_host.protocol.redact import (
    CUT_MARK,
    REDACTION_MARK,
    Redactor,
    log_value,
    utf16_len,
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text", "plain text"),
        ("line\nforged=1", "line\\u000aforged=1"),
        ("cr\rtab\t", "cr\\u000dtab\\u0009"),
        ("\x1b[31mred", "\\u001b[31mred"),
        ("bidi\u202eevil", "bidi\\u202eevil"),  # format character
        ("sep\u2028para\u2029", "sep\\u2028para\\u2029"),
        ("nbsp\u00a0", "nbsp\\u00a0"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("tag\U000e0041", "tag\\udb40\\udc41"),  # an astral format character
        ("naïve ☃ 😀", "naïve ☃ 😀"),  # printable text is kept
    ],
)
def test_log_value_escapes_what_could_forge_a_line(text: str, shown: str) -> None:
    assert log_value(text) == shown


def test_cut_at_256_utf16_units_with_a_mark() -> None:
    out = log_value("a" * 1000)
    assert out.endswith(CUT_MARK)
    assert utf16_len(out) == 256
    assert log_value("a" * 256) == "a" * 256


def test_cut_never_splits_a_surrogate_pair() -> None:
    out = log_value("a" + "😀" * 200)  # each emoji is two UTF-16 units
    assert out.endswith(CUT_MARK)
    assert utf16_len(out) <= 256
    body = out[: -len(CUT_MARK)]
    assert body == "a" + "😀" * ((256 - len(CUT_MARK) - 1) // 2)


def test_cut_never_splits_an_escape() -> None:
    out = log_value("\n" * 100)
    body = out[: -len(CUT_MARK)]
    assert body == "\\u000a" * ((256 - len(CUT_MARK)) // 6)


CANARY = "canary-7c1f2e9a"


@pytest.mark.parametrize(
    ("config", "secret"),
    [
        ({"env": {"API_KEY": CANARY}}, CANARY),
        ({"env": {"SOME_SETTING": CANARY}}, CANARY),  # long values are masked whatever the name
        ({"env": {"DB_PASS": "hunter"}}, "hunter"),  # short, but under a secret name
        ({"args": ["--token=" + CANARY]}, CANARY),
        ({"args": ["--api-key", CANARY]}, CANARY),
        ({"args": ["--password", CANARY]}, CANARY),
        ({"args": ["GITHUB_TOKEN=" + CANARY]}, CANARY),
        ({"args": ["https://user:" + CANARY + "@example.test/mcp"]}, CANARY),
        ({"args": ["--url", "https://example.test/?access_token=" + CANARY]}, CANARY),
        ({"args": ["ghp_" + "A" * 36]}, "ghp_" + "A" * 36),
        ({"headers": {"Authorization": "Bearer " + CANARY}}, CANARY),
        ({"headers": {"X-Api-Key": CANARY}}, CANARY),
        ({"urls": ["wss://" + CANARY + "@example.test/ws"]}, CANARY),
        ({"urls": ["https://example.test/mcp?token=" + CANARY + "&v=1"]}, CANARY),
    ],
)
def test_from_config_finds_each_kind_of_credential(config: dict[str, object], secret: str) -> None:
    redactor = Redactor.from_config(**config)  # type: ignore[arg-type]
    text = f"server said: {secret}!"
    assert redactor.redact(text) == f"server said: {REDACTION_MARK}!"
    assert secret not in redactor.log_value(text)


def test_settings_are_not_masked() -> None:
    redactor = Redactor.from_config(
        env={"DEBUG": "1", "LOG_LEVEL": "info", "PORT": "8080"}, args=["--verbose", "--port", "1"]
    )
    assert redactor.secrets == frozenset()
    assert redactor.log_value("info on port 8080") == "info on port 8080"


def test_json_escaped_secret_is_masked() -> None:
    secret = 'pa"ss/wörd\\x'
    redactor = Redactor([secret])
    echoed = msgspec.json.encode({"echo": secret}).decode()
    assert secret not in echoed  # the wire form differs from the secret...
    assert REDACTION_MARK in redactor.redact(echoed)  # ...and is masked all the same
    assert 'pa\\"ss' not in redactor.redact(echoed)


def test_overlapping_secrets_leave_no_part_visible() -> None:
    redactor = Redactor(["abcdef", "defghi"])
    assert redactor.redact("xxabcdefghiyy") == "xx***yy"


def test_a_secret_overlapping_itself_leaves_no_part_visible() -> None:
    # Occurrences one character apart: each is found, not only every other one.
    assert Redactor(["aaaa"]).redact("xaaaaay") == "x***y"


def test_escape_that_would_spell_a_secret_is_masked_too() -> None:
    redactor = Redactor(["u000aBC"])
    assert "u000aBC" not in redactor.log_value("\nBC")


def test_secret_before_the_cut_is_masked_not_half_shown() -> None:
    redactor = Redactor([CANARY])
    text = "x" * 240 + CANARY + "y" * 100
    out = redactor.log_value(text)
    assert CANARY[:8] not in out
    assert utf16_len(out) <= 256


def test_log_json_renders_any_value_safely() -> None:
    redactor = Redactor([CANARY])
    assert redactor.log_json(
        msgspec.Raw(b'{"code":1,"message":"' + CANARY.encode() + b'\\n"}')
    ) == ('{"code":1,"message":"***\\n"}')
    assert redactor.log_json(msgspec.Raw(b'"bare"')) == '"bare"'


def test_empty_redactor_changes_nothing() -> None:
    assert Redactor().redact("anything") == "anything"


def test_fields_make_each_peer_value_safe_and_keep_numbers() -> None:
    redactor = Redactor([CANARY])
    fields = redactor.fields(
        method=f"x/{CANARY}\x1b[2J\u2028",
        id=7,
        none=None,
        flag=True,
        ratio=0.5,
        names=["ok", "\x07", "z" * 300],
        error=msgspec.Raw(b'{"message":"' + CANARY.encode() + b'"}'),
    )
    assert fields == {
        "method": "x/***\\u001b[2J\\u2028",
        "id": 7,
        "none": None,
        "flag": True,
        "ratio": 0.5,
        "names": ["ok", "\\u0007", "z" * (256 - len(CUT_MARK)) + CUT_MARK],
        "error": '{"message":"***"}',
    }
    assert redactor.fields(id="5") == {"id": "5"}  # a string id stays a string


@pytest.mark.parametrize(
    ("text", "units"),
    [("a", 1), ("\uffff", 1), ("\U00010000", 2), ("a😀", 3), ("", 0)],
)
def test_utf16_len_counts_astral_characters_twice(text: str, units: int) -> None:
    assert utf16_len(text) == units


def test_the_last_bmp_noncharacter_is_escaped_as_one_unit() -> None:
    assert log_value("\uffff") == "\\uffff"


def test_the_first_astral_character_counts_two_units_at_the_cut() -> None:
    out = log_value("\U00010000" * 200)
    assert out == "\U00010000" * ((256 - len(CUT_MARK)) // 2) + CUT_MARK


@pytest.mark.parametrize(
    ("config", "secret"),
    [
        ({"args": ["--token=abcd=efgh"]}, "abcd=efgh"),  # the value runs to the end
        ({"args": ["--sig=" + CANARY]}, CANARY),  # "sig" once the dashes are gone
        ({"args": ["--sig", CANARY]}, CANARY),
        ({"args": ["--token=https://t.example/abcdef"]}, "https://t.example/abcdef"),
        ({"args": ["https://example.test/?q=1", "--token=" + CANARY]}, CANARY),
        ({"args": ["--verbose", "--token", CANARY]}, CANARY),
        ({"args": ["--token=" + CANARY, "https://example.test/"]}, CANARY),
        ({"env": {"API_KEY": CANARY}, "urls": ["https://example.test/"]}, CANARY),
        ({"env": {"HOME_DIR": "abcdefgh"}}, "abcdefgh"),  # 8 characters: masked
        ({"headers": {"proxy-authorization": "Basic " + CANARY}}, CANARY),
    ],
)
def test_from_config_finds_credentials_among_other_arguments(
    config: dict[str, object], secret: str
) -> None:
    redactor = Redactor.from_config(**config)  # type: ignore[arg-type]
    assert redactor.redact(f"<{secret}>") == f"<{REDACTION_MARK}>"


@pytest.mark.parametrize(
    ("config", "text"),
    [
        # A bare URL's query is not NAME=VALUE: "q" is no secret name, though the host is
        # called auth.
        ({"args": ["https://auth.example.test/x?q=hello"]}, "hello"),
        ({"args": ["--port", "8080"]}, "8080"),  # a value after a flag that names no secret
        ({"args": ["--token", "--verbose"]}, "--verbose"),  # the flag had no value
        ({"args": ["--verbose", "--token"]}, "--verbose"),  # nor here: the last argument
        # Only dashes are stripped before the name is judged: "Xsig" is not "sig".
        ({"args": ["-Xsig=abcdefgh"]}, "abcdefgh"),
        ({"args": ["-Xsig", "abcdefgh"]}, "abcdefgh"),
        ({"headers": {"Accept": "application/json"}}, "application/json"),
        ({"env": {"HOME_DIR": "abcdefg"}}, "abcdefg"),  # 7 characters: a setting
    ],
)
def test_from_config_leaves_what_is_not_a_credential(config: dict[str, object], text: str) -> None:
    redactor = Redactor.from_config(**config)  # type: ignore[arg-type]
    assert redactor.redact(f"<{text}>") == f"<{text}>"


def test_a_secret_that_json_escapes_is_masked_in_both_forms() -> None:
    redactor = Redactor(['ab"cd'])
    assert redactor.redact('ab"cd') == REDACTION_MARK
    assert redactor.redact('ab\\"cd') == REDACTION_MARK


def test_log_value_and_log_json_take_a_limit() -> None:
    redactor = Redactor()
    assert redactor.log_value("x" * 100, 20) == "x" * (20 - len(CUT_MARK)) + CUT_MARK
    assert redactor.log_json(["x" * 100], 20) == '["' + "x" * (18 - len(CUT_MARK)) + CUT_MARK


def test_log_json_shows_a_value_json_cannot_carry_by_its_repr() -> None:
    assert Redactor().log_json(complex(1, 2)) == "(1+2j)"


def test_fields_show_a_str_subclass_as_its_plain_text() -> None:
    class Method(str):
        pass

    assert Redactor([CANARY]).fields(method=Method("x/" + CANARY)) == {"method": "x/***"}
