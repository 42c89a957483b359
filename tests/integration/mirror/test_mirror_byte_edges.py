"""The byte copy killed with -9 while its ranges end and begin inside record batches."""

from __future__ import annotations

import random
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from harness.helpers import java_on, seeded, unique, wait_for
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce, read_partition
from kmigrate.mirror.job import DRIVER_OFFSETS_ENV
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars
from kmigrate.sandbox.state import load_state
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import (
    MirrorProcess,
    assert_exact_copy,
    mirror_config,
    mirror_until_caught_up,
    transactional,
)
from tests.integration.mirror.test_mirror_safety import _batch, _target_records

PARTITIONS = 3
EDGE = "37"  # source offsets per partition per batch: ranges end inside 100-record batches


def _mirror(config: Path, topic: str, folder: Path, *extra: str) -> MirrorProcess:
    args = ("--source", "source", "--target", "target", "--topics", topic, "--interval", "2s")
    return MirrorProcess(config, "edges", (*args, "--copy", "bytes", *extra), folder / "edges.log")


class _Rounds(threading.Thread):
    """Writes ``round()`` after round every ``pause`` seconds until stopped, counting in
    ``visible`` the records a read_committed reader sees; a failure is kept for the test."""

    pause = 0.3

    def __init__(self, clusters: Clusters, topic: str) -> None:
        super().__init__(daemon=True)
        self.clusters, self.topic = clusters, topic
        self.visible = 0
        self.done = threading.Event()
        self.error: BaseException | None = None

    def round(self) -> None:
        raise NotImplementedError

    def run(self) -> None:
        try:
            while not self.done.wait(self.pause):
                self.round()
        except BaseException as exc:  # reported by the test
            self.error = exc


class _Writer(_Rounds):
    """Batches of 100 records per partition, and a committed and an aborted transaction
    between them."""

    def round(self) -> None:
        produce(self.clusters.source, self.topic, _batch(self.visible, 100 * PARTITIONS, 3))
        self.visible += 100 * PARTITIONS
        transactional(self.clusters.source, self.topic, rounds=2)  # 10 kept, 10 aborted
        self.visible += 10


def test_kill_nines_while_batches_straddle_range_edges_lose_and_repeat_nothing(
    clusters: Clusters, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch of the mirror reads 37 offsets per partition, so nearly every range
    begins and ends inside a 100-record batch: the byte copy sends the batches wholly
    inside as bytes and the edges record by record, through committed and aborted
    transactions, and is killed with -9 at random moments (once copying in the driver,
    once on Spark). The target then equals the source record by record, at the offsets
    the map says, and Kafka's own Java consumer reads it (checking every batch's CRC).
    Replay a failure with KMIGRATE_TEST_SEED."""
    topic = unique("edges")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, PARTITIONS)
    writer = _Writer(clusters, topic)
    for _ in range(5):
        writer.round()
    config = mirror_config(clusters.config_path, tmp_path)
    rng = seeded()
    kills = []
    writer.start()
    try:
        for copied_by in ("driver", "spark"):
            monkeypatch.setenv(DRIVER_OFFSETS_ENV, "1000000" if copied_by == "driver" else "0")
            mirror = _mirror(config, topic, tmp_path, "--max-offsets-per-batch", EDGE)
            before = _target_records(clusters, topic)
            mirror.start().wait_running()
            wait_for(
                lambda b=before: _target_records(clusters, topic) > b + 200,
                timeout=120,
                message=f"the mirror copying again; {mirror.tail()}",
            )
            # Random on purpose: inside a byte batch, an edge copied record by record,
            # waiting for answers, recording or planning.
            delay = rng.uniform(0.0, 1.5)
            time.sleep(delay)
            mirror.kill9()
            kills.append((copied_by, round(delay, 2)))
    finally:
        writer.done.set()
        writer.join(timeout=60)
    assert writer.error is None, writer.error
    monkeypatch.delenv(DRIVER_OFFSETS_ENV)
    last = mirror_until_caught_up(_mirror(config, topic, tmp_path), clusters.source, [topic])
    log = (tmp_path / "edges.log").read_text()
    assert "copying record batches as bytes" in log, last.tail()
    compared = assert_exact_copy(config, "edges", clusters.source, clusters.target, topic)
    assert compared == writer.visible, f"kills (copied by, after s): {kills}; {last.tail()}"
    assert _java_reads(clusters, topic) == _values(clusters, topic), "Kafka's own consumer"


def _java_reads(clusters: Clusters, topic: str) -> dict[int, list[str]]:
    """The target as Kafka's own console consumer reads it (read_committed, CRCs
    checked, as the Java client does by default): values per partition, in order."""
    jars = ensure_jars(DEFAULT_KAFKA_VERSION)
    read = subprocess.run(
        [*java_on(jars), "org.apache.kafka.tools.consumer.ConsoleConsumer",
         "--bootstrap-server", clusters.target.bootstrap_servers, "--topic", topic,
         "--from-beginning", "--isolation-level", "read_committed", "--timeout-ms", "15000",
         "--formatter-property", "print.partition=true"],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    found: dict[int, list[str]] = {}
    for line in read.stdout.splitlines():
        partition, _, value = line.partition("\t")
        if partition.startswith("Partition:"):
            found.setdefault(int(partition.removeprefix("Partition:")), []).append(value)
    assert found, read.stderr[-2000:]
    return found


def _values(clusters: Clusters, topic: str) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    with ClusterAdmin(clusters.source) as admin:
        ends = {w.partition: w.high for w in admin.watermarks(topic)}
    for partition, end in ends.items():
        records = read_partition(clusters.source, topic, partition, 0, end)
        found[partition] = [(r.value or b"").decode() for r in records]
    return found


def test_a_range_cut_inside_batches_sends_the_inside_as_bytes_and_the_edges_by_record(
    clusters: Clusters, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One task, in this process: source offsets [37, 237) of 100-record batches go to
    an empty target as 63 records (the first edge), one whole batch as bytes, and 37
    records (the last edge); the offset runs say where each went."""
    from kmigrate.mirror import byte_copy
    from kmigrate.mirror.ranges import CopySettings, RangePlan
    from kmigrate.model.offsets import OffsetRun

    topic = unique("edge-task")
    for cluster in (clusters.source, clusters.target):
        with ClusterAdmin(cluster) as admin:
            admin.create_topic(topic, 1)
    for start in range(0, 300, 100):
        produce(clusters.source, topic, _batch(start, 100, 1))
    by_records = []
    real = byte_copy.copy_ranges

    def spy(settings: CopySettings, plans: list[RangePlan]) -> object:
        by_records.extend((plan.start, plan.end, plan.expected_end) for plan in plans)
        return real(settings, plans)

    monkeypatch.setattr(byte_copy, "copy_ranges", spy)
    settings = CopySettings(clusters.source.as_librdkafka(), clusters.target.as_librdkafka())
    edges = [RangePlan(topic, 0, 37, 237, 0, 0)]
    (result,) = byte_copy.copy_ranges_as_bytes(settings, edges)
    assert result.error is None, result.error
    # The second edge is handed over only after the batch before it was acknowledged.
    assert by_records == [(37, 100, 0)], "the first edge by record, then bytes"
    (result,) = byte_copy.copy_ranges_as_bytes(settings, [RangePlan(topic, 0, 100, 237, 63, 63)])
    assert by_records[1:] == [(200, 237, 163)]
    assert result.runs == [OffsetRun(100, 63, 137)]
    assert result.next_offset == 237
    source = read_partition(clusters.source, topic, 0, 37, 237)
    target = read_partition(clusters.target, topic, 0, 0, 200)
    assert [(r.key, r.value, r.headers, r.timestamp) for r in target] == [
        (r.key, r.value, r.headers, r.timestamp) for r in source
    ]


class _SmallBatches(_Rounds):
    """What busy services write: batches of 1 to 5 records per partition (a flush after
    each), and small transactions, committed and aborted, between them."""

    pause = 0.01

    def __init__(self, clusters: Clusters, topic: str, rng: random.Random) -> None:
        super().__init__(clusters, topic)
        self.rng = rng
        self.producer = Producer({**clusters.source.as_librdkafka(), "linger.ms": 100,
                                  "enable.idempotence": True})  # fmt: skip
        self.rounds = 0

    def round(self) -> None:
        for partition in range(PARTITIONS):
            for _ in range(self.rng.randint(1, 5)):
                value = f"s{self.visible}".encode()
                self.producer.produce(self.topic, value, key=b"k", partition=partition,
                                      headers=[("n", value)])  # fmt: skip
                self.visible += 1
        assert self.producer.flush(30) == 0, "every small batch acknowledged"
        self.rounds += 1
        if self.rounds % 40 == 0:
            transactional(self.clusters.source, self.topic, rounds=2)  # 5 a batch; 10 kept
            self.visible += 10


def test_small_batches_are_merged_and_a_kill_nine_loses_and_repeats_nothing(
    clusters: Clusters, tmp_path: Path
) -> None:
    """A source written in batches of 1-5 records (and small transactions, one aborted
    in two) is copied as bytes with consecutive batches merged into one (their records'
    offset and timestamp deltas rewritten), while writing goes on and the mirror is
    killed with -9 at a random moment. The target then equals the source record by
    record (keys, values, headers, timestamps) at the offsets the map says; Kafka's own
    log dump finds the target's batches valid and far larger than any the source was
    written in, and Kafka's own Java consumer reads them. Replay with KMIGRATE_TEST_SEED."""
    assert clusters.sandbox_dir is not None, "the log dump reads the sandbox's log files"
    topic = unique("small")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, PARTITIONS)
    rng = seeded()
    writer = _SmallBatches(clusters, topic, rng)
    for _ in range(300):  # a backlog of ~2,700 records in ~900 batches
        writer.round()
    config = mirror_config(clusters.config_path, tmp_path)
    writer.start()
    try:
        mirror = _mirror(config, topic, tmp_path)
        mirror.start().wait_running()
        wait_for(lambda: _target_records(clusters, topic) > 0, timeout=120,
                 message=f"the mirror copying; {mirror.tail()}")  # fmt: skip
        delay = rng.uniform(0.0, 3.0)  # random on purpose: merging, sending, recording
        time.sleep(delay)
        mirror.kill9()
    finally:
        writer.done.set()
        writer.join(timeout=60)
    assert writer.error is None, writer.error
    last = mirror_until_caught_up(_mirror(config, topic, tmp_path), clusters.source, [topic])
    compared = assert_exact_copy(config, "edges", clusters.source, clusters.target, topic)
    assert compared == writer.visible, f"killed {delay:.2f} s after copying began; {last.tail()}"
    source, target = _dumped(clusters, "source", topic), _dumped(clusters, "target", topic)
    assert max(source) <= 5, "the source was written in batches of 1-5 records"
    assert sum(target) == writer.visible, "no marker, no aborted record copied"
    assert len(target) * 4 < len(source), f"merged: {len(source)} batches -> {len(target)}"
    assert _java_reads(clusters, topic) == _values(clusters, topic), "Kafka's own consumer"


def _dumped(clusters: Clusters, cluster: str, topic: str) -> list[int]:
    """The record count of every batch of ``topic`` in ``cluster``'s log files, as Kafka's
    DumpLogSegments reads them (each batch's CRC checked: all must be valid)."""
    assert clusters.sandbox_dir is not None
    found = load_state(clusters.sandbox_dir).clusters[cluster]
    folders = [b.folder(clusters.sandbox_dir / cluster) / "data" for b in found.brokers]
    replicas = [next(f / f"{topic}-{p}" for f in folders if (f / f"{topic}-{p}").is_dir())
                for p in range(PARTITIONS)]  # one replica of each partition  # fmt: skip
    segments = [str(log) for replica in replicas for log in sorted(replica.glob("*.log"))]
    dump = subprocess.run(
        [*java_on(ensure_jars(DEFAULT_KAFKA_VERSION)), "org.apache.kafka.tools.DumpLogSegments",
         "--files", ",".join(segments)],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    batches = [line for line in dump.stdout.splitlines() if line.startswith("baseOffset:")]
    assert batches and dump.returncode == 0, dump.stderr[-2000:]
    assert all("isvalid: true" in line for line in batches), [
        line for line in batches if "isvalid: true" not in line
    ][:3]
    return [int(re.search(r"\bcount: (\d+)", line).group(1)) for line in batches]  # type: ignore[union-attr]
