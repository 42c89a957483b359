"""Partition reassignment (KIP-455), log-dir sizes and preferred leader elections.

confluent-kafka has no reassignment or log-dir API, so these calls go through
kafka-python 3.0 (pinned), behind the same kind of layer as the admin client: values
in and out, errors translated to kmigrate's once, here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kmigrate.config import ClusterConfig
from kmigrate.errors import (
    ClusterUnavailableError,
    ClusterUnreachableError,
    ConflictError,
    KafkaOperationError,
)

Key = tuple[str, int]
# kafka-python logs every refused connection at ERROR; kmigrate reports failures itself.
logging.getLogger("kafka").setLevel(logging.CRITICAL)


@dataclass(frozen=True)
class Ongoing:
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


class Reassignments:
    def __init__(self, cluster: ClusterConfig) -> None:
        self.cluster = cluster
        conf = cluster.as_librdkafka()
        options: dict[str, Any] = {
            "bootstrap_servers": cluster.bootstrap_servers.split(","),
            "client_id": "kmigrate-reassign",
            "request_timeout_ms": int(cluster.timeout_s * 1000) + 5000,
        }
        protocol = conf.get("security.protocol", "PLAINTEXT").upper()
        if protocol != "PLAINTEXT":
            options["security_protocol"] = protocol
            options["sasl_mechanism"] = conf.get("sasl.mechanism", "PLAIN").upper()
            options["sasl_plain_username"] = conf.get("sasl.username")
            options["sasl_plain_password"] = conf.get("sasl.password")
        # kafka-python: imported here, not at start-up (`kmigrate reassign --help`).
        from kafka.admin import KafkaAdminClient
        from kafka.errors import KafkaError

        try:
            self._client = KafkaAdminClient(**options)
        except KafkaError:
            raise ClusterUnreachableError(
                f"cannot reach cluster '{cluster.name}' at {cluster.bootstrap_servers}",
                cluster=cluster.name,
                condition="no broker reachable",
            ) from None

    def __enter__(self) -> Reassignments:
        return self

    def __exit__(self, *_: object) -> None:
        self._client.close()

    def _call(self, action: str, step: Any, *args: Any, **kwargs: Any) -> Any:
        """``step``; a condition that passes (a timeout, a controller moving, a broker
        restarting) becomes ClusterUnavailableError, which a long-running caller waits
        out; any other failure, KafkaOperationError."""
        from kafka.errors import KafkaError, UnknownTopicOrPartitionError

        try:
            return step(*args, **kwargs)
        except KafkaError as exc:
            if exc.retriable and not isinstance(exc, UnknownTopicOrPartitionError):
                raise ClusterUnavailableError(
                    f"cluster '{self.cluster.name}': {action} did not complete "
                    f"({type(exc).__name__}); try again once the cluster answers",
                    cluster=self.cluster.name,
                    condition=f"{action}: {type(exc).__name__}",
                ) from None
            raise KafkaOperationError(
                f"cluster '{self.cluster.name}': {action} failed ({type(exc).__name__}: {exc})"
            ) from None

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
