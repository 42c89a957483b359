"""Where a consumer group continues on the target: its source commits through the map.

Pure logic. A committed offset is the next record the group would consume; its
translation is the target offset of the first mirrored record at or after it, so a
consumer starting there neither repeats nor skips a record (``PartitionOffsetMap``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kmigrate.model.groups import GroupPosition
from kmigrate.model.links import PartitionState
from kmigrate.model.offsets import Exactness

# Why a partition has no exact translation. NOT_MIRRORED clears up by waiting for the
# mirror; the others need a decision by the operator.
NOT_MIRRORED = "not-mirrored-yet"
BELOW_START = "below-map-start"
NOT_IN_LINK = "not-in-link"
SOURCE_UNREACHABLE = "source-unreachable"
APPROXIMATE = "approximate"


@dataclass(frozen=True)
class PartitionTranslation:
    """One partition of a group: its source commit and where it continues on the target."""

    topic: str
    partition: int
    source_offset: int
    target_offset: int | None
    exact: bool
    reason: str | None = None  # one of the constants above when not exact
    detail: str | None = None  # the reason in words, for people
    may_repeat: int = 0  # worst case of records consumed twice if target_offset is used
    behind: int = 0  # source offsets the mirror still has to read to reach source_offset

    @property
    def usable(self) -> bool:
        """True when committing ``target_offset`` is safe without asking anyone."""
        return self.exact and self.target_offset is not None


def translate_commits(
    commits: Iterable[tuple[str, int, int]],
    partitions: Mapping[tuple[str, int], PartitionState],
    link_topics: set[str],
) -> list[PartitionTranslation]:
    """Exact translations of (topic, partition, committed offset) through the link's maps."""
    return [_translate(t, p, o, partitions, link_topics) for t, p, o in sorted(commits)]


def _translate(
    topic: str,
    partition: int,
    offset: int,
    partitions: Mapping[tuple[str, int], PartitionState],
    link_topics: set[str],
) -> PartitionTranslation:
    def untranslated(reason: str, detail: str, behind: int = 0) -> PartitionTranslation:
        return PartitionTranslation(
            topic, partition, offset, None, False, reason, detail, 0, behind
        )

    if topic not in link_topics:
        return untranslated(NOT_IN_LINK, "the link does not mirror this topic")
    state = partitions.get((topic, partition))
    if state is None:
        return untranslated(NOT_MIRRORED, "the mirror has not reached this partition yet", offset)
    found = state.map.translate(offset, state.target_start)
    if found.exactness is Exactness.EXACT:
        return PartitionTranslation(topic, partition, offset, found.target_offset, True)
    read_to, began = state.map.source_next, state.map.source_start
    if found.exactness is Exactness.NOT_YET_MIRRORED:
        return untranslated(
            NOT_MIRRORED,
            f"the mirror has read up to {read_to} ({offset - read_to:,} to go)",
            offset - read_to,
        )
    return untranslated(
        BELOW_START,
        f"the link began mirroring at {began}; records {offset}..{began - 1} are not on the target",
    )


def translate_last_known(
    positions: Iterable[GroupPosition],
    partitions: Mapping[tuple[str, int], PartitionState],
    link_topics: set[str],
) -> list[PartitionTranslation]:
    """Failover: translate the last source commits kmigrate saw, from the map alone.

    The group may have consumed further on the source after that commit, up to what
    the mirror copied, so every record mirrored past the translation may repeat.
    """
    result = []
    for pos in sorted(positions, key=lambda p: (p.topic, p.partition)):
        found = _translate(pos.topic, pos.partition, pos.source_offset, partitions, link_topics)
        state = partitions.get((pos.topic, pos.partition))
        if found.target_offset is None or state is None:
            result.append(found)
            continue
        repeat = max(state.expected_target_end - found.target_offset, 0)
        result.append(
            PartitionTranslation(
                pos.topic,
                pos.partition,
                pos.source_offset,
                found.target_offset,
                False,
                SOURCE_UNREACHABLE,
                f"source unreachable: from the commit seen at {_utc(pos.seen_ms)}; "
                f"up to {repeat:,} record(s) may repeat",
                repeat,
            )
        )
    return result


def _utc(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def waiting_for_mirror(translations: Iterable[PartitionTranslation]) -> list[PartitionTranslation]:
    return [t for t in translations if t.reason == NOT_MIRRORED]
