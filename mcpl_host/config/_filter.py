"""Which of a server's tools, resources and prompts the manager's catalogue shows: the
``includeTools`` / ``excludeTools`` keys (Gemini CLI's names), ``includeResources`` /
``excludeResources`` and ``includePrompts`` / ``excludePrompts`` of a server entry."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Final, Literal, TypeAlias

from ..protocol.errors import ConfigurationError
from ._uri import normalised_uri

__all__ = ["ADMITS_ALL", "FILTER_KEYS", "CatalogueFilter", "FilterKind", "parse_filter"]

FilterKind: TypeAlias = Literal["tools", "resources", "resource_templates", "prompts"]

# The config key of each field.
FILTER_KEYS: Final = {
    "includeTools": "include_tools",
    "excludeTools": "exclude_tools",
    "includeResources": "include_resources",
    "excludeResources": "exclude_resources",
    "includePrompts": "include_prompts",
    "excludePrompts": "exclude_prompts",
}


def _patterns(value: Iterable[str] | None, name: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(p, str) for p in value):
        # A bare string would be taken letter by letter.
        raise TypeError(f"CatalogueFilter.{name} must be a list of strings")
    return tuple(value)


@dataclass(frozen=True, slots=True)
class CatalogueFilter:
    """Glob patterns (:func:`fnmatch.fnmatchcase`: ``*``, ``?``, ``[...]``, case
    sensitive; ``*`` also matches ``/``) on each item's own key: a tool's or prompt's
    name, a resource's URI or a template's ``uriTemplate`` (the resource patterns serve
    both). An item is shown when it matches no exclude pattern and, when there is an
    include list, one of its patterns: exclude wins; no include list (None) means all,
    an empty one none. Lists given are kept as tuples (the filter is hashable).

    Raises ``TypeError`` for a field that is not a list (or tuple) of strings.
    """

    include_tools: Sequence[str] | None = None
    exclude_tools: Sequence[str] = ()
    include_resources: Sequence[str] | None = None
    exclude_resources: Sequence[str] = ()
    include_prompts: Sequence[str] | None = None
    exclude_prompts: Sequence[str] = ()

    def __post_init__(self) -> None:
        for name in ("include_tools", "include_resources", "include_prompts"):
            object.__setattr__(self, name, _patterns(getattr(self, name), name))
        for name in ("exclude_tools", "exclude_resources", "exclude_prompts"):
            object.__setattr__(self, name, _patterns(getattr(self, name), name) or ())

    def admits(self, kind: FilterKind, key: str) -> bool:
        """Whether the item of ``kind`` with own key ``key`` is shown.

        A resource URI (kind ``resources``), when there are resource patterns, must be
        admitted both as written and in its normalised spelling (:func:`normalised_uri`:
        ``FILE:///etc/passwd`` is ``file:///etc/passwd``, ``file:///pub/../etc`` is
        ``file:///etc``), and one that cannot be normalised is not: another spelling
        of an excluded URI is excluded, and so is the spelling an exclude pattern
        itself names."""
        if kind == "tools":
            include, exclude = self.include_tools, self.exclude_tools
        elif kind == "prompts":
            include, exclude = self.include_prompts, self.exclude_prompts
        else:
            include, exclude = self.include_resources, self.exclude_resources
        if include is None and not exclude:
            return True
        spellings = [key]
        if kind == "resources":
            normal = normalised_uri(key)
            if normal is None:
                return False
            spellings.append(normal)
        return all(
            not any(fnmatchcase(spelling, pattern) for pattern in exclude)
            and (include is None or any(fnmatchcase(spelling, pattern) for pattern in include))
            for spelling in spellings
        )

    @property
    def admits_all(self) -> bool:
        """True when nothing is filtered out (no pattern at all)."""
        return self == ADMITS_ALL


ADMITS_ALL: Final = CatalogueFilter()


def parse_filter(entry: dict[str, Any], where: str) -> CatalogueFilter:
    """The filter of a server entry's keys. Raises ConfigurationError naming the key
    when one is not an array of strings."""
    fields: dict[str, Any] = {}
    for key, name in FILTER_KEYS.items():
        if key not in entry:
            continue
        value = entry[key]
        if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
            raise ConfigurationError(f"{where}.{key} must be an array of strings")
        fields[name] = tuple(value)
    return CatalogueFilter(**fields) if fields else ADMITS_ALL
