"""One real mirror process copies every kind of topic; each test reads both clusters back.

The mirror starts once for the module (Spark start-up is the slow part) on a regex
that matches all topics made here, including ones created or grown while it runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from harness.helpers import run_cli, unique, wait_for
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce, read_partition
from kmigrate.model.records import Record
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import (
    MirrorProcess,
    assert_exact_copy,
    compacted_with_gaps,
    mirror_config,
    transactional,
    wait_caught_up,
)

PREFIX = unique("copy")
NOW = int(time.time() * 1000)


def _topic(kind: str) -> str:
    return f"{PREFIX}-{kind}"


def _records(n: int, partitions: int, size: int = 20) -> list[Record]:
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else f"k{i}".encode()
        value = None if i % 7 == 0 else (f"v{i}-".encode() * size)[:size]
        headers = (("h", b"a"), ("h", b"\x00\xff\x01"), ("other", None)) if i % 3 else ()
        out.append(Record(key, value, headers, NOW - 3_600_000 + i * 7, i % partitions, None))
    return out


@pytest.fixture(scope="module")
def mirror(clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MirrorProcess]:
    folder = tmp_path_factory.mktemp("mirror-copy")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(_topic("plain"), 3)
        admin.create_topic(_topic("big"), 2, configs={"max.message.bytes": str(3 * 1024 * 1024)})
        admin.create_topic(_topic("txn"), 2)
        admin.create_topic(_topic("wide"), 64)
        admin.create_topic(_topic("grow"), 1)
    produce(clusters.source, _topic("plain"), _records(3000, 3))
    big = [
        Record(
            f"b{i}".encode(),
            bytes([i]) * (1024 * 1024 + i),
            (("n", str(i).encode()),),
            NOW + i,
            i % 2,
            None,
        )
        for i in range(6)
    ]
    produce(clusters.source, _topic("big"), big, **{"message.max.bytes": 10 * 1024 * 1024})
    transactional(clusters.source, _topic("txn"))
    compacted_with_gaps(clusters.source, _topic("compact"))
    produce(clusters.source, _topic("wide"), _records(6400, 64))
    produce(clusters.source, _topic("grow"), _records(50, 1))
    process = MirrorProcess(
        mirror_config(clusters.config_path, folder),
        "copy",
        (
            "--source",
            "source",
            "--target",
            "target",
            "--topics",
            f"{PREFIX}-.*",
            "--interval",
            "2s",
        ),
        folder / "mirror.log",
    ).start()
    process.wait_running()
    yield process
    code = process.stop()
    assert code == 0, process.tail()


def _check(mirror: MirrorProcess, clusters: Clusters, kind: str) -> int:
    wait_caught_up(mirror, clusters.source, [_topic(kind)])
    return assert_exact_copy(mirror.config, "copy", clusters.source, clusters.target, _topic(kind))


def test_headers_timestamps_null_keys_and_tombstones(
    mirror: MirrorProcess, clusters: Clusters
) -> None:
    assert _check(mirror, clusters, "plain") == 3000


def test_one_megabyte_records(mirror: MirrorProcess, clusters: Clusters) -> None:
    assert _check(mirror, clusters, "big") == 6
    with ClusterAdmin(clusters.target) as admin:
        configs = admin.describe_topic(_topic("big")).configs
    assert configs.get("max.message.bytes") == str(3 * 1024 * 1024)


def test_aborted_transactions_never_reach_the_target(
    mirror: MirrorProcess, clusters: Clusters
) -> None:
    # 3 committed rounds of 10 records; the aborted rounds and the markers are offset gaps.
    assert _check(mirror, clusters, "txn") == 30
    values = {
        r.value for p in (0, 1) for r in read_partition(clusters.target, _topic("txn"), p, 0, 10**6)
    }
    assert all(v is not None and v.split(b"-")[0] in (b"r0", b"r2", b"r4") for v in values)


def test_compacted_topic_with_gaps(mirror: MirrorProcess, clusters: Clusters) -> None:
    compared = _check(mirror, clusters, "compact")
    with ClusterAdmin(clusters.source) as admin:
        mark = admin.watermarks(_topic("compact"))[0]
    assert 0 < compared < mark.count, "the source had no compaction gap to copy across"


def test_sixty_four_partitions(mirror: MirrorProcess, clusters: Clusters) -> None:
    assert _check(mirror, clusters, "wide") == 6400


def test_partition_added_on_the_source_is_mirrored(
    mirror: MirrorProcess, clusters: Clusters
) -> None:
    topic = _topic("grow")
    _check(mirror, clusters, "grow")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_partitions(topic, 3)
    produce(clusters.source, topic, _records(90, 3))
    with ClusterAdmin(clusters.target) as admin:
        wait_for(
            lambda: admin.describe_topic(topic).partition_count == 3,
            timeout=60,
            message="target topic grew to 3 partitions",
        )
    assert _check(mirror, clusters, "grow") == 140


def test_new_matching_topic_is_picked_up(mirror: MirrorProcess, clusters: Clusters) -> None:
    topic = _topic("late")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 2)
    produce(clusters.source, topic, _records(200, 2))
    assert _check(mirror, clusters, "late") == 200


def test_status_reports_every_partition(mirror: MirrorProcess, clusters: Clusters) -> None:
    _check(mirror, clusters, "plain")
    result = run_cli("mirror", "status", "--link", "copy", "--json", config=str(mirror.config))
    assert result.code == 0, result.stderr
    status = json.loads(result.stdout)["links"][0]
    assert status["state"] == "running"
    plain = [p for p in status["partitions"] if p["topic"] == _topic("plain")]
    assert len(plain) == 3
    assert all(p["lag"] == 0 and p["source_end"] == p["target_end"] == 1000 for p in plain)
