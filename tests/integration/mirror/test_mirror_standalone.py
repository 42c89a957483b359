"""The same mirror job on a real Spark standalone cluster: executors are other processes
with their own working directories, so nothing may rely on the driver's memory or disk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.helpers import unique
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.spark.standalone import StandaloneSpark
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import (
    MirrorProcess,
    assert_exact_copy,
    mirror_config,
    wait_caught_up,
)
from tests.integration.mirror.test_mirror_safety import _batch


@pytest.fixture
def spark_cluster(tmp_path: Path) -> Iterator[StandaloneSpark]:
    cluster = StandaloneSpark(tmp_path / "spark").start()
    yield cluster
    cluster.stop()


def test_mirror_runs_unchanged_on_spark_standalone(
    clusters: Clusters, spark_cluster: StandaloneSpark, tmp_path: Path
) -> None:
    topic = unique("standalone")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 3)
    produce(clusters.source, topic, _batch(0, 3000, 3))
    config = mirror_config(clusters.config_path, tmp_path)
    mirror = MirrorProcess(
        config,
        "standalone",
        (
            "--source",
            "source",
            "--target",
            "target",
            "--topics",
            topic,
            "--master",
            spark_cluster.url,
        ),
        tmp_path / "mirror.log",
    ).start()
    mirror.wait_running(timeout=180)
    wait_caught_up(mirror, clusters.source, [topic])
    assert mirror.stop() == 0, mirror.tail()
    assert assert_exact_copy(config, "standalone", clusters.source, clusters.target, topic) == 3000
    # The writer really ran in the worker's executors, not in the driver.
    executor_logs = list((tmp_path / "spark" / "work").rglob("stderr"))
    assert executor_logs, "no executor ran on the standalone worker"
