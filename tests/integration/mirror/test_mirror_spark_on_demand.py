"""On a local master the mirror starts Spark at the first batch it does not copy itself
(more than 10,000 offsets for the byte copy): a mirror that keeps up holds no JVM and no
Python workers, and a backlog still runs on Spark. Both copies exact."""

from __future__ import annotations

from pathlib import Path

from harness.helpers import unique
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.model.records import Record
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import (
    MirrorProcess,
    assert_exact_copy,
    mirror_config,
    wait_caught_up,
)


def _records(first: int, count: int) -> list[Record]:
    return [
        Record(f"k{i}".encode(), f"v{i}".encode(), (), None, i % 2, None)
        for i in range(first, first + count)
    ]


def _jvms_of(pid: int) -> list[int]:
    """The Java processes started by process ``pid`` (Spark's driver JVM)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid and b"java" in command.split(b"\0", 1)[0]:
            found.append(int(stat.parent.name))
    return found


def _mirror(clusters: Clusters, folder: Path, topic: str, log: str) -> MirrorProcess:
    return MirrorProcess(
        mirror_config(clusters.config_path, folder),
        "on-demand",
        ("--source", "source", "--target", "target", "--topics", topic, "--interval", "2s"),
        folder / log,
    )


def test_spark_starts_at_the_first_batch_the_driver_does_not_copy(
    clusters: Clusters, tmp_path: Path
) -> None:
    """A running mirror picks up new records in small batches however fast they come,
    so the backlog is made while it is stopped, as a mirror started on a topic with
    history meets one."""
    topic = unique("on-demand")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 2)
    produce(clusters.source, topic, _records(0, 300))
    mirror = _mirror(clusters, tmp_path, topic, "first.log").start()
    try:
        mirror.wait_running()
        wait_caught_up(mirror, clusters.source, [topic])
        log = mirror.log.read_text()
        assert "Spark (local[2]) starts at the first batch of more than 10,000 offsets" in log
        assert "starting Spark" not in log, mirror.tail()
        assert _jvms_of(mirror.pid) == [], "a mirror that keeps up holds no Spark JVM"
    finally:
        assert mirror.stop() == 0, mirror.tail()

    produce(clusters.source, topic, _records(300, 12_000))  # over the driver's share
    again = _mirror(clusters, tmp_path, topic, "again.log").start()
    try:
        again.wait_running()
        wait_caught_up(again, clusters.source, [topic])
        assert "starting Spark (local[2])" in again.log.read_text(), again.tail()
    finally:
        assert again.stop() == 0, again.tail()
    compared = assert_exact_copy(again.config, "on-demand", clusters.source, clusters.target, topic)
    assert compared == 12_300
