"""Capability paths: the advertised tree, grant patterns, and the effective grant.

A capability is a dotted path (``channels.register``). Each side advertises a tree under
``capabilities.experimental.mcpl`` in which ``true`` on a node means every leaf beneath
it (MCPL §5.1). The host's configuration grants paths by pattern, and the effective grant
is what the configuration grants *and* the server advertised: every path not in it is
denied (§5.4).

Rules, including those the spec leaves open:

- :func:`expand` walks any depth (§5.4 forbids a fixed set of nestable keys), up to
  :data:`MAX_TREE_DEPTH` levels; deeper members are ignored, so a hostile tree costs
  bounded work and never raises.
- ``true`` on a node gives every known path at or below it; on a node with no known path
  below, the node itself, as given (a capability this host does not know yet).
- An object on a node that is itself a path (``"inferenceRequest": {"streaming": true}``)
  advertises that path too, as §5.1's example reads; an object on any other node
  advertises only what is inside it.
- ``false``, ``null``, numbers, strings and arrays advertise nothing and raise nothing.
- Top-level ``version``, ``revision`` and ``featureSets`` are not paths. ``tools`` is
  ignored inside the MCPL tree: it comes only from MCP's own ``capabilities.tools``.
- A member whose name contains ``*`` is ignored: an advertisement names paths, and a
  literal ``*`` put on the wire in ``effectiveCapabilities`` would read as a pattern.
- In a pattern, ``*`` is a whole segment matching exactly one segment; segment counts
  must be equal, so a bare parent (``channels``) grants none of its leaves (§5.4).
- Paths in :data:`EXPLICIT_ONLY_PATHS` are granted only by a pattern that names them
  exactly, never through ``*``: RFC-007 §4.1 requires an operator decision naming
  ``toolLifecycle.*`` paths, and ``hostCommand`` is the host's own switch.
- ``hostCommand`` (:data:`HOST_LOCAL_PATHS`) gates the server's ``host/command``. No
  server advertises it and it is never sent to the server: the configuration alone
  grants it, and like every path it is in force only once a receipt has arrived.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from mcpl_host.protocol.errors import ConfigurationError

__all__ = [
    "ADVERTISED_PATHS",
    "EXPLICIT_ONLY_PATHS",
    "HOST_LOCAL_PATHS",
    "HOST_SUPPORTED",
    "KNOWN_PATHS",
    "MAX_TREE_DEPTH",
    "MCPL_VERSION",
    "advertised_paths",
    "denied",
    "effective",
    "expand",
    "host_advertisement",
    "matches",
]

MCPL_VERSION: Final = "0.5"

ADVERTISED_PATHS: Final = frozenset(
    {
        # MCPL §6.2
        "pushEvents",
        "tools",
        "modelInfo",
        "inferenceRequest",
        "inferenceRequest.streaming",
        "inferenceLifecycle",
        "contextHooks.beforeInference.observe",
        "contextHooks.beforeInference.inject.system",
        "contextHooks.beforeInference.inject.beforeUser",
        "contextHooks.beforeInference.inject.afterUser",
        "channels.register",
        "channels.lifecycle",
        "channels.publish",
        "channels.incoming",
        "channels.streaming",
        "channels.acknowledge",
        "channels.typing",
        # RFC-007
        "toolLifecycle.observe",
        "toolLifecycle.inputs",
    }
)
"""The capability vocabulary a server can advertise (MCPL §6.2 and RFC-007 §4.1)."""

HOST_LOCAL_PATHS: Final = frozenset({"hostCommand"})
"""Paths only the host's configuration grants; never advertised, never on the wire."""

KNOWN_PATHS: Final = ADVERTISED_PATHS | HOST_LOCAL_PATHS

EXPLICIT_ONLY_PATHS: Final = frozenset(
    {"toolLifecycle.observe", "toolLifecycle.inputs", "hostCommand"}
)
"""Paths no wildcard grants: the configuration must name each one exactly."""

HOST_SUPPORTED: Final = frozenset(
    {
        "pushEvents",
        "modelInfo",
        "inferenceRequest",
        "inferenceRequest.streaming",
        "channels.register",
        "channels.lifecycle",
        "channels.publish",
        "channels.incoming",
        "channels.streaming",
        "channels.acknowledge",
        "channels.typing",
        "toolLifecycle.observe",
    }
)
"""What this host implements, and so advertises by default."""

MAX_TREE_DEPTH: Final = 8
"""Levels of an advertised tree that are read; the vocabulary is 4 deep today."""

# Members of the MCPL object that are not capability paths. ``tools`` is a path, but the
# MCPL object is not where it comes from (MCP's ``capabilities.tools`` is).
_NOT_PATHS: Final = frozenset({"version", "revision", "featureSets", "tools"})


def _known_at_or_below(path: str) -> frozenset[str]:
    prefix = path + "."
    return frozenset(p for p in ADVERTISED_PATHS if p == path or p.startswith(prefix))


def expand(tree: object, *, mcp_tools: bool = False) -> frozenset[str]:
    """The leaf paths a server's ``experimental.mcpl`` object advertises.

    ``mcp_tools`` adds ``tools`` (the server has MCP's ``capabilities.tools``). Never
    raises: a member of the wrong type advertises nothing.
    """
    paths: set[str] = {"tools"} if mcp_tools else set()
    if not isinstance(tree, Mapping):
        return frozenset(paths)
    # An explicit stack rather than recursion: a deeply nested tree cannot exhaust it.
    stack: list[tuple[str, Mapping[Any, Any], int]] = [("", tree, 1)]
    while stack:
        prefix, node, depth = stack.pop()
        for key, value in node.items():
            if not isinstance(key, str) or not key or "*" in key:
                continue
            if not prefix and key in _NOT_PATHS:
                continue
            path = prefix + key
            if value is True:
                paths |= _known_at_or_below(path) or {path}
            elif isinstance(value, Mapping):
                if path in ADVERTISED_PATHS:
                    paths.add(path)
                if depth < MAX_TREE_DEPTH:
                    stack.append((path + ".", value, depth + 1))
    return frozenset(paths)


def advertised_paths(capabilities: object) -> frozenset[str] | None:
    """The paths a server advertised in ``initialize``'s ``capabilities``, or None when
    the server is not an MCPL peer (no ``experimental.mcpl`` object).

    ``tools`` is included when MCP's ``capabilities.tools`` is an object.
    """
    if not isinstance(capabilities, Mapping):
        return None
    experimental = capabilities.get("experimental")
    if not isinstance(experimental, Mapping):
        return None
    tree = experimental.get("mcpl")
    if not isinstance(tree, Mapping):
        return None
    return expand(tree, mcp_tools=isinstance(capabilities.get("tools"), Mapping))


def matches(pattern: str, path: str) -> bool:
    """Whether a grant pattern covers ``path``.

    ``*`` matches exactly one whole segment; every other segment matches itself; the
    segment counts must be equal. ``channels.*`` covers ``channels.publish`` but neither
    ``channels`` nor ``channels.publish.x``; ``channels`` covers only ``channels``.
    """
    want = pattern.split(".")
    have = path.split(".")
    if len(want) != len(have):
        return False
    return all(w in ("*", h) for w, h in zip(want, have, strict=True))


def _grants(patterns: tuple[str, ...], path: str) -> bool:
    if path in EXPLICIT_ONLY_PATHS:
        return path in patterns
    return any(matches(p, path) for p in patterns)


def effective(grants: Iterable[str], advertised: frozenset[str]) -> frozenset[str]:
    """The effective grant: advertised paths the configured patterns grant, plus the
    host-local paths the configuration names. Everything else is denied.

    Raises :class:`ConfigurationError` when ``grants`` is a string or holds a non-string
    (a configuration mistake, not something to guess about).
    """
    patterns = _patterns(grants)
    chosen = {p for p in advertised if _grants(patterns, p)}
    chosen |= {p for p in HOST_LOCAL_PATHS if p in patterns}
    return frozenset(chosen)


def denied(advertised: frozenset[str], granted: frozenset[str]) -> frozenset[str]:
    """What the server advertised and is not granted: ``deniedCapabilities``, which is
    diagnostic only and never takes part in a decision."""
    return advertised - granted - HOST_LOCAL_PATHS


def _patterns(grants: Iterable[str]) -> tuple[str, ...]:
    if isinstance(grants, str):
        raise ConfigurationError("capability grants must be a list of patterns, not a string")
    patterns = tuple(grants)
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise ConfigurationError(
                f"a capability grant pattern must be a string, not {type(pattern).__name__}"
            )
    return patterns


def host_advertisement(supported: Iterable[str] = HOST_SUPPORTED) -> dict[str, Any]:
    """The host's ``capabilities.experimental.mcpl`` object for ``initialize``.

    ``supported`` names the paths the host implements (default :data:`HOST_SUPPORTED`).
    Each is written out as an explicit leaf; a path that has known paths below it that
    are not supported is written as an object with those set to ``false``, since ``true``
    would claim them too.

    Raises :class:`ConfigurationError` for a path outside the vocabulary, for ``tools``
    (MCP's ``capabilities.tools`` says that), for a host-local path, or for a path whose
    parent path is missing (``inferenceRequest.streaming`` without ``inferenceRequest``).
    """
    paths = frozenset(_patterns(supported))
    for path in sorted(paths):
        if path not in ADVERTISED_PATHS or path == "tools":
            raise ConfigurationError(f"the host cannot advertise {path!r}: not an MCPL path")
        parts = path.split(".")
        for cut in range(1, len(parts)):
            parent = ".".join(parts[:cut])
            if parent in ADVERTISED_PATHS and parent not in paths:
                raise ConfigurationError(f"{path!r} is advertised without {parent!r}")
    tree: dict[str, Any] = {"version": MCPL_VERSION}
    for path in sorted(paths):
        _put(tree, path, True)
    for path in sorted(paths):
        if _get(tree, path) is True:
            for below in sorted(_known_at_or_below(path) - paths):
                _put(tree, below, False)
    return tree


def _get(tree: dict[str, Any], path: str) -> Any:
    node: Any = tree
    for part in path.split("."):
        node = node[part]
    return node


def _put(tree: dict[str, Any], path: str, value: bool) -> None:
    *parents, last = path.split(".")
    node = tree
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            # An object on a path node advertises the node too, so ``True`` may become {}.
            child = node[part] = {}
        node = child
    node.setdefault(last, value)
