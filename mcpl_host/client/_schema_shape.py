"""How much stack and work one instance value can cost under a schema, read from its shape.

jsonschema-rs evaluates recursively in native code: a stack overflow there kills the
process, with no exception to catch. Its own recursion limit covers the nesting of the
schema text, not recursion through ``$ref``, where the frames per instance level are the
longest chain of *in-place* applicators (``allOf``, ``anyOf``, ``oneOf``, ``not``,
``if``/``then``/``else``, ``dependentSchemas``, ``$ref``) that one value passes through
before a keyword descends into a member or an item. This module measures, once per schema:

- ``hops``: the longest such chain (schemas on it);
- ``work``: how many schemas one value meets in place when every branch is followed, the
  cost of ``allOf`` over ``$ref`` pairs that doubles at each step;
- ``recursive``: whether the schema has a reference at all (without one, the depth of
  evaluation is bounded by the schema's own nesting, which jsonschema-rs limits).

References resolve as the library resolves them: against the base URI each ``$id``
sets, to a JSON pointer or an ``$anchor``; ``$dynamicRef`` and ``$recursiveRef`` count as
edges to every schema with the matching dynamic anchor (they may land on any), and a
``$ref`` to a metaschema the library holds as a leaf. A chain of in-place references that
comes back to itself never consumes instance: such a schema is refused, as the validator
before jsonschema-rs refused it. A reference this module cannot follow (another document,
which the library refuses anyway offline) leaves ``followed`` false: the caller refuses
what the library would otherwise accept.

The walk is iterative: a deeply nested schema costs no Python stack here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote, urljoin

__all__ = ["Shape", "ShapeError", "shape_of"]

# Keywords holding subschemas, by what they apply to and how they hold them: the same
# value (the chain), or a member, an item, a name, or nothing until referenced.
_IN_PLACE, _ELSEWHERE = True, False
_ONE, _LIST, _MAP = 0, 1, 2
_KEYWORDS: Final[dict[str, tuple[bool, int]]] = {
    **dict.fromkeys(("not", "if", "then", "else"), (_IN_PLACE, _ONE)),
    **dict.fromkeys(("allOf", "anyOf", "oneOf"), (_IN_PLACE, _LIST)),
    # draft-07 "dependencies" also holds name lists: only its schemas are kept.
    **dict.fromkeys(("dependentSchemas", "dependencies"), (_IN_PLACE, _MAP)),
    **dict.fromkeys(
        (
            "additionalProperties",
            "unevaluatedProperties",
            "propertyNames",
            "additionalItems",
            "unevaluatedItems",
            "contains",
            "items",  # a list too, in draft 7
        ),
        (_ELSEWHERE, _ONE),
    ),
    "prefixItems": (_ELSEWHERE, _LIST),
    **dict.fromkeys(
        ("properties", "patternProperties", "$defs", "definitions"), (_ELSEWHERE, _MAP)
    ),
}
_DYNAMIC: Final = ("$dynamicRef", "$recursiveRef")

# Past this, work is "too much" whatever its exact value: the count saturates here.
WORK_CAP: Final = 1 << 40


class ShapeError(Exception):
    """The schema loops in place: evaluation would never consume the instance."""


@dataclass(frozen=True, slots=True)
class Shape:
    hops: int
    work: int
    recursive: bool
    followed: bool = True  # every reference was followed (else hops and work may be low)


def _children(node: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The node's subschemas: (applied in place, everything else)."""
    in_place: list[Any] = []
    other: list[Any] = []
    for key, value in node.items():
        found = _KEYWORDS.get(key)
        if found is None:
            continue
        same_value, holds = found
        into = in_place if same_value else other
        if isinstance(value, dict):
            if holds == _ONE:
                into.append(value)
            elif holds == _MAP:
                into.extend(v for v in value.values() if isinstance(v, dict))
        elif isinstance(value, list) and (holds == _LIST or key == "items"):
            into.extend(v for v in value if isinstance(v, dict))
    return in_place, other


def _follow(root: Any, pointer: str) -> Any:
    """The value at a JSON pointer (already percent-decoded), or None."""
    node = root
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


# The metaschemas and vocabularies jsonschema-rs holds (a schema may $ref them).
_METASCHEMAS: Final = ("https://json-schema.org/draft/", "http://json-schema.org/draft-0")
# A base for a document without its own $id, so that relative references still join.
_DEFAULT_BASE: Final = "https://mcpl-host.invalid/schema.json"


def _join(base: str, ref: str) -> str:
    """``ref`` made absolute against ``base``, fragment kept (urljoin drops the base of a
    bare fragment when the base is a URN)."""
    if ref.startswith("#"):
        return base.partition("#")[0] + ref
    return urljoin(base, ref)


class _Graph:
    """The schema's subschemas as nodes, its in-place applicators and references as edges.

    References resolve as the specification says, with each subschema's ``$id`` changing
    the base URI below it: to a JSON pointer within a resource, or to an ``$anchor`` (a
    ``$dynamicAnchor`` is one too). ``$dynamicRef`` and ``$recursiveRef`` may land on any
    schema that declares the matching dynamic anchor, so they get an edge to each.
    """

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.nodes: dict[int, dict[str, Any]] = {}
        self.edges: dict[int, list[int]] = {}
        self.resources: dict[str, dict[str, Any]] = {}
        self.anchors: dict[str, dict[str, Any]] = {}  # absolute URI with #name
        self.dynamic: dict[str, list[dict[str, Any]]] = {}  # anchor name -> schemas
        self.recursive_anchors: list[dict[str, Any]] = []
        self.recursive = False
        self.opaque = False  # a reference this module cannot follow

    def build(self) -> None:
        pending: list[tuple[dict[str, Any], str]] = [(self.root, _DEFAULT_BASE)]
        refs: list[tuple[int, str, str]] = []
        bases: dict[int, str] = {}
        while pending or refs:
            if not pending:
                # Every schema reachable by keywords is known: resolve what was seen so
                # far (a reference may point anywhere, even into an unknown keyword).
                for source, base, keyword in refs:
                    for target, target_base in self._targets(keyword, base, self.nodes[source]):
                        self.edges[source].append(id(target))
                        if id(target) not in self.nodes:
                            pending.append((target, target_base))
                refs = []
                continue
            node, base = pending.pop()
            key = id(node)
            if key in self.nodes:
                continue
            base = self._register(node, base)
            bases[key] = base
            self.nodes[key] = node
            in_place, other = _children(node)
            self.edges[key] = [id(child) for child in in_place]
            pending.extend((child, base) for child in (*in_place, *other))
            for keyword in ("$ref", *_DYNAMIC):
                if keyword in node:
                    self.recursive = True
                    refs.append((key, base, keyword))

    def _register(self, node: dict[str, Any], base: str) -> str:
        """Record the node's identifiers; return the base URI in force below it."""
        node_id = node.get("$id")
        if isinstance(node_id, str):
            if node_id.startswith("#"):  # draft-07: a plain-name anchor
                self.anchors[_join(base, node_id)] = node
            else:
                base = _join(base, node_id).partition("#")[0]
                self.resources[base] = node
        elif node is self.root:
            self.resources[base] = node
        for keyword in ("$anchor", "$dynamicAnchor"):
            name = node.get(keyword)
            if isinstance(name, str):
                self.anchors[f"{base}#{name}"] = node
        dynamic = node.get("$dynamicAnchor")
        if isinstance(dynamic, str):
            self.dynamic.setdefault(dynamic, []).append(node)
        if node.get("$recursiveAnchor") is True:
            self.recursive_anchors.append(node)
        return base

    def _targets(
        self, keyword: str, base: str, node: dict[str, Any]
    ) -> list[tuple[dict[str, Any], str]]:
        """Where a reference can lead, each with the base URI in force there."""
        ref = node[keyword]
        if not isinstance(ref, str):
            return []
        absolute = _join(base, ref)
        if absolute.startswith(_METASCHEMAS):
            return []  # built into the library: known, fixed work, no cycle through us
        static, static_base = self._resolve(absolute)
        found = [(static, static_base)] if isinstance(static, dict) else []
        if static is None:
            self.opaque = True
        dynamic: list[dict[str, Any]] = []
        if keyword == "$dynamicRef":
            dynamic = self.dynamic.get(ref.partition("#")[2], [])
        elif keyword == "$recursiveRef":
            dynamic = self.recursive_anchors
        return found + [(target, base) for target in dynamic]  # all walked: base known

    def _resolve(self, uri: str) -> tuple[dict[str, Any] | bool | None, str]:
        """The schema at an absolute URI (None when it is not in this document) and the
        base URI in force there."""
        resource_uri, _, fragment = uri.partition("#")
        if uri in self.anchors:
            return self.anchors[uri], resource_uri
        resource = self.resources.get(resource_uri)
        name = unquote(fragment)
        if resource is None or (name and not name.startswith("/")):
            return None, resource_uri  # another document, or an anchor not known
        target = _follow(resource, name)
        return (target if isinstance(target, dict | bool) else None), resource_uri


def shape_of(schema: Any) -> Shape:
    """Measure ``schema`` (a JSON value). Raises :class:`ShapeError` for an in-place loop."""
    if not isinstance(schema, dict):
        return Shape(hops=1, work=1, recursive=False)
    graph = _Graph(schema)
    graph.build()
    # Longest chain and unrolled size of the in-place graph, by depth-first search in
    # post-order (iterative); a node met again while still open is a loop.
    hops: dict[int, int] = {}
    work: dict[int, int] = {}
    open_: set[int] = set()
    for start in graph.nodes:
        if start in hops:
            continue
        stack = [(start, iter(graph.edges[start]))]
        open_.add(start)
        while stack:
            node, edges = stack[-1]
            nxt = next(edges, None)
            if nxt is None:
                stack.pop()
                open_.discard(node)
                successors = graph.edges[node]
                hops[node] = 1 + max((hops[s] for s in successors), default=0)
                work[node] = min(WORK_CAP, 1 + sum(work[s] for s in successors))
            elif nxt in open_:
                raise ShapeError("a $ref cycle never consumes the instance")
            elif nxt not in hops:
                open_.add(nxt)
                stack.append((nxt, iter(graph.edges[nxt])))
    longest = len(graph.nodes) if graph.opaque else max(hops.values())
    return Shape(
        hops=longest,
        work=max(work.values()),
        recursive=graph.recursive,
        followed=not graph.opaque,
    )
