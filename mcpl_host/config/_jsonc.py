"""JSON with comments and trailing commas, as VS Code writes ``mcp.json`` and
``settings.json`` (and people write the other clients' files by hand).

Hand-written rather than a JSON5 dependency: only these two liberties are taken, and the
result is decoded by msgspec as strict JSON, so nothing else slips through.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["strip_jsonc"]

# A string (escapes kept), a comment, or a comma followed only by space/comments before
# a closing bracket.
_TOKEN: Final = re.compile(
    r'"(?:[^"\\]|\\.)*"'  # a string: kept whole
    r"|//[^\n]*"  # a line comment
    r"|/\*.*?(?:\*/|\Z)",  # a block comment (an unclosed one runs to the end)
    re.DOTALL,
)
_TRAILING_COMMA: Final = re.compile(r'"(?:[^"\\]|\\.)*"|,(\s*[}\]])', re.DOTALL)


def strip_jsonc(text: str) -> str:
    """``text`` without comments and trailing commas; strings are left as they are.
    Raises nothing (what is left may still not be JSON: the decoder says so)."""

    def comment(match: re.Match[str]) -> str:
        found = match.group(0)
        if found.startswith('"'):
            return found
        # A comment keeps its line breaks, so that the decoder's line numbers still hold.
        return "\n" * found.count("\n") or " "

    def comma(match: re.Match[str]) -> str:
        return match.group(1) if match.group(1) is not None else match.group(0)

    return _TRAILING_COMMA.sub(comma, _TOKEN.sub(comment, text))
