"""One mirror for the groups tests (Spark start-up is the slow part), on a regex that
matches every topic made with ``topic_of``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.helpers import unique
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.model.records import Record
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import (
    MirrorProcess,
    compacted_with_gaps,
    mirror_config,
    transactional,
)

PREFIX = unique("grp")
LINK = "groups"


def topic_of(kind: str) -> str:
    return f"{PREFIX}-{kind}"


def records(topic: str, start: int, n: int, partitions: int) -> list[Record]:
    return [
        Record(f"k{i}".encode(), f"{topic}-{i}".encode(), partition=i % partitions)
        for i in range(start, start + n)
    ]


def new_mirror(clusters: Clusters, folder: Path, link: str, *args: str) -> MirrorProcess:
    return MirrorProcess(
        mirror_config(clusters.config_path, folder),
        link,
        ("--source", "source", "--target", "target", "--interval", "2s", *args),
        folder / f"{link}.log",
    )


@pytest.fixture(scope="package")
def mirror(clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MirrorProcess]:
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic_of("plain"), 3)
        admin.create_topic(topic_of("txn"), 2)
        admin.create_topic(topic_of("sync"), 2)
    produce(clusters.source, topic_of("plain"), records(topic_of("plain"), 0, 3000, 3))
    produce(clusters.source, topic_of("sync"), records(topic_of("sync"), 0, 2000, 2))
    transactional(clusters.source, topic_of("txn"), rounds=20)
    compacted_with_gaps(clusters.source, topic_of("compact"))
    process = new_mirror(
        clusters, tmp_path_factory.mktemp("groups"), LINK, "--topics", f"{PREFIX}-.*"
    ).start()
    process.wait_running()
    yield process
    process.stop()
