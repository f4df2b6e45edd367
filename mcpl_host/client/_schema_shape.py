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

A chain of in-place references that comes back to itself never consumes instance: such a
schema is refused, as the validator before jsonschema-rs refused it. A reference this
module cannot follow (another document, a nested ``$id``, ``$dynamicRef``) counts every
schema in the document as on the chain, which only makes the depth allowed smaller.

The walk is iterative: a deeply nested schema costs no Python stack here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote

__all__ = ["Shape", "ShapeError", "shape_of"]

# Keywords whose subschemas apply to the same value (the chain) ...
_IN_PLACE_ONE: Final = ("not", "if", "then", "else")
_IN_PLACE_LIST: Final = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP: Final = ("dependentSchemas", "dependencies")
# ... to a member, an item or a name (each starts a chain of its own) ...
_DESCEND_ONE: Final = (
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "items",
)
_DESCEND_LIST: Final = ("prefixItems", "items")
_DESCEND_MAP: Final = ("properties", "patternProperties")
# ... or to nothing until referenced.
_DEFINITIONS: Final = ("$defs", "definitions")
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


def _children(node: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The node's subschemas: (applied in place, everything else)."""
    in_place: list[Any] = [node[k] for k in _IN_PLACE_ONE if k in node]
    for key in _IN_PLACE_LIST:
        value = node.get(key)
        if isinstance(value, list):
            in_place.extend(value)
    for key in _IN_PLACE_MAP:
        value = node.get(key)
        if isinstance(value, dict):
            in_place.extend(value.values())  # draft-07 name lists are skipped below
    other: list[Any] = [node[k] for k in _DESCEND_ONE if k in node]
    for key in _DESCEND_LIST:
        value = node.get(key)
        if isinstance(value, list):
            other.extend(value)
    for key in (*_DESCEND_MAP, *_DEFINITIONS):
        value = node.get(key)
        if isinstance(value, dict):
            other.extend(value.values())
    return [c for c in in_place if isinstance(c, dict)], [c for c in other if isinstance(c, dict)]


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


class _Graph:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        root_id = root.get("$id")
        self.base = root_id.partition("#")[0] if isinstance(root_id, str) else ""
        self.nodes: dict[int, dict[str, Any]] = {}
        self.edges: dict[int, list[int]] = {}
        self.anchors: dict[str, dict[str, Any]] = {}
        self.recursive = False
        self.opaque = False  # a reference this module cannot follow

    def build(self) -> None:
        pending = [self.root]
        refs: list[tuple[int, str]] = []
        while pending:
            node = pending.pop()
            key = id(node)
            if key in self.nodes:
                continue
            self.nodes[key] = node
            in_place, other = _children(node)
            self.edges[key] = [id(child) for child in in_place]
            pending.extend(in_place)
            pending.extend(other)
            anchor = node.get("$anchor")
            if isinstance(anchor, str):
                self.anchors[anchor] = node
            node_id = node.get("$id")
            if isinstance(node_id, str) and node_id.startswith("#"):  # draft-07 anchor
                self.anchors[node_id[1:]] = node
            elif isinstance(node_id, str) and node is not self.root:
                self.opaque = True  # a new base URI: its relative refs are not followed
            if any(k in node for k in _DYNAMIC):
                self.recursive = self.opaque = True
            ref = node.get("$ref")
            if isinstance(ref, str):
                self.recursive = True
                refs.append((key, ref))
            # A reference may point anywhere, even into an unknown keyword.
            if not pending and refs:
                for source, text in refs:
                    target = self._resolve(text)
                    if target is None:
                        self.opaque = True
                    else:
                        self.edges[source].append(id(target))
                        pending.append(target)
                refs = []

    def _resolve(self, ref: str) -> dict[str, Any] | None:
        base, _, fragment = ref.partition("#")
        if base and base != self.base:
            return None
        name = unquote(fragment)
        target = _follow(self.root, name) if not name or name.startswith("/") else None
        if name and not name.startswith("/"):
            target = self.anchors.get(name)
        return target if isinstance(target, dict) else None


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
    return Shape(hops=longest, work=max(work.values()), recursive=graph.recursive)
