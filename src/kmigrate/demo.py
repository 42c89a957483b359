"""What `kmigrate demo` (and `make demo`) shows, until the mirror exists: two real clusters,
a topic with records on `source`, and both clusters' topics."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kmigrate.config import SANDBOX_CONFIG_NAME, Settings, load_settings
from kmigrate.errors import TopicExistsError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.models import Record
from kmigrate.sandbox import manager

DEMO_TOPIC = "demo.orders"
DEMO_PARTITIONS = 6


@dataclass(frozen=True)
class DemoResult:
    settings: Settings
    topic: str
    produced: int
    seconds: float


def run_demo(directory: Path, records: int, report: Callable[[str], None]) -> DemoResult:
    """Start (or reuse) the sandbox, create the demo topic on `source`, produce ``records``."""
    started = time.monotonic()
    manager.up(directory, manager.UpRequest(), report=report)
    settings = load_settings(directory / SANDBOX_CONFIG_NAME)
    source = settings.cluster("source")
    with ClusterAdmin(source) as admin:
        try:
            admin.create_topic(
                DEMO_TOPIC, DEMO_PARTITIONS, configs={"retention.ms": str(7 * 24 * 3600 * 1000)}
            )
            report(f"source: created topic {DEMO_TOPIC} with {DEMO_PARTITIONS} partitions")
        except TopicExistsError:
            report(f"source: topic {DEMO_TOPIC} exists; adding records")
    now = int(time.time() * 1000)
    batch = [
        Record(
            f"customer-{i % 97}".encode(),
            f'{{"order": {i}}}'.encode(),
            (("source", b"kmigrate-demo"),),
            now + i,
        )
        for i in range(records)
    ]
    produce(source, DEMO_TOPIC, batch)
    report(f"source: produced {records} records to {DEMO_TOPIC}")
    return DemoResult(settings, DEMO_TOPIC, records, time.monotonic() - started)
