"""Where a request carries its trace context: ``params._meta``, the W3C keys unprefixed.

The MCP revisions reserve ``_meta`` for the protocol, and SEP-414 names the W3C Trace
Context and Baggage keys there without the DNS prefix other keys need. Both directions
go through here: the host writes a context into the requests it sends, and reads the
one a server put on a request it makes of the host.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from .messages import params_object

__all__ = ["TRACE_KEYS", "trace_carrier", "with_trace"]

#: The keys a propagator may write (W3C Trace Context and Baggage).
TRACE_KEYS: Final = ("traceparent", "tracestate", "baggage")

# What a peer may put there, read at most: a traceparent is 55 characters, a tracestate
# at most 32 members of 256; anything longer is not a context anyone wrote honestly.
_MAX_VALUE: Final = 8192


class _Params(msgspec.Struct):
    meta: Any = msgspec.field(default=None, name="_meta")


_META: Final = msgspec.json.Decoder(_Params)


def with_trace(params: Any, carrier: Mapping[str, str]) -> Any:
    """``params`` with ``carrier``'s keys in its ``_meta`` (a copy; the caller's dict is
    untouched). A ``traceparent`` the caller wrote itself is kept, with its companions:
    a context set by hand wins over the ambient one. Absent params get an object only
    when there is something to carry; a non-object is sent as the caller wrote it."""
    if not carrier:
        return params
    obj = params_object(params)
    if obj is None:
        return params
    own = obj.get("_meta")
    if not isinstance(own, dict):
        return {**obj, "_meta": dict(carrier)}
    if "traceparent" in own:  # the caller's own context, whole: not mixed with ours
        return params
    return {**obj, "_meta": {**own, **carrier}}


def trace_carrier(params: Any) -> dict[str, str] | None:
    """The trace keys of a received request's ``params._meta``, as a propagator reads
    them; None when there are none. Values that are not short strings are dropped."""
    if isinstance(params, msgspec.Raw):
        try:
            meta = _META.decode(params).meta
        except (msgspec.DecodeError, RecursionError):
            return None
    elif isinstance(params, dict):
        meta = params.get("_meta")
    else:
        return None
    if not isinstance(meta, dict):
        return None
    carrier = {
        key: value
        for key in TRACE_KEYS
        if isinstance(value := meta.get(key), str) and len(value) <= _MAX_VALUE
    }
    return carrier or None
