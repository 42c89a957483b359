"""Partition reassignment (KIP-455), log-dir sizes and preferred leader elections.

confluent-kafka has no reassignment or log-dir API, so these calls go through
kafka-python 3.0 (pinned), behind the same kind of layer as the admin client: values
in and out, errors translated to kmigrate's once, here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kmigrate.errors import ConflictError
from kmigrate.kafka.python_admin import KafkaPythonAdmin

Key = tuple[str, int]


@dataclass(frozen=True)
class Ongoing:
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


class Reassignments(KafkaPythonAdmin):
    CLIENT_ID = "kmigrate-reassign"

    def submit(self, moves: Mapping[Key, Iterable[int] | None]) -> None:
        """Start (replica list) or cancel (None) the reassignment of each partition."""
        from kafka import TopicPartition

        request = {
            TopicPartition(t, p): (list(r) if r is not None else None)
            for (t, p), r in moves.items()
        }
        result = self._call("altering partition reassignments",
                            self._client.alter_partition_reassignments, request)  # fmt: skip
        # Cancelling a partition that finished meanwhile is not a failure.
        failures = _partition_errors(result, tolerated=("NoReassignmentInProgressError",))
        if failures:
            key, error = failures[0]
            raise ConflictError(
                f"cluster '{self.cluster.name}' refused the reassignment of "
                f"{key[0]}[{key[1]}]: {error}"
                + (f" (and {len(failures) - 1} more)" if len(failures) > 1 else "")
            )

    def ongoing(self) -> dict[Key, Ongoing]:
        found = self._call("listing partition reassignments",
                           self._client.list_partition_reassignments)  # fmt: skip
        return {
            (tp.topic, tp.partition): Ongoing(
                tuple(v.get("replicas", ())),
                tuple(v.get("adding_replicas", ())),
                tuple(v.get("removing_replicas", ())),
            )
            for tp, v in found.items()
        }

    def replica_sizes(self, brokers: Iterable[int]) -> dict[tuple[str, int, int], int]:
        """(topic, partition, broker) -> bytes on that broker's disk, for each of
        ``brokers`` that answers (a broker that just died may still be listed)."""
        from kafka.errors import KafkaError

        sizes: dict[tuple[str, int, int], int] = {}
        for broker in brokers:
            try:
                answers = self._client.describe_log_dirs(None, [broker])
            except KafkaError:
                continue
            for answer in answers:
                for log_dir in answer.get("log_dirs", []):
                    for topic in log_dir.get("topics", []):
                        for partition in topic.get("partitions", []):
                            key = (topic["name"], int(partition["partition_index"]), broker)
                            sizes[key] = sizes.get(key, 0) + int(partition["partition_size"])
        return sizes

    def elect_preferred(self, partitions: Iterable[Key]) -> None:
        chosen: dict[str, list[int]] = {}
        for topic, partition in partitions:
            chosen.setdefault(topic, []).append(partition)
        if chosen:
            self._call("electing preferred leaders", self._client.elect_leaders, 0, chosen,
                       raise_errors=False)  # fmt: skip


def _partition_errors(result: Any, tolerated: tuple[str, ...] = ()) -> list[tuple[Key, str]]:
    """Per-partition refusals in kafka-python's AlterPartitionReassignments answer (a
    dict of TopicPartition -> None or an error class)."""
    errors: list[tuple[Key, str]] = []
    for tp, outcome in (result or {}).items():
        if outcome is None:
            continue
        name = getattr(outcome, "__name__", type(outcome).__name__)
        if name in tolerated:
            continue
        errors.append(((tp.topic, tp.partition), _words(name)))
    return errors


def _words(error_name: str) -> str:
    """InvalidReplicationAssignmentError -> 'invalid replication assignment'."""
    bare = error_name.removesuffix("Error")
    return "".join(f" {c.lower()}" if c.isupper() else c for c in bare).strip()
