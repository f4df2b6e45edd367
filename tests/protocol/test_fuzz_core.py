"""The short, hypothesis-driven version of scripts/fuzz_core.py: hostile lines through
the whole pure core (framing, envelope, batches under every profile, the handshake),
checked by the script's own oracle, so the two cannot drift apart."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st


def _load_script() -> ModuleType:
    path = Path(__file__).parents[2] / "scripts" / "fuzz_core.py"
    spec = importlib.util.spec_from_file_location("fuzz_core", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_core"] = module  # msgspec.Struct resolves its annotations here
    spec.loader.exec_module(module)
    return module


fuzz = _load_script()
CORPUS: list[bytes] = fuzz.seed_corpus()
SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Pieces a hostile line is made of: JSON punctuation, member names, hostile values and
# string contents, invalid UTF-8, newlines.
PIECES = st.sampled_from(
    [
        *fuzz.HOSTILE_VALUES,
        *fuzz.HOSTILE_BYTES,
        *fuzz.STRING_BYTES,
        *fuzz.MEMBERS,
        b'"jsonrpc":"2.0"',
        b'"method":"ping"',
        b'"id":1',
        b'"',
    ]
)


def _check(data: bytes, rng: random.Random) -> None:
    checker = fuzz.Checker(rng)
    for bound in (fuzz.DEFAULT_MAX_BATCH_ENTRIES * 1024, 4096):
        fuzz.fuzz_one(checker, data, bound)


@SETTINGS
@given(seed=st.sampled_from(CORPUS), rng=st.randoms(use_true_random=False))
def test_mutated_mcp_lines_never_make_the_core_raise(seed: bytes, rng: random.Random) -> None:
    data = fuzz.mutate(rng, [seed])
    _check(data, rng)


@SETTINGS
@example(pieces=[b"{", b'"id":', b"1" * 5000, b',"method":"x"}'])
@example(pieces=[b'[{"id":1,"method":"', b"\xff", b'"},{"id":2,"method":"ping"}]'])
@example(pieces=[b'{"id":{},"method":"', b"\xff", b'"}'])
@example(pieces=[b'{"jsonrpc":"2.0","id":1,"result":"', b"\\ud800", b'"}'])
@example(pieces=[b"[" * 5000])
@given(pieces=st.lists(PIECES | st.binary(max_size=8), max_size=24))
def test_lines_made_of_hostile_pieces_never_make_the_core_raise(pieces: list[bytes]) -> None:
    for frame in (b"{%s}", b"[{%s}]", b"%s"):
        _check(frame % b",".join(pieces), random.Random(0))


def test_the_oracle_catches_a_core_that_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    # The oracle is only worth its run if an exception in the core reaches the caller.
    def broken(line: bytes) -> None:
        raise ValueError("boom")

    monkeypatch.setattr(fuzz, "decode_line", broken)
    with pytest.raises(ValueError, match="boom"):
        _check(b'{"id":1,"method":"ping"}', random.Random(0))


def test_a_short_run_of_the_script_finds_nothing() -> None:
    done, _, checker, failures, _, _ = fuzz.run(lines=2000, seed=7, guided=200, max_failures=1)
    assert done >= 2000
    assert failures == []
    assert checker.counts["line: batch"] > 0
    assert checker.counts["batch: planned"] > 0
