"""What the host tells a server it can do, per revision (the ``capabilities`` of
``initialize``).

A capability is advertised only for a hook the embedder gave, and only in the shape the
offered revision defines: a server reads an advertised capability as a promise, so the
host never promises a request it would refuse.
"""

from __future__ import annotations

from typing import Any

from .profiles import Profile
from .tasks import EXTENSION as TASKS_EXTENSION

__all__ = ["client_capabilities"]


def client_capabilities(
    offered: Profile,
    *,
    roots: bool = False,
    sampling: bool = False,
    elicitation: bool = False,
    url_elicitation: bool = False,
) -> dict[str, Any]:
    """The ``capabilities`` object for ``initialize`` offering ``offered``'s revision (on
    the stateless revision: the ``clientCapabilities`` every request names).

    ``roots``: the host answers ``roots/list`` and sends
    ``notifications/roots/list_changed`` when its roots change. ``url_elicitation``: the
    elicitation hook also handles URL mode (only said on revisions that define it).
    """
    capabilities: dict[str, Any] = {}
    # On the stateless revision the server asks through results (MRTR), and the host
    # never tells it that roots changed: it asks again when it needs them.
    requests = offered.server_requests | offered.input_requests
    if roots and "roots/list" in requests:
        capabilities["roots"] = {} if offered.stateless else {"listChanged": True}
    if sampling and "sampling/createMessage" in requests:
        capabilities["sampling"] = {}
    if elicitation and "elicitation/create" in requests:
        if not offered.url_elicitation:
            capabilities["elicitation"] = {}  # 2025-06-18: form is the only mode
        elif url_elicitation:
            capabilities["elicitation"] = {"form": {}, "url": {}}
        else:
            capabilities["elicitation"] = {"form": {}}
    # The host follows every task a server chooses to make (mcpl_host.client.tasks), so
    # it names the extension. On 2025-11-25 the client's ``tasks`` capability would
    # promise that the host *runs* tasks for the server (task-augmented sampling or
    # elicitation, its own tasks/get): it does not, so it says nothing there.
    if offered.task_extension:
        capabilities["extensions"] = {TASKS_EXTENSION: {}}
    return capabilities
