"""Redactor.learn (mcpl_host/protocol/redact.py): secrets had while connected (OAuth
tokens, codes, a registered client's secret) are masked from the moment they are learnt;
the configured ones always; the learnt ones bounded, the oldest dropped first."""

from __future__ import annotations

import json

from mcpl_host.protocol.redact import REDACTION_MARK, Redactor

CONFIGURED = "configured-secret-0001"


def test_a_learnt_secret_is_masked_from_then_on_with_its_json_form() -> None:
    redactor = Redactor([CONFIGURED])
    token = 'at-"quoted"\\-token-0001'
    assert redactor.redact(f"x {token} y") == f"x {token} y"
    redactor.learn(token)
    assert redactor.redact(f"x {token} y") == f"x {REDACTION_MARK} y"
    # A server echoing it inside JSON text shows it escaped: masked too.
    echoed = json.dumps({"error_description": f"bad {token}"})
    assert token not in redactor.redact(echoed)
    assert json.dumps(token)[1:-1] not in redactor.redact(echoed)
    # The configured secret is still masked, in log_value as in redact.
    assert redactor.log_value(f"{CONFIGURED}\n{token}") == f"{REDACTION_MARK}\\u000a***"


def test_short_values_are_not_learnt() -> None:
    redactor = Redactor()
    redactor.learn("abc")
    redactor.learn("")
    assert redactor.redact("abc abcd") == "abc abcd"
    assert not redactor.secrets


def test_learning_a_configured_secret_changes_nothing() -> None:
    redactor = Redactor([CONFIGURED])
    before = redactor.secrets
    redactor.learn(CONFIGURED)
    assert redactor.secrets == before


def test_at_most_64_learnt_secrets_the_oldest_dropped_the_configured_kept() -> None:
    redactor = Redactor([CONFIGURED])
    learnt = [f"learnt-secret-{i:04d}" for i in range(70)]
    for secret in learnt:
        redactor.learn(secret)
    text = " ".join([CONFIGURED, *learnt])
    shown = redactor.redact(text).split(" ")
    assert shown[0] == REDACTION_MARK  # configured: never dropped
    assert shown[1:7] == learnt[:6]  # the six oldest learnt ones: dropped
    assert shown[7:] == [REDACTION_MARK] * 64
    # The pattern (the cost of every redaction) stays bounded however many are learnt.
    for i in range(150):
        redactor.learn(f"more-secret-{i:04d}")
    assert len(redactor.secrets) <= 1 + 64


def test_a_secret_learnt_again_counts_as_new() -> None:
    # A secret still in use (a client secret registered once, a refresh token kept
    # across refreshes) is learnt again where it is used: it must not age out behind the
    # 64 one-off secrets (codes, verifiers, DPoP proofs) learnt since.
    redactor = Redactor()
    kept = "client-secret-kept-0001"
    redactor.learn(kept)
    for i in range(200):
        redactor.learn(f"one-off-{i:04d}")
        if i % 50 == 0:
            redactor.learn(kept)
    assert redactor.redact(kept) == REDACTION_MARK
    assert redactor.redact("one-off-0000") == "one-off-0000"
