"""Shared data for the verify tests: a link whose target was written by the test
itself, one topic per defect, and its offset map recorded the way the mirror records a
faithful copy (so every defect is one the mirror would have had to make)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.helpers import unique
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.model.links import Link, TopicState
from kmigrate.model.offsets import OffsetRun, PartitionUpdate
from kmigrate.model.records import Record
from kmigrate.store import store_for
from kmigrate.store.links import put_topic, save_link
from kmigrate.store.offsets import record_batch, start_partition
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import mirror_config

N = 2500  # records per topic: crosses verify's 1,000-record chunks
AT = 1500  # where each defect is (inside the second chunk)
DEFECTS = ("same", "extra", "missing", "header", "timestamp", "swapped")


def source_records(topic: str, n: int = N, partition: int = 0) -> list[Record]:
    t0 = int(time.time() * 1000) - 3_600_000
    return [
        Record(
            f"k{i}".encode(),
            f"{topic}-v{i}".encode(),
            (("h", str(i).encode()), ("bin", b"\x00\xff\\")),
            t0 + i,
            partition,
        )
        for i in range(n)
    ]


def tampered(kind: str, records: list[Record]) -> list[Record]:
    r = list(records)
    if kind == "extra":
        r.insert(AT, Record(b"intruder", b"not from the source", (), r[AT].timestamp, 0))
    elif kind == "missing":
        del r[AT]
    elif kind == "header":
        old = r[AT]
        r[AT] = Record(old.key, old.value, (("h", b"changed"), old.headers[1]), old.timestamp, 0)
    elif kind == "timestamp":
        old = r[AT]
        r[AT] = Record(old.key, old.value, old.headers, (old.timestamp or 0) + 1, 0)
    elif kind == "swapped":
        r[AT], r[AT + 1] = r[AT + 1], r[AT]
    return r


@dataclass(frozen=True)
class FakeLink:
    config: Path
    name: str
    topics: dict[str, str]  # defect -> topic


@pytest.fixture(scope="package")
def fake_link(clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> FakeLink:
    folder = tmp_path_factory.mktemp("verify")
    config = mirror_config(clusters.config_path, folder)
    prefix = unique("vrf")
    topics = {kind: f"{prefix}-{kind}" for kind in DEFECTS}
    store = store_for(load_settings(config))
    name = "tampered"
    save_link(store, Link(name, "source", "target", f"{prefix}-.*"))
    with ClusterAdmin(clusters.source) as src, ClusterAdmin(clusters.target) as tgt:
        for kind, topic in topics.items():
            src.create_topic(topic, 1)
            tgt.create_topic(topic, 1)
            records = source_records(topic)
            produce(clusters.source, topic, records)
            produce(clusters.target, topic, tampered(kind, records))
            put_topic(store, name, topic, 1, TopicState.MIRRORING)
            start_partition(store, name, topic, 0, 0, 0)
            record_batch(store, name, [PartitionUpdate(topic, 0, (OffsetRun(0, 0, N),), N, None)])
    return FakeLink(config, name, topics)
