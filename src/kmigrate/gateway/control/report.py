"""Every partition migration as JSON: what `gateway migrations --json` prints and
`kmigrate serve` answers."""

from __future__ import annotations

from typing import Any

from kmigrate.config import Settings
from kmigrate.gateway.control.aging import origin_starts
from kmigrate.gateway.control.partition_moves import Migration, Status
from kmigrate.gateway.control.routes import RoutingTable


def migrations_json(settings: Settings, table: RoutingTable) -> dict[str, Any]:
    """Each migration's record, where its partition is written now, and how many records
    its origin still serves below end_offset (what aging waits for; None: unknown now)."""
    clusters = {name: settings.cluster(name) for name in settings.clusters}
    starts = origin_starts(clusters, table)  # origins that answer now

    def left(topic: str, p: int, m: Migration) -> int | None:
        if m.status is not Status.MIGRATED or m.end_offset is None:
            return 0 if m.status is Status.AGED else None
        start = starts.get((m.origin, topic, p), -1)
        if start is None:
            return 0  # the origin no longer has the topic
        return None if start == -1 else max(0, m.end_offset - start)

    rows = [
        {"topic": topic, "partition": p, "written_on": route.cluster_of(p), **m.to_json(),
         "left_on_origin": left(topic, p, m)}
        for topic, route in sorted(table.topics.items())
        for p, chain in sorted(route.migrations.items())
        for m in chain
    ]  # fmt: skip
    return {"migrations": rows, "shielded": sorted(table.shielded)}
