"""`groups create`: a consumer group at a chosen position of a topic (the seed's
"create a subscription"), before any consumer of it starts."""

from __future__ import annotations

import json
from pathlib import Path

from kmigrate.errors import ConfigError, ConflictError, GroupActiveError
from kmigrate.groups.view import view_group
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.cluster import TopicPartitionOffset, Watermarks


def positions_at(admin: ClusterAdmin, topic: str, at: str) -> list[TopicPartitionOffset]:
    """Per partition of ``topic``: earliest, latest, first at/after @EPOCH_MS, or from FILE.json.

    FILE.json maps every partition to an offset: ``{"0": 120, "1": 98}``; each offset
    must lie between the partition's log start and end.
    """
    marks = {w.partition: w for w in admin.watermarks(topic)}
    if at == "earliest":
        return [TopicPartitionOffset(topic, p, w.low) for p, w in sorted(marks.items())]
    if at == "latest":
        return [TopicPartitionOffset(topic, p, w.high) for p, w in sorted(marks.items())]
    if at.startswith("@"):
        try:
            ms = int(at[1:])
        except ValueError:
            raise ConfigError(f"--at '{at}' must be @EPOCH_MS, e.g. @1700000000000") from None
        found = admin.offsets_for_timestamp(topic, ms)
        return [TopicPartitionOffset(topic, o.partition, o.offset) for o in found]
    return _from_file(Path(at), topic, marks)


def _from_file(path: Path, topic: str, marks: dict[int, Watermarks]) -> list[TopicPartitionOffset]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"--at '{path}' is neither earliest, latest, @EPOCH_MS nor an existing JSON file"
        ) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--at file {path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f'--at file {path} must map partitions to offsets, e.g. {{"0": 120}}')
    offsets: dict[int, int] = {}
    for key, value in data.items():
        try:
            partition, offset = int(key), int(value)
        except (TypeError, ValueError):
            raise ConfigError(
                f"--at file {path}: '{key}: {value}' is not partition: offset"
            ) from None
        offsets[partition] = offset
    if set(offsets) != set(marks):
        raise ConfigError(
            f"--at file {path} names partitions {sorted(offsets)} but {topic} has "
            f"{sorted(marks)}; give an offset for each"
        )
    for p, o in sorted(offsets.items()):
        if not marks[p].low <= o <= marks[p].high:
            raise ConfigError(
                f"--at file {path}: offset {o} of {topic}[{p}] is outside "
                f"{marks[p].low}..{marks[p].high} (log start..end)"
            )
    return [TopicPartitionOffset(topic, p, o) for p, o in sorted(offsets.items())]


def create_group(
    admin: ClusterAdmin, group: str, topic: str, at: str
) -> list[TopicPartitionOffset]:
    """Commit ``group``'s position on every partition of ``topic``; refuses to overwrite."""
    offsets = positions_at(admin, topic, at)
    view = view_group(admin, group)
    if view.members:
        raise GroupActiveError(
            f"consumer group '{group}' has {view.members} active member(s) on cluster "
            f"'{admin.cluster.name}'; it exists already and is in use"
        )
    if any(t == topic for t, _ in view.committed):
        raise ConflictError(
            f"consumer group '{group}' already has offsets for {topic} on cluster "
            f"'{admin.cluster.name}'; pick a new group name or delete the group first"
        )
    admin.alter_group_offsets(group, offsets)
    return offsets
