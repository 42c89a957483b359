"""`groups create`: a consumer group at a chosen position of its topics (the seed's
"create a subscription"), before any consumer of it starts.

Local input (the position, an offsets file) is checked before a cluster is asked
(`read_offsets_file`); what only the cluster knows (the topics, their partitions and
log ranges) is checked before anything is committed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kmigrate.errors import ConfigError, ConflictError, GroupActiveError, TopicNotFoundError
from kmigrate.groups.view import view_group
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import TopicPartitionOffset, Watermarks

OffsetsFile = tuple[Path, dict[int, int]]


def read_offsets_file(path: Path) -> OffsetsFile:
    """A position file's offsets per partition, ``{"0": 120, "1": 98}``, checked for
    shape (no cluster asked)."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise ConfigError(f"--from file '{path}' does not exist") from None
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise ConfigError(f"--from file {path}: not valid JSON ({first})") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f'--from file {path} must map partitions to offsets, e.g. {{"0": 120}}')
    offsets: dict[int, int] = {}
    for key, value in data.items():
        try:
            partition, offset = int(key), int(value)
        except (TypeError, ValueError):
            raise ConfigError(
                f"--from file {path}: '{key}: {value}' is not partition: offset"
            ) from None
        if partition < 0 or offset < 0:
            raise ConfigError(f"--from file {path}: '{key}: {value}' cannot be negative")
        offsets[partition] = offset
    return path, offsets


def matching_topics(admin: ClusterAdmin, pattern: re.Pattern[str], *, one: bool) -> list[str]:
    """The cluster's topics whose whole name ``pattern`` matches (exactly one if ``one``)."""
    names = [t.name for t in admin.list_topics() if pattern.fullmatch(t.name)]
    if not names:
        raise TopicNotFoundError(
            f"no topic on cluster '{admin.cluster.name}' matches --topics '{pattern.pattern}'"
        )
    if one and len(names) > 1:
        raise ConfigError(
            f"--from FILE.json positions one topic, but --topics '{pattern.pattern}' matches "
            f"{len(names)} ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})"
        )
    return names


def positions_at(
    admin: ClusterAdmin, topic: str, at: str, offsets_file: OffsetsFile | None = None
) -> list[TopicPartitionOffset]:
    """Per partition of ``topic``: earliest, latest, first at/after @EPOCH_MS, or the
    offsets of ``offsets_file``, each between the partition's log start and end."""
    marks = {w.partition: w for w in admin.watermarks(topic)}
    if at == "earliest":
        return [TopicPartitionOffset(topic, p, w.low) for p, w in sorted(marks.items())]
    if at == "latest":
        return [TopicPartitionOffset(topic, p, w.high) for p, w in sorted(marks.items())]
    if at.startswith("@"):
        found = admin.offsets_for_timestamp(topic, int(at[1:]))
        return [TopicPartitionOffset(topic, o.partition, o.offset) for o in found]
    if offsets_file is None:
        offsets_file = read_offsets_file(Path(at))
    return _from_file(offsets_file, topic, marks)


def _from_file(
    offsets_file: OffsetsFile, topic: str, marks: dict[int, Watermarks]
) -> list[TopicPartitionOffset]:
    path, offsets = offsets_file
    if set(offsets) != set(marks):
        raise ConfigError(
            f"--from file {path} names partitions {sorted(offsets)} but {topic} has "
            f"{sorted(marks)}; give an offset for each"
        )
    for p, o in sorted(offsets.items()):
        if not marks[p].low <= o <= marks[p].high:
            raise ConfigError(
                f"--from file {path}: offset {o} of {topic}[{p}] is outside "
                f"{marks[p].low}..{marks[p].high} (log start..end)"
            )
    return [TopicPartitionOffset(topic, p, o) for p, o in sorted(offsets.items())]


def create_group(
    admin: ClusterAdmin,
    group: str,
    topics: list[str],
    at: str,
    offsets_file: OffsetsFile | None = None,
) -> list[TopicPartitionOffset]:
    """Commit ``group``'s position on every partition of ``topics``; refuses to
    overwrite (a group in use, or one with offsets for any of them), committing nothing."""
    offsets = [o for topic in topics for o in positions_at(admin, topic, at, offsets_file)]
    view = view_group(admin, group)
    if view.members:
        raise GroupActiveError(
            f"consumer group '{group}' has {view.members} active member(s) on cluster "
            f"'{admin.cluster.name}'; it exists already and is in use"
        )
    taken = sorted({t for t, _ in view.committed} & set(topics))
    if taken:
        raise ConflictError(
            f"consumer group '{group}' already has offsets for {', '.join(taken)} on cluster "
            f"'{admin.cluster.name}'; pick a new group name or delete the group first"
        )
    admin.alter_group_offsets(group, offsets)
    return offsets
