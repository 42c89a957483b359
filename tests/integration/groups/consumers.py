"""Real consumers on both sides of a cutover, and the exactly-once accounting.

The source side is confluent-kafka; the target side is either confluent-kafka or
Kafka's own Java console consumer from the sandbox jars (a second, independent
client). Every record's value is unique, so consumed values can be counted.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError

from harness.helpers import java_on
from kmigrate.config import ClusterConfig
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from kmigrate.sandbox.jars import ensure_jars


def _consumer(cluster: ClusterConfig, group: str, **extra: object) -> Consumer:
    return Consumer(
        {
            **cluster.as_librdkafka(),
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            **extra,
        }
    )


def consume_and_commit(cluster: ClusterConfig, topic: str, group: str, count: int) -> list[bytes]:
    """Consume exactly ``count`` records as group ``group``, commit, leave the group."""
    consumer = _consumer(cluster, group)
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + 120
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is None:
                values.append(message.value())
        assert len(values) == count, f"only {len(values)} of {count} records arrived"
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def consume_to_end(cluster: ClusterConfig, topic: str, group: str) -> list[bytes]:
    """Consume as ``group`` from its committed offsets until every partition is at its end."""
    consumer = _consumer(cluster, group, **{"enable.partition.eof": True})
    with ClusterAdmin(cluster) as admin:
        partitions = admin.describe_topic(topic).partition_count
    consumer.subscribe([topic])
    values: list[bytes] = []
    at_end: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while len(at_end) < partitions and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            values.append(message.value())
        assert len(at_end) == partitions, f"only partitions {sorted(at_end)} reached their end"
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def console_consume(cluster: ClusterConfig, topic: str, group: str, count: int) -> list[bytes]:
    """Kafka's Java console consumer reads ``count`` records as ``group`` and commits."""
    jars = ensure_jars()
    done = subprocess.run(
        [
            *java_on(jars),
            "-Xmx256m",
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            "--bootstrap-server",
            cluster.bootstrap_servers,
            "--topic",
            topic,
            "--group",
            group,
            "--max-messages",
            str(count),
            "--timeout-ms",
            "60000",
            "--consumer-property",
            "isolation.level=read_committed",
            "--consumer-property",
            "auto.offset.reset=earliest",
            # Records are the lines that start with "Partition:"; the tool may log to stdout.
            "--property",
            "print.partition=true",
        ],
        capture_output=True,
        timeout=180,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(b"Partition:")]
    assert len(lines) == count, (
        f"console consumer read {len(lines)} of {count} records: {done.stderr.decode()[-1500:]}"
    )
    return [line.split(b"\t", 1)[1] for line in lines]


@dataclass
class Cut:
    """The source as it was when the group stopped there, and what the group had consumed."""

    offsets: dict[int, int]  # partition -> the group's committed source offset
    present: dict[bytes, tuple[int, int]]  # value -> (partition, offset) on the source then
    consumed: list[bytes] = field(default_factory=list)

    def expected_rest(self) -> list[bytes]:
        """The records after the cut, in no particular order."""
        return [v for v, (p, o) in self.present.items() if o >= self.offsets.get(p, 0)]


def take_cut(cluster: ClusterConfig, topic: str, group: str, consumed: list[bytes]) -> Cut:
    with ClusterAdmin(cluster) as admin:
        committed = {o.partition: o.committed for o in admin.committed_offsets(group)}
        marks = admin.watermarks(topic)
    present = {}
    for w in marks:
        for r in read_partition(cluster, topic, w.partition, w.low, w.high):
            present[r.value or b""] = (w.partition, r.offset or 0)
    return Cut(committed, present, consumed)


def assert_exactly_once(cut: Cut, continued: list[bytes]) -> None:
    """Source part + target part: every record once, none before the cut repeated, none
    after it skipped."""
    counts = Counter(cut.consumed + continued)
    repeated = [v for v, n in counts.items() if n > 1]
    assert not repeated, f"{len(repeated)} record(s) consumed twice, e.g. {repeated[:3]}"
    before_cut = [
        v
        for v in continued
        if v in cut.present and cut.present[v][1] < cut.offsets.get(cut.present[v][0], 0)
    ]
    assert not before_cut, f"target consumer re-read records before the cut: {before_cut[:3]}"
    missing = set(cut.expected_rest()) - set(continued)
    assert not missing, (
        f"{len(missing)} record(s) after the cut never consumed: {sorted(missing)[:3]}"
    )
