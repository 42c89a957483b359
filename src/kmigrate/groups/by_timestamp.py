"""Approximate translation through record timestamps, for data copied without an offset map.

A group committed at source offset ``c`` has consumed everything before ``c``. Let
``T`` be the timestamp of the record at ``c`` (the first record it has not consumed).
Copies keep order and timestamps, so the copy of that record is at or after the first
target record with timestamp >= ``T``: starting there skips nothing. It may repeat the
records before ``c`` whose timestamps are >= ``T``; they all lie in source offsets
[first source offset with timestamp >= T, c), whose length is the per-partition bound.
A caught-up group (nothing at ``c``) anchors on its last consumed record instead, which
is then repeated too.
"""

from __future__ import annotations

from dataclasses import dataclass

from kmigrate.groups.translation import APPROXIMATE, PartitionTranslation
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition

# How far back to look for a caught-up group's last consumed record.
_LOOK_BACK = 500


@dataclass(frozen=True)
class _Anchor:
    timestamp: int


def translate_by_timestamp(
    source: ClusterAdmin, target: ClusterAdmin, commits: list[tuple[str, int, int]]
) -> list[PartitionTranslation]:
    keys = [(t, p) for t, p, _ in commits]
    low = source.partition_offsets(keys, "earliest")
    high = source.partition_offsets(keys, "latest", committed_only=True)
    anchors: dict[tuple[str, int], _Anchor] = {}
    result: dict[tuple[str, int], PartitionTranslation] = {}
    for t, p, c in commits:
        if c < low[(t, p)]:
            result[(t, p)] = _none(t, p, c, f"below the source's log start {low[(t, p)]}")
            continue
        anchor = _anchor(source, t, p, c, low[(t, p)], high[(t, p)])
        if anchor is None:
            result[(t, p)] = _none(t, p, c, "the source partition has no record to anchor on")
            continue
        anchors[(t, p)] = anchor
    stamps = {k: a.timestamp for k, a in anchors.items()}
    on_target = target.offsets_for_times(stamps)
    on_source = source.offsets_for_times(stamps)
    for t, p, c in commits:
        anchor = anchors.get((t, p))
        if anchor is None:
            continue
        found = on_target.get((t, p))
        if found is None:
            result[(t, p)] = _none(
                t, p, c, f"the target has no record from {anchor.timestamp} on (copy behind?)"
            )
            continue
        first = on_source.get((t, p))
        repeat = c - (first if first is not None else c)
        result[(t, p)] = PartitionTranslation(
            t,
            p,
            c,
            found,
            False,
            APPROXIMATE,
            f"by timestamp {anchor.timestamp}: up to {repeat:,} record(s) may repeat",
            repeat,
        )
    return [result[(t, p)] for t, p in sorted(keys)]


def _anchor(
    source: ClusterAdmin, topic: str, partition: int, committed: int, low: int, high: int
) -> _Anchor | None:
    cluster = source.cluster
    if committed < high:
        ahead = read_partition(cluster, topic, partition, committed, high, limit=1)
        if ahead and ahead[0].timestamp is not None:
            return _Anchor(ahead[0].timestamp)
    behind = read_partition(cluster, topic, partition, max(low, committed - _LOOK_BACK), committed)
    if behind and behind[-1].timestamp is not None:
        return _Anchor(behind[-1].timestamp)
    return None


def _none(topic: str, partition: int, committed: int, why: str) -> PartitionTranslation:
    return PartitionTranslation(topic, partition, committed, None, False, APPROXIMATE, why)
