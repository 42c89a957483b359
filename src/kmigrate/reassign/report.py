"""A reassignment's status as JSON: what `reassign status --json` prints and `kmigrate
serve` answers."""

from __future__ import annotations

from typing import Any

from kmigrate.model.reassignments import Applied
from kmigrate.store import Store
from kmigrate.store import reassignments as stored


def status_json(store: Store, found: Applied) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for state in stored.states(store, found.cluster).values():
        counts[state] = counts.get(state, 0) + 1
    return {
        "cluster": found.cluster,
        "state": found.state,
        "partitions": counts,
        "throttled_topics": list(found.throttled_topics),
        "throttled_brokers": list(found.throttled_brokers),
    }
