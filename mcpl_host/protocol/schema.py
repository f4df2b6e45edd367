"""Checking a tool's ``structuredContent`` against its ``outputSchema`` (JSON Schema).

MCP's default dialect is JSON Schema 2020-12; servers also emit draft-07 style schemas.
A schema is compiled once into closures, one per keyword, and :func:`validator_for`
caches the result by the schema's canonical JSON.

Supported (2020-12 semantics):

- boolean schemas; ``type``; ``enum`` and ``const`` with JSON equality (``1 == 1.0``,
  ``true != 1``); ``multipleOf`` (decimal arithmetic, so ``0.07`` is a multiple of
  ``0.01``), ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``;
- ``minLength``/``maxLength`` (code points), ``pattern`` (Python :func:`re.search`);
- ``items``, ``prefixItems``, ``contains``/``minContains``/``maxContains``,
  ``minItems``/``maxItems``, ``uniqueItems``;
- ``properties``, ``patternProperties``, ``additionalProperties``, ``required``,
  ``propertyNames``, ``minProperties``/``maxProperties``, ``dependentRequired``,
  ``dependentSchemas``;
- ``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``;
- ``$ref`` to a JSON pointer or a plain-name ``$anchor`` in the same document (``#``,
  ``#/$defs/x``, ``#/definitions/x``, ``~0``/``~1`` and percent escapes, or the root
  ``$id`` followed by such a fragment), recursive schemas included;
- draft-07 leftovers: ``definitions``, array-form ``items`` with ``additionalItems``,
  ``dependencies``, and ``"$id": "#name"`` as an anchor.

Every other keyword is an annotation or unknown, and is ignored as the specification
says (``format``, ``title``, ``description``, ``default``, ``$comment``, ``$schema``,
``contentMediaType``...). ``$ref`` siblings always apply, as in 2020-12.

Refused with :class:`UnsupportedSchema` at compile time: ``unevaluatedProperties``,
``unevaluatedItems``, ``$dynamicRef``, ``$dynamicAnchor``, ``$recursiveRef``; a
``$ref`` to another document or inside a subschema with its own ``$id``; a ``$ref``
that does not resolve; a ``$ref`` cycle that never descends into the instance; a
pattern Python cannot compile; a schema that is not an object or a boolean; a keyword
with a malformed value; a schema nested too deeply to compile.

Instances are the plain values :func:`msgspec.json.decode` returns (dict, list, str, int,
float, bool, None; exact types, not subclasses). Validation recursion follows the
instance: nesting beyond :data:`MAX_DEPTH` is reported as a violation, never raised.
Peer text (instance values, property names, schema text) reaches a message or a path
only through :func:`~mcpl_host.protocol.redact.log_value`, cut at 64 characters.

Limit: like any direct evaluator, ``anyOf``/``oneOf`` whose alternatives all descend
into the same deep instance can take time exponential in that depth.
"""

from __future__ import annotations

import contextlib
import decimal
import functools
import operator
import re
from collections.abc import Callable, Iterable, Sized
from typing import Any, Final, TypeAlias, cast
from urllib.parse import unquote

import msgspec

from mcpl_host.protocol.redact import log_value

__all__ = [
    "CACHE_SIZE",
    "MAX_DEPTH",
    "SchemaViolation",
    "UnsupportedSchema",
    "Validator",
    "compile_schema",
    "validator_for",
]

MAX_DEPTH: Final = 200
CACHE_SIZE: Final = 256
# Peer text in a message is cut here: enough to recognise a value, too little to flood.
_SHOWN: Final = 64

_REFUSED: Final = {
    "unevaluatedProperties": "needs annotation collection",
    "unevaluatedItems": "needs annotation collection",
    "$dynamicRef": "needs dynamic scopes",
    "$dynamicAnchor": "needs dynamic scopes",
    "$recursiveRef": "needs dynamic scopes",
}
_PY_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "number": (int, float),
    "integer": (int,),
    "string": (str,),
}
_ARRAY_INDEX: Final = re.compile(r"0|[1-9][0-9]*")
# Decimal multipleOf must hold a float's full range (1e308 / 5e-324) without rounding.
_DECIMAL: Final = decimal.Context(prec=1100, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


class SchemaViolation(msgspec.Struct, frozen=True, gc=False):
    """One way an instance fails its schema.

    ``path`` is a JSON pointer into the instance (``""`` is the root); its segments pass
    through ``log_value``, so an odd property name is escaped rather than exact.
    """

    path: str
    keyword: str
    message: str


class UnsupportedSchema(Exception):
    """The schema uses something this validator cannot evaluate (or is malformed)."""


# ---------------------------------------------------------------------------------------
# Collecting violations


class _Stop(Exception):
    """The sink is full: unwind at once, the rest of the instance is not looked at."""


class _Sink:
    """Where violations go, and the instance path that leads to the current value.

    Checks get ``None`` instead of a sink on the fast path: they then answer yes or no
    and stop at the first failure, building no path and no message.
    """

    __slots__ = ("limit", "out", "path")

    def __init__(self, limit: int, path: list[str | int] | None = None) -> None:
        self.limit = limit
        self.out: list[SchemaViolation] = []
        self.path: list[str | int] = [] if path is None else path

    def pointer(self) -> str:
        return "".join(["/" + _segment(part) for part in self.path])

    def add(self, keyword: str, message: str) -> None:
        self.put(SchemaViolation(self.pointer(), keyword, message))

    def add_at(self, key: str | int, keyword: str, message: str) -> None:
        self.path.append(key)
        self.add(keyword, message)
        self.path.pop()

    def put(self, violation: SchemaViolation) -> None:
        self.out.append(violation)
        if len(self.out) >= self.limit:
            raise _Stop


Check: TypeAlias = Callable[[Any, int, _Sink | None], bool]


def _segment(part: str | int) -> str:
    if type(part) is int:
        return str(part)
    return log_value(str(part).replace("~", "~0").replace("/", "~1"), _SHOWN)


def _show(text: str) -> str:
    return log_value(text, _SHOWN)


def _number_text(value: float) -> str:
    try:
        return _show(repr(value))
    except ValueError:  # an int past Python's digit limit for str()
        return "a very large integer"


def _json_text(value: Any) -> str:
    try:
        return _show(msgspec.json.encode(value).decode())
    except (TypeError, ValueError, msgspec.EncodeError):
        return _show(repr(value))


def _describe(value: Any) -> str:
    """A value as a message shows it: scalars cut and escaped, containers by kind."""
    cls = type(value)
    if cls is str:
        return f"'{_show(value)}'"
    if cls is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if cls is int or cls is float:
        return _number_text(value)
    if cls is list:
        return "an array"
    if cls is dict:
        return "an object"
    return _show(cls.__name__)


def _too_deep(sink: _Sink | None) -> bool:
    if sink is not None:
        sink.add("depth", f"instance nested too deeply (more than {MAX_DEPTH} levels)")
    return False


# ---------------------------------------------------------------------------------------
# JSON equality: values are frozen into hashable forms where bools are not numbers


_TRUE: Final = object()
_FALSE: Final = object()
_LIST: Final = object()
_DICT: Final = object()


def _freeze(value: Any) -> Any:
    """A hashable stand-in equal (and hashing equal) exactly when JSON says equal.

    Python already has ``1 == 1.0``; bools get their own markers so ``true != 1``.
    """
    cls = type(value)
    if cls is bool:
        return _TRUE if value else _FALSE
    if cls is list:
        return (_LIST, tuple([_freeze(item) for item in value]))
    if cls is dict:
        return (_DICT, frozenset([(key, _freeze(item)) for key, item in value.items()]))
    return value


# ---------------------------------------------------------------------------------------
# Check factories: one closure per keyword


def _always(_inst: Any, _depth: int, _sink: _Sink | None) -> bool:
    return True


def _never(inst: Any, _depth: int, sink: _Sink | None) -> bool:
    if sink is not None:
        sink.add("false", f"{_describe(inst)} is not allowed here (the schema is false)")
    return False


def _deferred(slot: list[Check]) -> Check:
    """A check for a schema still being compiled (recursion): looked up when called."""

    def check(inst: Any, depth: int, sink: _Sink | None) -> bool:
        return slot[0](inst, depth, sink)

    return check


def _conjunction(checks: list[Check]) -> Check:
    """All of ``checks``; a lone check is returned as is, saving a call per use."""
    kept = tuple(check for check in checks if check is not _always)
    if not kept:
        return _always
    if len(kept) == 1:
        return kept[0]

    def check(inst: Any, depth: int, sink: _Sink | None) -> bool:
        if sink is None:
            for one in kept:  # noqa: SIM110 - all() over a generator is slower here
                if not one(inst, depth, None):
                    return False
            return True
        ok = True
        for one in kept:
            ok = one(inst, depth, sink) and ok
        return ok

    return check


def _type_check(names: tuple[str, ...]) -> Check:
    accepted = frozenset(cls for name in names for cls in _PY_TYPES[name])
    # "integer" takes 1.0 as well: JSON does not tell integers from integral floats.
    integral = "integer" in names and float not in accepted
    wanted = " or ".join(f"'{name}'" for name in names)

    def check(inst: Any, _depth: int, sink: _Sink | None) -> bool:
        cls = type(inst)
        if cls in accepted or (integral and cls is float and inst.is_integer()):
            return True
        if sink is not None:
            sink.add("type", f"{_describe(inst)} is not of type {wanted}")
        return False

    return check


def _const_check(frozen: Any, shown: str) -> Check:
    def check(inst: Any, _depth: int, sink: _Sink | None) -> bool:
        if _freeze(inst) == frozen:
            return True
        if sink is not None:
            sink.add("const", f"{_describe(inst)} is not the constant {shown}")
        return False

    return check


def _enum_check(allowed: frozenset[Any], shown: str) -> Check:
    def check(inst: Any, _depth: int, sink: _Sink | None) -> bool:
        if _freeze(inst) in allowed:
            return True
        if sink is not None:
            sink.add("enum", f"{_describe(inst)} is not one of {shown}")
        return False

    return check


def _bound_check(
    keyword: str, bound: float, holds: Callable[[Any, Any], bool], phrase: str
) -> Check:
    shown = _number_text(bound)

    def check(inst: Any, _depth: int, sink: _Sink | None) -> bool:
        cls = type(inst)
        if (cls is not int and cls is not float) or holds(inst, bound):
            return True
        if sink is not None:
            sink.add(keyword, f"{_describe(inst)} is {phrase} {shown}")
        return False

    return check


def _is_multiple(value: float, step: decimal.Decimal) -> bool:
    """Decimal arithmetic on the shortest text of each number, as a person reads them."""
    try:
        with decimal.localcontext(_DECIMAL):
            return decimal.Decimal(repr(value)) % step == 0
    except (decimal.InvalidOperation, ValueError):  # past even that precision
        return False


def _multiple_check(step: float) -> Check:
    exact = step if type(step) is int else None
    as_decimal = decimal.Decimal(repr(step))
    shown = _number_text(step)

    def check(inst: Any, _depth: int, sink: _Sink | None) -> bool:
        cls = type(inst)
        if cls is int and exact is not None:
            ok: bool = inst % exact == 0
        elif cls is int or cls is float:
            ok = _is_multiple(inst, as_decimal)
        else:
            return True
        if not ok and sink is not None:
            sink.add("multipleOf", f"{_describe(inst)} is not a multiple of {shown}")
        return ok

    return check


def _size_check(keyword: str, cls: type[Sized], bound: int, at_least: bool, unit: str) -> Check:
    """minLength/maxLength, minItems/maxItems, minProperties/maxProperties."""
    limit_word = "minimum" if at_least else "maximum"

    def check(inst: Any, _depth: int, sink: _Sink | None) -> bool:
        if type(inst) is not cls:
            return True
        size = len(inst)
        if (size >= bound) if at_least else (size <= bound):
            return True
        if sink is not None:
            what = _describe(inst) if cls is str else _describe(inst).removeprefix("an ")
            sink.add(keyword, f"{what} has {size} {unit}; the {limit_word} is {bound}")
        return False

    return check


def _pattern_check(regex: re.Pattern[str]) -> Check:
    shown = _show(regex.pattern)

    def check(inst: Any, _depth: int, sink: _Sink | None) -> bool:
        if type(inst) is not str or regex.search(inst):
            return True
        if sink is not None:
            sink.add("pattern", f"{_describe(inst)} does not match the pattern '{shown}'")
        return False

    return check


def _each_item_check(sub: Check) -> Check:
    """``items`` alone, the common case: the same schema for every item."""

    def check(inst: Any, depth: int, sink: _Sink | None) -> bool:
        if type(inst) is not list or not inst:
            return True
        if depth >= MAX_DEPTH:
            return _too_deep(sink)
        depth += 1
        if sink is None:
            for item in inst:  # noqa: SIM110 - all() over a generator is slower here
                if not sub(item, depth, None):
                    return False
            return True
        ok = True
        path = sink.path
        for index, item in enumerate(inst):
            path.append(index)
            ok = sub(item, depth, sink) and ok
            path.pop()
        return ok

    return check


def _items_check(prefix: tuple[Check, ...], rest: Check | None, keyword: str) -> Check:
    """prefixItems and items (or draft-07 array items and additionalItems)."""
    count = len(prefix)
    closed = rest is _never  # "items": false reads better as one message than per item

    def check(inst: Any, depth: int, sink: _Sink | None) -> bool:
        if type(inst) is not list or not inst:
            return True
        if depth >= MAX_DEPTH:
            return _too_deep(sink)
        depth += 1
        ok = True
        for index in range(min(count, len(inst))):
            if sink is None:
                if not prefix[index](inst[index], depth, None):
                    return False
                continue
            sink.path.append(index)
            ok = prefix[index](inst[index], depth, sink) and ok
            sink.path.pop()
        if closed and len(inst) > count:
            if sink is not None:
                sink.add(keyword, f"array has {len(inst)} items; at most {count} are allowed")
            return False
        if rest is None:
            return ok
        for index in range(count, len(inst)):
            if sink is None:
                if not rest(inst[index], depth, None):
                    return False
                continue
            sink.path.append(index)
            ok = rest(inst[index], depth, sink) and ok
            sink.path.pop()
        return ok

    return check


def _contains_check(sub: Check, low: int, high: int | None) -> Check:
    def check(inst: Any, depth: int, sink: _Sink | None) -> bool:
        if type(inst) is not list:
            return True
        if depth >= MAX_DEPTH and inst:
            return _too_deep(sink)
        found = 0
        for item in inst:
            if sub(item, depth + 1, None):
                found += 1
                if high is None and found >= low:
                    return True
        if found >= low and (high is None or found <= high):
            return True
        if sink is not None:
            sink.add("contains", _contains_message(found, low, high))
        return False

    return check


def _contains_message(found: int, low: int, high: int | None) -> str:
    if found == 0:
        return "array has no item matching 'contains'"
    if found < low:
        return f"array has {found} items matching 'contains'; the minimum is {low}"
    return f"array has {found} items matching 'contains'; the maximum is {high}"


def _unique_check(inst: Any, _depth: int, sink: _Sink | None) -> bool:
    if type(inst) is not list or len(inst) < 2:
        return True
    seen: dict[Any, int] = {}
    for index, item in enumerate(inst):
        first = seen.setdefault(_freeze(item), index)
        if first != index:
            if sink is not None:
                sink.add("uniqueItems", f"array items {first} and {index} are equal")
            return False
    return True


def _properties_check(members: tuple[tuple[str, Check], ...]) -> Check:
    """``properties`` alone: the common case, looked up from the schema's side."""

    def check(inst: Any, depth: int, sink: _Sink | None) -> bool:
        if type(inst) is not dict or not inst:
            return True
        if depth >= MAX_DEPTH:
            return _too_deep(sink)
        depth += 1
        if sink is None:
            for name, sub in members:
                if name in inst and not sub(inst[name], depth, None):
                    return False
            return True
        ok = True
        path = sink.path
        for name, sub in members:
            if name in inst:
                path.append(name)
                ok = sub(inst[name], depth, sink) and ok
                path.pop()
        return ok

    return check


def _apply(sub: Check, value: Any, key: str, depth: int, sink: _Sink | None) -> bool:
    if sink is None:
        return sub(value, depth, None)
    sink.path.append(key)
    ok = sub(value, depth, sink)
    sink.path.pop()
    return ok


def _members_check(
    named: dict[str, Check],
    patterns: tuple[tuple[re.Pattern[str], Check], ...],
    additional: Check | None,
) -> Check:
    """properties with patternProperties and/or additionalProperties: per member."""
    # Without patterns, a member is checked by its named schema or else by additional.
    simple = additional if not patterns else None

    def member(name: str, value: Any, depth: int, sink: _Sink | None) -> bool:
        sub = named.get(name)
        matched = sub is not None
        ok = sub is None or _apply(sub, value, name, depth, sink)
        for regex, psub in patterns:
            if regex.search(name):
                matched = True
                ok = _apply(psub, value, name, depth, sink) and ok
        if matched or additional is None:
            return ok
        if additional is _never:  # one clear message instead of "the schema is false"
            if sink is not None:
                sink.add_at(
                    name, "additionalProperties", f"property '{_show(name)}' is not allowed"
                )
            return False
        return _apply(additional, value, name, depth, sink)

    def check(inst: Any, depth: int, sink: _Sink | None) -> bool:
        if type(inst) is not dict or not inst:
            return True
        if depth >= MAX_DEPTH:
            return _too_deep(sink)
        if sink is None and simple is not None:
            for name, value in inst.items():
                if not named.get(name, simple)(value, depth + 1, None):
                    return False
            return True
        ok = True
        for name, value in inst.items():
            if not member(name, value, depth + 1, sink):
                if sink is None:
                    return False
                ok = False
        return ok

    return check


def _required_check(names: tuple[str, ...]) -> Check:
    wanted = frozenset(names)

    def check(inst: Any, _depth: int, sink: _Sink | None) -> bool:
        if type(inst) is not dict or inst.keys() >= wanted:
            return True
        if sink is not None:
            for name in names:
                if name not in inst:
                    sink.add("required", f"'{_show(name)}' is required")
        return False

    return check


def _dependent_required_check(rules: tuple[tuple[str, tuple[str, ...]], ...]) -> Check:
    def check(inst: Any, _depth: int, sink: _Sink | None) -> bool:
        if type(inst) is not dict:
            return True
        ok = True
        for trigger, names in rules:
            if trigger not in inst:
                continue
            for name in names:
                if name not in inst:
                    if sink is None:
                        return False
                    ok = False
                    sink.add(
                        "dependentRequired",
                        f"'{_show(name)}' is required when '{_show(trigger)}' is present",
                    )
        return ok

    return check


def _dependent_schemas_check(rules: tuple[tuple[str, Check], ...]) -> Check:
    def check(inst: Any, depth: int, sink: _Sink | None) -> bool:
        if type(inst) is not dict:
            return True
        ok = True
        for trigger, sub in rules:
            if trigger in inst and not sub(inst, depth, sink):
                if sink is None:
                    return False
                ok = False
        return ok

    return check


def _property_names_check(sub: Check) -> Check:
    def check(inst: Any, depth: int, sink: _Sink | None) -> bool:
        if type(inst) is not dict:
            return True
        ok = True
        for name in inst:
            if not sub(name, depth + 1, None):
                if sink is None:
                    return False
                ok = False
                sink.add("propertyNames", f"property name '{_show(name)}' is invalid")
        return ok

    return check


def _explain_no_match(
    keyword: str, subs: tuple[Check, ...], inst: Any, depth: int, sink: _Sink
) -> None:
    """Why no alternative matched.

    An alternative the instance fails only by its type (the ``null`` of an optional
    field, say) says nothing useful; when exactly one alternative remains, its own
    violations are the helpful answer. Otherwise one summary violation.
    """
    here = sink.pointer()
    relevant: list[list[SchemaViolation]] = []
    for sub in subs:
        trial = _Sink(max(1, sink.limit - len(sink.out)), list(sink.path))
        with contextlib.suppress(_Stop):
            sub(inst, depth, trial)
        if not all(found.keyword == "type" and found.path == here for found in trial.out):
            relevant.append(trial.out)
    if len(relevant) == 1:
        for found in relevant[0]:
            sink.put(found)
        return
    sink.add(keyword, f"{_describe(inst)} matches none of the {len(subs)} alternatives")


def _any_of_check(subs: tuple[Check, ...]) -> Check:
    def check(inst: Any, depth: int, sink: _Sink | None) -> bool:
        for sub in subs:
            if sub(inst, depth, None):
                return True
        if sink is not None:
            _explain_no_match("anyOf", subs, inst, depth, sink)
        return False

    return check


def _one_of_check(subs: tuple[Check, ...]) -> Check:
    def check(inst: Any, depth: int, sink: _Sink | None) -> bool:
        first = -1
        for index, sub in enumerate(subs):
            if not sub(inst, depth, None):
                continue
            if first < 0:
                first = index
                continue
            if sink is not None:
                sink.add(
                    "oneOf",
                    f"{_describe(inst)} matches alternatives {first} and {index}; "
                    "exactly one must match",
                )
            return False
        if first >= 0:
            return True
        if sink is not None:
            _explain_no_match("oneOf", subs, inst, depth, sink)
        return False

    return check


def _not_check(sub: Check) -> Check:
    def check(inst: Any, depth: int, sink: _Sink | None) -> bool:
        if not sub(inst, depth, None):
            return True
        if sink is not None:
            sink.add("not", f"{_describe(inst)} must not match the 'not' schema")
        return False

    return check


def _conditional_check(condition: Check, then: Check, otherwise: Check) -> Check:
    def check(inst: Any, depth: int, sink: _Sink | None) -> bool:
        if condition(inst, depth, None):
            return then(inst, depth, sink)
        return otherwise(inst, depth, sink)

    return check


# ---------------------------------------------------------------------------------------
# Reading keyword values (a malformed one refuses the schema)


def _malformed(keyword: str, expected: str, where: str) -> UnsupportedSchema:
    return UnsupportedSchema(f"'{_show(keyword)}' at {_show(where)} must be {expected}")


def _number(value: Any, keyword: str, where: str) -> float:
    if type(value) is not int and type(value) is not float:
        raise _malformed(keyword, "a number", where)
    return cast(float, value)


def _count(value: Any, keyword: str, where: str) -> int:
    if type(value) is float and value.is_integer():
        value = int(value)  # 2.0 is an integer in JSON Schema
    if type(value) is not int or value < 0:
        raise _malformed(keyword, "a non-negative integer", where)
    return int(value)


def _strings(value: Any, keyword: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _malformed(keyword, "an array of strings", where)
    return tuple(value)


def _regex(source: Any, keyword: str, where: str) -> re.Pattern[str]:
    if not isinstance(source, str):
        raise _malformed(keyword, "a string", where)
    try:
        return re.compile(source)
    except (re.error, OverflowError, RecursionError) as exc:
        raise UnsupportedSchema(
            f"'{keyword}' at {_show(where)}: Python cannot compile '{_show(source)}'"
        ) from exc


def _frozen(value: Any, keyword: str, where: str) -> Any:
    try:
        frozen = _freeze(value)
        hash(frozen)
    except TypeError as exc:
        raise _malformed(keyword, "JSON", where) from exc
    return frozen


_MISSING: Final = object()


def _pointer_escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _follow(document: Any, pointer: str) -> Any:
    """The value at a JSON pointer, or ``_MISSING``."""
    node = document
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and _ARRAY_INDEX.fullmatch(token) and int(token) < len(node):
            node = node[int(token)]
        else:
            return _MISSING
    return node


# ---------------------------------------------------------------------------------------
# The document: where subschemas are, which belong to nested resources, the anchors


_ONE_SCHEMA: Final = (
    "additionalProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
    "items",
)
_SCHEMA_LISTS: Final = ("prefixItems", "allOf", "anyOf", "oneOf", "items")
_SCHEMA_MAPS: Final = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
)


def _subschemas(node: dict[str, Any]) -> Iterable[Any]:
    """The subschemas of ``node``, by keyword (never values of enum, const...)."""
    for keyword in _ONE_SCHEMA:
        child = node.get(keyword)
        if isinstance(child, dict):
            yield child
    for keyword in _SCHEMA_LISTS:
        children = node.get(keyword)
        if isinstance(children, list):
            yield from (child for child in children if isinstance(child, dict))
    for keyword in _SCHEMA_MAPS:
        children = node.get(keyword)
        if isinstance(children, dict):
            yield from (child for child in children.values() if isinstance(child, dict))


class _Document(msgspec.Struct):
    root_id: str
    anchors: dict[str, Any]
    nested: set[int]  # ids of subschemas inside a nested $id: their refs are refused


def _scan(root: Any) -> _Document:
    """One pass over the schema tree (iterative: a deep schema cannot overflow here)."""
    doc = _Document(root_id="", anchors={}, nested=set())
    if isinstance(root, dict) and isinstance(root.get("$id"), str):
        doc.root_id = root["$id"].partition("#")[0]
    seen: set[int] = set()
    stack: list[tuple[Any, bool, bool]] = [(root, False, True)]
    while stack:
        node, inside, is_root = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        ident = node.get("$id")
        if not is_root and isinstance(ident, str) and not ident.startswith("#"):
            inside = True
        if inside:
            doc.nested.add(id(node))
        else:
            _register_anchors(doc, node, ident)
        stack.extend((child, inside, False) for child in _subschemas(node))
    return doc


def _register_anchors(doc: _Document, node: dict[str, Any], ident: Any) -> None:
    names = [node.get("$anchor")]
    if isinstance(ident, str) and ident.startswith("#"):
        names.append(ident[1:])  # draft-07: "$id": "#name" is a plain-name anchor
    for name in names:
        if not isinstance(name, str) or not name:
            continue
        if doc.anchors.setdefault(name, node) is not node:
            raise UnsupportedSchema(f"$anchor '{_show(name)}' is defined twice")


# ---------------------------------------------------------------------------------------
# The compiler


class _Compiler:
    """Compiles every subschema reachable from the root exactly once.

    A subschema met again while still being compiled (a recursive ``$ref``) becomes a
    deferred check, so compilation terminates. Edges between subschemas applied to the
    same instance location are kept: a cycle among them would never terminate at
    validation, and is refused once the whole graph is known.
    """

    def __init__(self, root: Any) -> None:
        self._root = root
        self._doc = _scan(root)
        self._done: dict[int, Check] = {}
        self._pending: dict[int, list[Check]] = {}
        self._in_place: dict[int, list[int]] = {}
        self._where: dict[int, str] = {}

    def compile(self) -> Check:
        check = self.sub(self._root, "#")
        self._refuse_cycles()
        return check

    def sub(self, schema: Any, where: str) -> Check:
        """The check for a subschema applied to a different instance location."""
        if isinstance(schema, bool):
            return _always if schema else _never
        if not isinstance(schema, dict):
            raise UnsupportedSchema(f"the schema at {_show(where)} is not an object or a boolean")
        key = id(schema)
        done = self._done.get(key)
        if done is not None:
            return done
        pending = self._pending.get(key)
        if pending is not None:
            return _deferred(pending)
        slot: list[Check] = []
        self._pending[key] = slot
        self._in_place[key] = []
        self._where[key] = where
        check = _conjunction(self._checks(schema, where))
        slot.append(check)
        del self._pending[key]
        self._done[key] = check
        return check

    def in_place(self, parent: dict[str, Any], schema: Any, where: str) -> Check:
        """The check for a subschema applied to the same instance location as ``parent``."""
        if isinstance(schema, dict):
            self._in_place[id(parent)].append(id(schema))
        return self.sub(schema, where)

    def resolve(self, ref: str, holder: dict[str, Any], where: str) -> tuple[Any, str]:
        """The subschema a ``$ref`` names, and where it is, for messages."""
        if id(holder) in self._doc.nested:
            raise UnsupportedSchema(f"$ref at {_show(where)} is relative to a nested $id")
        base, _, fragment = ref.partition("#")
        if base and base != self._doc.root_id:
            raise UnsupportedSchema(f"$ref '{_show(ref)}' at {_show(where)} is not local")
        name = unquote(fragment)
        if not name or name.startswith("/"):
            target = _follow(self._root, name)
        else:
            target = self._doc.anchors.get(name, _MISSING)
        if not isinstance(target, dict | bool):
            raise UnsupportedSchema(f"$ref '{_show(ref)}' at {_show(where)} does not resolve")
        return target, "#" + fragment

    def _checks(self, schema: dict[str, Any], where: str) -> list[Check]:
        for keyword, why in _REFUSED.items():
            if keyword in schema:
                raise UnsupportedSchema(f"'{keyword}' at {_show(where)} {why}")
        _check_identifiers(schema, where)
        checks: list[Check] = []
        for build in _BUILDERS:
            checks.extend(build(self, schema, where))
        return checks

    def _refuse_cycles(self) -> None:
        """Refuse a loop of in-place edges: it would recurse without consuming instance."""
        state: dict[int, bool] = {}  # False: on the current path; True: finished
        for start in self._in_place:
            if start in state:
                continue
            stack = [(start, iter(self._in_place[start]))]
            state[start] = False
            while stack:
                node, edges = stack[-1]
                nxt = next(edges, None)
                if nxt is None:
                    state[node] = True
                    stack.pop()
                elif state.get(nxt) is False:
                    raise UnsupportedSchema(
                        f"$ref cycle through {_show(self._where[nxt])} never consumes instance"
                    )
                elif nxt not in state:
                    state[nxt] = False
                    stack.append((nxt, iter(self._in_place.get(nxt, ()))))


def _check_identifiers(schema: dict[str, Any], where: str) -> None:
    for keyword in ("$id", "$anchor", "$ref"):
        if keyword in schema and not isinstance(schema[keyword], str):
            raise _malformed(keyword, "a string", where)
    for keyword in ("$defs", "definitions"):
        if keyword in schema and not isinstance(schema[keyword], dict):
            raise _malformed(keyword, "an object", where)


def _schema_list(c: _Compiler, s: dict[str, Any], keyword: str, where: str) -> tuple[Check, ...]:
    """An array of subschemas applied in place (allOf, anyOf, oneOf)."""
    subs = s[keyword]
    if not isinstance(subs, list) or not subs:
        raise _malformed(keyword, "a non-empty array of schemas", where)
    return tuple(c.in_place(s, sub, f"{where}/{keyword}/{i}") for i, sub in enumerate(subs))


def _schema_map(value: Any, keyword: str, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _malformed(keyword, "an object", where)
    return value


# ---------------------------------------------------------------------------------------
# Builders: a schema's keywords, by family, to checks (cheap and likely failures first)


Builder: TypeAlias = Callable[[_Compiler, dict[str, Any], str], list[Check]]


def _build_ref(c: _Compiler, s: dict[str, Any], where: str) -> list[Check]:
    if "$ref" not in s:
        return []
    target, target_where = c.resolve(s["$ref"], s, where)
    return [c.in_place(s, target, target_where)]


def _build_type(_c: _Compiler, s: dict[str, Any], where: str) -> list[Check]:
    if "type" not in s:
        return []
    names = s["type"]
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list) or not names or any(name not in _PY_TYPES for name in names):
        raise _malformed("type", "a type name or a non-empty array of them", where)
    return [_type_check(tuple(names))]


def _build_values(_c: _Compiler, s: dict[str, Any], where: str) -> list[Check]:
    checks: list[Check] = []
    if "const" in s:
        checks.append(_const_check(_frozen(s["const"], "const", where), _json_text(s["const"])))
    if "enum" in s:
        values = s["enum"]
        if not isinstance(values, list):
            raise _malformed("enum", "an array", where)
        allowed = frozenset(_frozen(value, "enum", where) for value in values)
        checks.append(_enum_check(allowed, _json_text(values)))
    return checks


_BOUNDS: Final = (
    ("minimum", operator.ge, "less than the minimum of"),
    ("maximum", operator.le, "greater than the maximum of"),
    ("exclusiveMinimum", operator.gt, "not greater than"),
    ("exclusiveMaximum", operator.lt, "not less than"),
)


def _build_numbers(_c: _Compiler, s: dict[str, Any], where: str) -> list[Check]:
    checks: list[Check] = []
    for keyword, holds, phrase in _BOUNDS:
        if keyword in s:
            checks.append(_bound_check(keyword, _number(s[keyword], keyword, where), holds, phrase))
    if "multipleOf" in s:
        step = _number(s["multipleOf"], "multipleOf", where)
        if step <= 0:
            raise _malformed("multipleOf", "greater than 0", where)
        checks.append(_multiple_check(step))
    return checks


_SIZES: Final = (
    ("minLength", str, True, "characters"),
    ("maxLength", str, False, "characters"),
    ("minItems", list, True, "items"),
    ("maxItems", list, False, "items"),
    ("minProperties", dict, True, "properties"),
    ("maxProperties", dict, False, "properties"),
)


def _build_sizes(_c: _Compiler, s: dict[str, Any], where: str) -> list[Check]:
    checks: list[Check] = []
    for keyword, cls, at_least, unit in _SIZES:
        if keyword in s:
            bound = _count(s[keyword], keyword, where)
            checks.append(_size_check(keyword, cls, bound, at_least, unit))
    if "pattern" in s:
        checks.append(_pattern_check(_regex(s["pattern"], "pattern", where)))
    return checks


def _build_items(c: _Compiler, s: dict[str, Any], where: str) -> list[Check]:
    items = s.get("items")
    prefix_value: Any
    if isinstance(items, list):  # draft-07 tuple form: items, then additionalItems
        if "prefixItems" in s:
            raise _malformed("items", "a schema when prefixItems is present", where)
        prefix_key, prefix_value = "items", items
        rest_key, rest_value = "additionalItems", s.get("additionalItems")
    else:
        prefix_key, prefix_value = "prefixItems", s.get("prefixItems")
        rest_key, rest_value = "items", items
    if prefix_value is not None and (not isinstance(prefix_value, list) or not prefix_value):
        raise _malformed(prefix_key, "a non-empty array of schemas", where)
    prefix = tuple(
        c.sub(sub, f"{where}/{prefix_key}/{i}") for i, sub in enumerate(prefix_value or ())
    )
    rest = None if rest_value is None else c.sub(rest_value, f"{where}/{rest_key}")
    if not prefix and (rest is None or rest is _always):
        return []
    if not prefix and rest is not None and rest is not _never:
        return [_each_item_check(rest)]
    return [_items_check(prefix, rest, rest_key)]


def _build_arrays(c: _Compiler, s: dict[str, Any], where: str) -> list[Check]:
    checks = _build_items(c, s, where)
    low = _count(s["minContains"], "minContains", where) if "minContains" in s else 1
    high = _count(s["maxContains"], "maxContains", where) if "maxContains" in s else None
    if "contains" in s:
        checks.append(_contains_check(c.sub(s["contains"], f"{where}/contains"), low, high))
    unique = s.get("uniqueItems", False)
    if not isinstance(unique, bool):
        raise _malformed("uniqueItems", "a boolean", where)
    if unique:
        checks.append(_unique_check)
    return checks


def _build_members(c: _Compiler, s: dict[str, Any], where: str) -> list[Check]:
    named = {
        name: c.sub(sub, f"{where}/properties/{_pointer_escape(name)}")
        for name, sub in _schema_map(s.get("properties", {}), "properties", where).items()
    }
    patterns = tuple(
        (
            _regex(source, "patternProperties", where),
            c.sub(sub, f"{where}/patternProperties/{_pointer_escape(source)}"),
        )
        for source, sub in _schema_map(
            s.get("patternProperties", {}), "patternProperties", where
        ).items()
    )
    additional = None
    if "additionalProperties" in s:
        additional = c.sub(s["additionalProperties"], f"{where}/additionalProperties")
    if not patterns and (additional is None or additional is _always):
        members = tuple((name, sub) for name, sub in named.items() if sub is not _always)
        return [_properties_check(members)] if members else []
    return [_members_check(named, patterns, additional)]


def _build_dependencies(c: _Compiler, s: dict[str, Any], where: str) -> list[Check]:
    required: list[tuple[str, tuple[str, ...]]] = []
    schemas: list[tuple[str, Check]] = []
    for name, names in _schema_map(
        s.get("dependentRequired", {}), "dependentRequired", where
    ).items():
        required.append((name, _strings(names, "dependentRequired", where)))
    for name, sub in _schema_map(s.get("dependentSchemas", {}), "dependentSchemas", where).items():
        schemas.append(
            (name, c.in_place(s, sub, f"{where}/dependentSchemas/{_pointer_escape(name)}"))
        )
    # draft-07 "dependencies": an array is dependentRequired, a schema dependentSchemas.
    for name, rule in _schema_map(s.get("dependencies", {}), "dependencies", where).items():
        if isinstance(rule, list):
            required.append((name, _strings(rule, "dependencies", where)))
        else:
            schemas.append(
                (name, c.in_place(s, rule, f"{where}/dependencies/{_pointer_escape(name)}"))
            )
    checks: list[Check] = []
    if required:
        checks.append(_dependent_required_check(tuple(required)))
    if schemas:
        checks.append(_dependent_schemas_check(tuple(schemas)))
    return checks


def _build_objects(c: _Compiler, s: dict[str, Any], where: str) -> list[Check]:
    checks: list[Check] = []
    if "required" in s:
        names = _strings(s["required"], "required", where)
        if names:
            checks.append(_required_check(names))
    checks += _build_members(c, s, where)
    if "propertyNames" in s:
        sub = c.sub(s["propertyNames"], f"{where}/propertyNames")
        if sub is not _always:
            checks.append(_property_names_check(sub))
    checks += _build_dependencies(c, s, where)
    return checks


def _build_logic(c: _Compiler, s: dict[str, Any], where: str) -> list[Check]:
    checks: list[Check] = []
    if "allOf" in s:
        checks += _schema_list(c, s, "allOf", where)  # in place: simply more checks
    if "anyOf" in s:
        checks.append(_any_of_check(_schema_list(c, s, "anyOf", where)))
    if "oneOf" in s:
        checks.append(_one_of_check(_schema_list(c, s, "oneOf", where)))
    if "not" in s:
        checks.append(_not_check(c.in_place(s, s["not"], f"{where}/not")))
    if "if" in s and ("then" in s or "else" in s):
        condition = c.in_place(s, s["if"], f"{where}/if")
        then = c.in_place(s, s.get("then", True), f"{where}/then")
        otherwise = c.in_place(s, s.get("else", True), f"{where}/else")
        checks.append(_conditional_check(condition, then, otherwise))
    return checks


_BUILDERS: Final[tuple[Builder, ...]] = (
    _build_ref,
    _build_type,
    _build_values,
    _build_numbers,
    _build_sizes,
    _build_arrays,
    _build_objects,
    _build_logic,
)


# ---------------------------------------------------------------------------------------
# Public API


class Validator:
    """A compiled schema. Build with :func:`compile_schema` or :func:`validator_for`."""

    __slots__ = ("_check",)

    def __init__(self, check: Check) -> None:
        self._check = check

    def is_valid(self, instance: Any) -> bool:
        """Whether ``instance`` satisfies the schema (stops at the first failure)."""
        try:
            return self._check(instance, 0, None)
        except RecursionError:  # a schema that costs many frames per level; see MAX_DEPTH
            return False

    def errors(self, instance: Any, limit: int = 10) -> list[SchemaViolation]:
        """At most ``limit`` violations, in schema order; ``[]`` when ``instance`` is valid
        (or ``limit`` is not positive). Raises nothing for a JSON ``instance``."""
        if limit <= 0 or self.is_valid(instance):
            return []
        sink = _Sink(limit)
        try:
            self._check(instance, 0, sink)
        except _Stop:
            pass
        except RecursionError:
            return [SchemaViolation("", "depth", "instance nested too deeply")]
        # The slow path re-checks what the fast path refused; an empty answer would
        # read as "valid", so it can never be empty.
        return sink.out or [SchemaViolation("", "schema", "instance does not match")]

    def __repr__(self) -> str:
        return f"<Validator {id(self):#x}>"


def compile_schema(schema: Any) -> Validator:
    """Compile ``schema`` (a JSON value) into a :class:`Validator`. Not cached.

    Raises :class:`UnsupportedSchema` when the schema uses a refused feature, has a
    malformed keyword, a ``$ref`` that is not local or does not resolve, a ``$ref``
    cycle that never consumes instance, or is nested too deeply to compile.
    """
    try:
        return Validator(_Compiler(schema).compile())
    except RecursionError:
        raise UnsupportedSchema("schema nested too deeply to compile") from None


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compiled(canonical: bytes) -> Validator | str:
    try:
        # Compiled from the canonical text: a private copy the caller cannot mutate.
        return compile_schema(msgspec.json.decode(canonical))
    except UnsupportedSchema as exc:
        return str(exc)  # the message, not the exception: re-raising would grow its traceback


def validator_for(schema: Any) -> Validator:
    """The cached :class:`Validator` for ``schema``: equal JSON (keys in any order) gives
    the same object. At most :data:`CACHE_SIZE` schemas are kept, least recently used
    first out. The validator is compiled from that canonical JSON, so its violations
    come in sorted key order (``properties`` by name) and later changes to ``schema``
    do not reach it.

    Raises :class:`UnsupportedSchema` as :func:`compile_schema` does (the refusal is
    cached too), or when ``schema`` is not JSON.
    """
    try:
        canonical = msgspec.json.encode(schema, order="sorted")
    except RecursionError:
        raise UnsupportedSchema("schema nested too deeply to compile") from None
    except (TypeError, ValueError, msgspec.EncodeError) as exc:
        raise UnsupportedSchema("the schema is not JSON") from exc
    found = _compiled(canonical)
    if isinstance(found, str):
        raise UnsupportedSchema(found)
    return found
