"""The high watermarks an instance has seen, per backend partition: what a failover
migration takes as the origin's end offset when the origin is down (seed 000's timer
that records endOffset while the origin is healthy).

Each instance learns them from the answers it forwards (a fetch's high watermark, a
write's offset) and stores them every MARK_EVERY_S in its own znode,
``<path>/marks/<id>`` (persistent: what an instance saw before it died still counts).
A high watermark is a lower bound of what the partition holds and falls on a batch
boundary (followers copy whole batches), so it is safe as a migration offset; records
acknowledged after the last store are the range a failover cannot serve, reported once
the origin is back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

MARK_EVERY_S = 1.0
Key = tuple[str, str, int]  # (cluster, topic, partition)


class Marks:
    def __init__(self) -> None:
        self._high: dict[Key, int] = {}
        self._changed = False

    def saw(self, cluster: str, topic: str, partition: int, offset: int) -> None:
        key = (cluster, topic, partition)
        if offset > self._high.get(key, -1):
            self._high[key] = offset
            self._changed = True

    def not_stored(self) -> None:
        """The last changes could not be stored: offer them again."""
        self._changed = True

    def take_changes(self) -> bytes | None:
        """The marks to store, if any changed since the last call."""
        if not self._changed:
            return None
        self._changed = False
        return encode(self._high)


def encode(high: Mapping[Key, int]) -> bytes:
    body: dict[str, dict[str, dict[str, int]]] = {}
    for (cluster, topic, p), offset in sorted(high.items()):
        body.setdefault(cluster, {}).setdefault(topic, {})[str(p)] = offset
    return json.dumps(body, sort_keys=True).encode()


def merged(stored: Iterable[bytes]) -> dict[Key, int]:
    """The highest mark per partition over every instance's stored marks (unreadable
    ones skipped)."""
    found: dict[Key, int] = {}
    for raw in stored:
        try:
            body = json.loads(raw)
            items = [
                ((str(c), str(t), int(p)), int(o))
                for c, topics in body.items()
                for t, parts in topics.items()
                for p, o in parts.items()
            ]
        except (ValueError, AttributeError, TypeError):
            continue
        for key, offset in items:
            found[key] = max(offset, found.get(key, -1))
    return found
