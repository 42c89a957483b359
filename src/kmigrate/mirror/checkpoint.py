"""What Spark decided a micro-batch covers, read from the query's offset log.

Spark writes ``<checkpoint>/offsets/<batch id>`` before it runs a batch: a version
line, a metadata line, then one JSON line per source with each partition's end
offset. With read_committed that end is the last stable offset, so it lies past
trailing transaction markers and aborted records: the mirror's read position can
move there even when the batch held no record for a partition. Only the driver
reads this file; it lives on the driver's disk.
"""

from __future__ import annotations

import json
from pathlib import Path

from kmigrate.errors import MirrorError


def batch_end_offsets(checkpoint: Path, batch_id: int) -> dict[tuple[str, int], int]:
    path = checkpoint / "offsets" / str(batch_id)
    try:
        lines = path.read_text().splitlines()
        source = json.loads(lines[2])
        return {
            (topic, int(partition)): int(offset)
            for topic, offsets in source.items()
            for partition, offset in offsets.items()
        }
    except (OSError, IndexError, ValueError, AttributeError) as exc:
        raise MirrorError(
            f"cannot read Spark's offset log {path} ({type(exc).__name__}); "
            "the mirror needs a checkpoint directory on the driver's disk"
        ) from exc
