"""Making the sandbox's class-data archives (sandbox/cds.py): a throwaway node in a
temporary folder, a little traffic so that the classes serving it load, then a clean
stop, at which the JVM writes every class it loaded. Written under a temporary name and
renamed once the node has exited, so a start never maps a half-written archive.

A few seconds per Kafka release, once per machine; `sandbox fetch` runs it. A failure
is reported and changes nothing else: the sandbox starts without the archive.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from kmigrate.config import SANDBOX_CONFIG_NAME, load_settings
from kmigrate.errors import KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce, read_partition
from kmigrate.model.cluster import TopicPartitionOffset
from kmigrate.model.records import Record
from kmigrate.sandbox import cds, manager
from kmigrate.sandbox.jars import ensure_jars
from kmigrate.sandbox.process import java_executable
from kmigrate.sandbox.zookeeper import ZOOKEEPER_KAFKA_VERSION

Report = Callable[[str], None]
_NODE = "cds"


def ensure_archives(version: str, report: Report) -> list[Path]:
    """The archives of Kafka ``version``'s JVMs (and ZooKeeper's server, whose jars are
    Kafka 3.9's), made now if missing; [] when turned off or when making one failed."""
    if not cds.enabled():
        return []
    jars = ensure_jars(version)
    roles = [cds.KAFKA] + ([cds.ZOOKEEPER] if version == ZOOKEEPER_KAFKA_VERSION else [])
    made = []
    for role in roles:
        target = cds.archive_path(java_executable(), jars, role)
        if not target.is_file():
            report(f"making the class-data archive of {role} {version} (once)")
            try:
                _make(role, version, target)
            except (KMigrateError, OSError) as exc:
                report(f"no class-data archive for {role} {version} ({exc}); nodes start without")
                continue
        made.append(target)
    return made


def _make(role: str, version: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        with tempfile.TemporaryDirectory(prefix="kmigrate-cds-") as tmp, cds.dumping(role, partial):
            folder = Path(tmp)
            try:
                if role == cds.KAFKA:
                    manager.up(folder, manager.UpRequest(clusters=[_NODE], kafka_version=version))
                    _traffic(folder)
                else:
                    manager.up(folder, manager.UpRequest(clusters=[], ensembles=[_NODE], nodes=1))
            finally:
                manager.down(folder, purge=True, grace=60)  # the JVM writes as it exits
        if not partial.is_file():
            raise KMigrateError("the node exited without writing it")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _traffic(folder: Path) -> None:
    """Create a topic, write, read and commit: the classes of the requests every test
    and demo sends."""
    cluster = load_settings(folder / SANDBOX_CONFIG_NAME).cluster(_NODE)
    with ClusterAdmin(cluster) as admin:
        admin.create_topic("cds", 2)
        produce(cluster, "cds", [Record(b"k", b"v" * 100, partition=p) for p in (0, 1)] * 50)
        for partition in (0, 1):
            read_partition(cluster, "cds", partition, 0, 100)
        admin.alter_group_offsets("cds", [TopicPartitionOffset("cds", 0, 1)])
