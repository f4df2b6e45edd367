"""ToolHints: which tools a reconnect may call again, read from ``tools/list`` pages."""

from __future__ import annotations

from typing import Any

import msgspec

from mcpl_host.driver.rebind import MAX_HINTED_TOOLS, ToolHints


def page(*tools: Any) -> msgspec.Raw:
    return msgspec.Raw(msgspec.json.encode({"tools": list(tools)}))


def tool(name: str, **hints: bool) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, "annotations": hints}


def test_read_only_or_idempotent_tools_are_repeatable() -> None:
    hints = ToolHints()
    hints.learn(
        page(
            tool("a", readOnlyHint=True), tool("b", idempotentHint=True), tool("c"), {"name": "d"}
        ),
        first_page=True,
    )
    assert [hints.repeatable(n) for n in "abcde"] == [True, True, False, False, False]
    assert hints.repeatable(5) is False


def test_a_later_page_has_the_last_word_and_a_first_page_starts_again() -> None:
    hints = ToolHints()
    hints.learn(page(tool("a", readOnlyHint=True), tool("b", readOnlyHint=True)), first_page=True)
    hints.learn(page(tool("a"), tool("c", idempotentHint=True)), first_page=False)
    assert [hints.repeatable(n) for n in "abc"] == [False, True, True]
    # Listed twice in one page: the later entry wins.
    hints.learn(
        page(tool("b"), tool("b", readOnlyHint=True), tool("c"), tool("c")), first_page=False
    )
    assert [hints.repeatable(n) for n in "bc"] == [True, False]
    hints.learn(page(tool("z", readOnlyHint=True)), first_page=True)
    assert [hints.repeatable(n) for n in "abcz"] == [False, False, False, True]


def test_a_first_page_that_does_not_fit_forgets_every_hint() -> None:
    """The server relisted its tools: what it said before is stale, and a hint kept by
    mistake could send a call that is not safe to repeat twice."""
    for bad in (
        page(tool("x", readOnlyHint=True), {"nameless": 1}),
        page(tool("x", readOnlyHint="yes")),  # type: ignore[arg-type]
        msgspec.Raw(b'{"tools": 5}'),
        msgspec.Raw(b"[]"),
    ):
        hints = ToolHints()
        hints.learn(page(tool("a", readOnlyHint=True)), first_page=True)
        hints.learn(bad, first_page=True)
        assert not hints.repeatable("a")
        assert not hints.repeatable("x")


def test_a_page_of_more_tools_than_the_bound_is_not_read() -> None:
    hints = ToolHints()
    hints.learn(page(tool("a", readOnlyHint=True)), first_page=True)
    many = [
        {"name": f"t{i}", "annotations": {"readOnlyHint": True}} for i in range(MAX_HINTED_TOOLS)
    ]
    hints.learn(
        page(*many, {"name": "last", "annotations": {"readOnlyHint": True}}), first_page=True
    )
    # Like a first page that does not fit: what was known is forgotten, nothing learned.
    assert not hints.repeatable("a")
    assert not hints.repeatable("t0")
    hints.learn(page(*many), first_page=True)
    assert hints.repeatable("t0")
    assert hints.repeatable(f"t{MAX_HINTED_TOOLS - 1}")
    assert not hints.repeatable("a")
