"""Checking a tool's ``structuredContent`` against its ``outputSchema``, with jsonschema-rs.

jsonschema-rs (a maintained Rust implementation) does the validating: every required case
of the official JSON-Schema-Test-Suite for draft 2020-12 and draft 7 passes (docs/
libraries.md has the comparison that chose it). The draft comes from ``$schema``, 2020-12
without one, as MCP says. This module is the adapter, and keeps what callers rely on:

- a schema is compiled once: :func:`validator_for` caches by canonical JSON;
- nothing is ever fetched: the library would retrieve a ``$ref`` to another document over
  HTTP or from the file system, and is told not to (``offline``); such a schema is refused
  with :class:`UnsupportedSchema`, as are a malformed schema, an unknown ``$schema``, a
  loop of in-place references, and one past the size or cost bounds below;
- formats are annotations, as 2020-12 says: ``"format": "email"`` checks nothing;
- violations carry a JSON-pointer path into the instance and the failing keyword; their
  messages never show instance values (the library puts ``<value>`` in their place), only
  member names, as the path does, and pass through
  :func:`~mcpl_host.protocol.redact.log_value`, cut and escaped, as do path segments;
- the cost of one check is bounded (docs/libraries.md measures each case): a schema of at
  most :data:`MAX_SCHEMA_BYTES`, whose in-place work per value is at most
  :data:`MAX_IN_PLACE_WORK`; under a schema with references, instance nesting deeper than
  :data:`MAX_DEPTH` (less when the schema's in-place chains are long: the native stack
  is what is protected, see :mod:`._schema_shape`) is a violation, checked before the
  library recurses; a regex backtracks at most :data:`REGEX_BACKTRACK_LIMIT` steps (a
  match that would need more fails); violations are listed in full only for an instance
  of at most :data:`ALL_ERRORS_BYTES` of JSON, else the first one alone.

jsonschema-rs is imported on the first compile, not with mcpl_host.
"""

from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING, Any, Final

import msgspec

from ..protocol.redact import log_value
from ._schema_shape import Shape, ShapeError, shape_of

if TYPE_CHECKING:
    import jsonschema_rs

__all__ = [
    "ALL_ERRORS_BYTES",
    "CACHE_SIZE",
    "MAX_DEPTH",
    "MAX_IN_PLACE_WORK",
    "MAX_SCHEMA_BYTES",
    "REGEX_BACKTRACK_LIMIT",
    "SchemaViolation",
    "UnsupportedSchema",
    "Validator",
    "compile_schema",
    "validator_for",
]

CACHE_SIZE: Final = 256
MAX_SCHEMA_BYTES: Final = 256 * 1024
MAX_IN_PLACE_WORK: Final = 10_000
MAX_DEPTH: Final = 200
REGEX_BACKTRACK_LIMIT: Final = 100_000
ALL_ERRORS_BYTES: Final = 16 * 1024
# Native frames one check may stack, counted as (in-place chain) x (instance depth).
# Measured with jsonschema-rs 0.60 on an 8 MiB stack: listing violations overflowed at
# about 50,000 and passed at 20,000; is_valid passed at 100,000 (docs/libraries.md).
_FRAME_BUDGET: Final = 10_000
# Peer text in a message or a path segment is cut here.
_SHOWN: Final = 64
_MESSAGE: Final = 160
_MASK: Final = "<value>"
_REFERENCES: Final = (b'"$ref"', b'"$dynamicRef"', b'"$recursiveRef"')


class SchemaViolation(msgspec.Struct, frozen=True, gc=False):
    """One way an instance fails its schema.

    ``path`` is a JSON pointer into the instance (``""`` is the root), its segments passed
    through ``log_value``; ``keyword`` is the keyword that failed, as jsonschema-rs names
    it (``type``, ``required``, ``falseSchema``...); ``message`` says how, without the
    instance's values.
    """

    path: str
    keyword: str
    message: str


class UnsupportedSchema(Exception):
    """The schema cannot be checked here: malformed, remote, looping or too costly.

    ``malformed`` tells the two kinds apart: True when the schema itself is not a JSON
    Schema (not JSON, not an object or a boolean, failing its metaschema); False when it
    may well be one that this module will not check (a reference to another document,
    an unknown ``$schema``, a loop, past a size or cost bound)."""

    def __init__(self, message: str, *, malformed: bool = False) -> None:
        super().__init__(message)
        self.malformed = malformed


@functools.cache
def _library() -> Any:
    # Imported on the first compile: a connection whose tools declare no outputSchema
    # never pays for it (docs/libraries.md has the import time).
    import jsonschema_rs  # noqa: PLC0415

    return jsonschema_rs


def _segment(part: str | int) -> str:
    if type(part) is int:
        return str(part)
    return log_value(str(part).replace("~", "~0").replace("/", "~1"), _SHOWN)


def _explained(error: jsonschema_rs.ValidationError, library: Any) -> list[Any]:
    """An ``anyOf``/``oneOf`` failure where every alternative but one fails by its type
    alone is that alternative's failure: ``{"anyOf": [{"$ref": "#/$defs/Address"},
    {"type": "null"}]}`` reports the address's missing member, not "no alternative"."""
    kinds = library.ValidationErrorKind
    if not isinstance(error.kind, kinds.AnyOf | kinds.OneOfNotValid):
        return [error]
    telling = [
        alternative
        for alternative in error.kind.context
        if not (
            len(alternative) == 1
            and alternative[0].kind.name == "type"
            and alternative[0].instance_path == error.instance_path
        )
    ]
    if len(telling) != 1 or not telling[0]:
        return [error]
    return [found for inner in telling[0] for found in _explained(inner, library)]


_MEMBERS_REFUSED: Final = {
    "additionalProperties": "Additional properties are not allowed",
    "unevaluatedProperties": "Unevaluated properties are not allowed",
}


def _violations(error: jsonschema_rs.ValidationError, limit: int) -> list[SchemaViolation]:
    path = "".join(["/" + _segment(part) for part in error.instance_path])
    keyword = error.kind.name
    unexpected = getattr(error.kind, "unexpected", None)
    if keyword in _MEMBERS_REFUSED and unexpected:
        # The library reports the object once, naming the members; each member's own
        # path says more (and is what the validator before it reported).
        said = _MEMBERS_REFUSED[keyword]
        return [
            SchemaViolation(
                f"{path}/{_segment(name)}",
                keyword,
                f"{said} ('{log_value(name, _SHOWN)}' was unexpected)",
            )
            for name in unexpected[:limit]
        ]
    return [SchemaViolation(path, keyword, log_value(error.message, _MESSAGE))]


def _too_deep(levels: int) -> SchemaViolation:
    return SchemaViolation(
        "", "depth", f"instance nested too deeply for this schema (more than {levels} levels)"
    )


@functools.lru_cache(maxsize=32)
def _depth_guard(levels: int) -> Any:
    """A validator that takes a value nested at most ``levels`` deep. It has references
    but no recursion, so the library evaluates it in ``levels`` steps."""
    scalar: dict[str, Any] = {"type": ["null", "boolean", "number", "string"]}
    defs: dict[str, Any] = {"d0": scalar}
    for level in range(1, levels + 1):
        below = {"$ref": f"#/$defs/d{level - 1}"}
        defs[f"d{level}"] = {"items": below, "additionalProperties": below}
    return _library().validator_for({"$defs": defs, "$ref": f"#/$defs/d{levels}"}, offline=True)


class Validator:
    """A compiled schema. Build with :func:`compile_schema` or :func:`validator_for`."""

    __slots__ = ("_check", "_depth", "_guard")

    def __init__(self, check: Any, depth: int | None) -> None:
        self._check = check
        self._depth = depth
        self._guard = None if depth is None else _depth_guard(depth)

    def is_valid(self, instance: Any) -> bool:
        """Whether ``instance`` satisfies the schema (stops at the first failure)."""
        if self._guard is not None and not self._guard.is_valid(instance):
            return False
        try:
            return bool(self._check.is_valid(instance))
        except ValueError:  # a value the library cannot take (too deep to convert)
            return False

    def errors(self, instance: Any, limit: int = 10) -> list[SchemaViolation]:
        """At most ``limit`` violations; ``[]`` when ``instance`` is valid (or ``limit``
        is not positive). Raises nothing for a JSON ``instance``."""
        if limit <= 0 or self.is_valid(instance):
            return []
        if self._guard is not None and not self._guard.is_valid(instance):
            return [_too_deep(self._depth or 0)]
        errors_type = _library().ValidationError
        try:
            if _small(instance):
                found = list(itertools.islice(self._check.iter_errors(instance), limit))
            else:
                # The library lists every violation before returning the first; a big
                # instance could hold millions. validate() stops at the first.
                self._check.validate(instance)
                found = []
        except errors_type as error:
            found = [error]
        except ValueError:  # the failing value is too deep to convert back to Python
            return [_too_deep(MAX_DEPTH)]
        # The listing re-checks what is_valid refused; an empty answer would read as
        # "valid", so it can never be empty.
        explained = [e for error in found for e in _explained(error, _library())]
        listed = [v for error in explained for v in _violations(error, limit)][:limit]
        return listed or [SchemaViolation("", "schema", "instance does not match")]

    def __repr__(self) -> str:
        return f"<Validator {id(self):#x}>"


def _small(instance: Any) -> bool:
    try:
        return len(msgspec.json.encode(instance)) <= ALL_ERRORS_BYTES
    except (RecursionError, TypeError, ValueError, msgspec.EncodeError):
        return False


def _canonical(schema: Any) -> bytes:
    try:
        canonical = msgspec.json.encode(schema, order="sorted")
    except RecursionError:
        raise UnsupportedSchema("schema nested too deeply to compile") from None
    except (TypeError, ValueError, msgspec.EncodeError) as exc:
        raise UnsupportedSchema("the schema is not JSON", malformed=True) from exc
    # Refused before any cache sees it: an oversized schema must not become a cache key.
    if len(canonical) > MAX_SCHEMA_BYTES:
        raise UnsupportedSchema(f"schema larger than {MAX_SCHEMA_BYTES} bytes")
    return canonical


def _refusal(library: Any, error: jsonschema_rs.ValidationError) -> str:
    """Why the library would not compile a schema, without the masked "<value>"."""
    if isinstance(error.kind, library.ValidationErrorKind.Referencing):
        # "Resource '<uri>' is not present in a registry and retrieving it failed: ...",
        # or "Unknown meta-schema: '<uri>'. ...": the same refusal, a URI never fetched.
        quoted = error.message.split("'")
        uri = quoted[1] if len(quoted) > 2 else error.message
        return f"$ref or $schema to another document, never fetched: {log_value(uri, _SHOWN)}"
    where = "".join(["/" + _segment(part) for part in error.instance_path]) or "/"
    return f"malformed schema at {where}: fails the metaschema's '{error.kind.name}'"


def _compile(canonical: bytes) -> Validator:
    try:
        schema = msgspec.json.decode(canonical)
    except RecursionError:
        raise UnsupportedSchema("schema nested too deeply to compile") from None
    if not isinstance(schema, dict | bool):
        raise UnsupportedSchema("the schema is not an object or a boolean", malformed=True)
    # Without a reference there is no recursion and no shared subschema: the library's
    # nesting limit bounds the stack and the schema's size the work, so the walk (the
    # larger part of compiling) is skipped.
    shape = Shape(hops=1, work=1, recursive=False)
    if any(keyword in canonical for keyword in _REFERENCES):
        try:
            shape = shape_of(schema)
        except ShapeError as exc:
            raise UnsupportedSchema(str(exc)) from None
    if shape.work > MAX_IN_PLACE_WORK:
        raise UnsupportedSchema(
            f"schema too costly: more than {MAX_IN_PLACE_WORK} in-place checks per value"
        )
    library = _library()
    try:
        check = library.validator_for(
            canonical.decode(),
            offline=True,
            validate_formats=False,
            mask=_MASK,
            pattern_options=library.FancyRegexOptions(backtrack_limit=REGEX_BACKTRACK_LIMIT),
        )
    except library.ValidationError as exc:
        # Not malformed: a $ref the library will not fetch, and a "format" the metaschema
        # asks of a keyword (a "pattern" this regex engine cannot read, though ECMA-262
        # can): format is an annotation in 2020-12, and the dialects differ.
        unchecked = (library.ValidationErrorKind.Referencing, library.ValidationErrorKind.Format)
        malformed = not isinstance(exc.kind, unchecked)
        raise UnsupportedSchema(_refusal(library, exc), malformed=malformed) from None
    except (ValueError, library.ReferencingError) as exc:  # e.g. "Recursion limit reached"
        raise UnsupportedSchema(log_value(str(exc).partition("\n")[0], _MESSAGE)) from None
    if not shape.followed:
        # The library resolved a reference the bound cannot see through (the others were
        # refused above), so the work and stack it would cost are not known.
        raise UnsupportedSchema("a $ref the cost bound cannot follow")
    depth = None
    if shape.recursive:
        depth = max(1, min(MAX_DEPTH, _FRAME_BUDGET // (shape.hops + 1)))
    return Validator(check, depth)


def compile_schema(schema: Any) -> Validator:
    """Compile ``schema`` (a JSON value) into a :class:`Validator`. Not cached.

    Raises :class:`UnsupportedSchema` when the schema is not JSON, is malformed, has a
    ``$ref`` to another document or an unknown ``$schema``, loops in place, or is past
    the size or cost bounds.
    """
    return _compile(_canonical(schema))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compiled(canonical: bytes) -> Validator | tuple[str, bool]:
    try:
        return _compile(canonical)
    except UnsupportedSchema as exc:
        # The facts, not the exception: re-raising one would grow its traceback.
        return str(exc), exc.malformed


def validator_for(schema: Any) -> Validator:
    """The cached :class:`Validator` for ``schema``: equal JSON (keys in any order) gives
    the same object. At most :data:`CACHE_SIZE` schemas are kept, least recently used
    first out. It is compiled from that canonical JSON, so later changes to ``schema``
    do not reach it.

    Raises :class:`UnsupportedSchema` as :func:`compile_schema` does (the refusal is
    cached too).
    """
    found = _compiled(_canonical(schema))
    if isinstance(found, tuple):
        message, malformed = found
        raise UnsupportedSchema(message, malformed=malformed)
    return found
