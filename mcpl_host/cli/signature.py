"""A tool's or prompt's call signature for the readable listing: ``name(arg: type,
opt?: type)`` from a tool's ``inputSchema``, ``name(arg, opt?)`` from a prompt's
``arguments``.

Required arguments come first, then the optional ones (marked ``?``), each group in the
order the server listed them: what must be given reads first. A type is written from
the JSON Schema: ``string``, ``integer``, ``number``, ``boolean``, ``null``, ``object``
(never expanded), an array as ``X[]``, an ``enum`` or ``const`` as its JSON literals
(``"a"|"b"``), ``anyOf``/``oneOf``/a list of types as a union ``A|B``, ``allOf`` as
``A&B``, a ``$ref`` by its last segment, and ``any`` where nothing says.

A schema is a server's and may be hostile: at most :data:`MAX_ARGUMENTS` arguments,
:data:`MAX_CHOICES` members of a union and :data:`MAX_DEPTH` levels of nesting are
written, ``…`` standing for the rest; one type visits at most :data:`NODE_BUDGET`
schemas, and its text is cut at :data:`TYPE_LIMIT` characters. Nothing here escapes:
the listing escapes each part.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from .jsonvalue import plain, text_of

__all__ = [
    "MAX_ARGUMENTS",
    "MAX_CHOICES",
    "MAX_DEPTH",
    "NODE_BUDGET",
    "TYPE_LIMIT",
    "prompt_arguments",
    "tool_arguments",
    "type_of",
]

MAX_ARGUMENTS: Final = 64
MAX_CHOICES: Final = 16
MAX_DEPTH: Final = 4
TYPE_LIMIT: Final = 1000
NODE_BUDGET: Final = 256
MORE: Final = "…"


def tool_arguments(schema: Any) -> list[str] | None:
    """Each argument of a tool as ``name: type`` or ``name?: type`` (a last ``…`` when
    some were left out); None when ``schema`` is not an object (nothing is known of the
    arguments). Raises nothing."""
    schema = plain(schema)
    if not isinstance(schema, dict):
        return None
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    listed = required if isinstance(required, list) else []
    needed = dict.fromkeys(name for name in listed if isinstance(name, str))
    # A required name the properties do not describe is still required: of type any.
    ordered = [
        *((name, True, properties[name]) for name in properties if name in needed),
        *((name, True, None) for name in needed if name not in properties),
        *((name, False, properties[name]) for name in properties if name not in needed),
    ]
    shown = [
        f"{name}{'' if must else '?'}: {type_of(value)}"
        for name, must, value in ordered[:MAX_ARGUMENTS]
    ]
    return [*shown, MORE] if len(ordered) > MAX_ARGUMENTS else shown


def prompt_arguments(arguments: Any) -> list[str]:
    """Each argument of a prompt as ``name`` or ``name?``, required ones first (a last
    ``…`` when some were left out). An entry that is not an object is shown as its
    JSON. Raises nothing."""
    arguments = plain(arguments)
    if arguments is None:
        return []
    items = arguments if isinstance(arguments, list) else [arguments]
    entries: list[tuple[str, bool]] = []
    for argument in items:
        if isinstance(argument, dict):
            must = argument.get("required") is True
            entries.append((f"{text_of(argument.get('name', '?'))}{'' if must else '?'}", must))
        else:
            entries.append((text_of(argument), True))
    ordered = [name for name, must in entries if must] + [n for n, must in entries if not must]
    shown = ordered[:MAX_ARGUMENTS]
    return [*shown, MORE] if len(ordered) > MAX_ARGUMENTS else shown


def type_of(schema: Any) -> str:
    """The type a JSON Schema describes, as the signature writes it. Raises nothing."""
    return _cut(_Types().of(schema, 0))


class _Types:
    """Writes one type, visiting at most :data:`NODE_BUDGET` schemas: a union of unions
    nested to the depth bound would otherwise be visited thousands of times over."""

    def __init__(self) -> None:
        self.left = NODE_BUDGET

    def of(self, schema: Any, depth: int) -> str:
        self.left -= 1
        if depth > MAX_DEPTH or self.left < 0:
            return MORE
        if schema is True:
            return "any"
        if schema is False:
            return "never"
        if not isinstance(schema, dict):
            return "any"
        if "const" in schema:
            return _literal(schema["const"])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return _joined([_literal(v) for v in schema["enum"][:MAX_CHOICES]], schema["enum"])
        for key in ("anyOf", "oneOf"):
            members = schema.get(key)
            if isinstance(members, list) and members:
                return _joined(self._each(members, depth), members)
        every = schema.get("allOf")
        if isinstance(every, list) and every:
            return _joined([_grouped(t) for t in self._each(every, depth)], every, "&")
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref:
            return ref.rsplit("/", 1)[-1] or ref
        kind = schema.get("type")
        if isinstance(kind, list) and kind:
            return _joined([self._named(k, schema, depth) for k in kind[:MAX_CHOICES]], kind)
        if isinstance(kind, str):
            return self._named(kind, schema, depth)
        if isinstance(schema.get("properties"), dict):
            return "object"
        if "items" in schema:
            return self._named("array", schema, depth)
        return "any"

    def _each(self, members: list[Any], depth: int) -> list[str]:
        return [self.of(member, depth + 1) for member in members[:MAX_CHOICES]]

    def _named(self, kind: Any, schema: dict[str, Any], depth: int) -> str:
        if kind != "array":
            return text_of(kind)
        items = schema.get("items")
        if isinstance(items, list):  # the old tuple form
            return f"[{', '.join(_more(self._each(items, depth), items))}]"
        return f"{_grouped(self.of(items, depth + 1) if 'items' in schema else 'any')}[]"


def _grouped(text: str) -> str:
    """A union in parentheses where it is part of a longer type (``(a|b)[]``)."""
    return f"({text})" if _compound(text) else text


def _compound(text: str) -> bool:
    """Whether ``text`` joins types with ``|`` or ``&`` outside any bracket or string."""
    depth, quoted, escaped = 0, False, False
    for ch in text:
        if quoted:
            escaped, quoted = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            quoted = True
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch in "|&" and depth == 0:
            return True
    return False


def _joined(members: list[str], given: list[Any], joint: str = "|") -> str:
    """The members written once each, ``…`` last when ``given`` had more."""
    return joint.join(dict.fromkeys(_more(members, given)))


def _more(shown: list[str], given: list[Any]) -> list[str]:
    return [*shown, MORE] if len(given) > MAX_CHOICES else shown


def _literal(value: Any) -> str:
    try:
        return _cut(msgspec.json.encode(value).decode())
    except (msgspec.EncodeError, TypeError, RecursionError):
        return "any"


def _cut(text: str) -> str:
    return text if len(text) <= TYPE_LIMIT else text[: TYPE_LIMIT - len(MORE)] + MORE
