"""Markers by folder: tests/unit are `unit`, tests/integration are `integration`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Same jar cache as the Makefile, so running pytest directly does not download again.
os.environ.setdefault("KMIGRATE_CACHE", str(ROOT / ".cache"))
# Every Spark JVM the tests start (in-process and in `kmigrate` subprocesses) logs to
# one file under .cache instead of one /tmp file per process.
os.environ.setdefault("KMIGRATE_SPARK_LOG", str(ROOT / ".cache" / "spark-tests.log"))


# Left out of `make test-fast`: each runs a mirror or verify on Spark, or starts clusters
# of its own (3 brokers, Kafka 3.9). `make test` runs everything.
SLOW = (
    "integration/mirror/test_mirror_copy.py",
    "integration/mirror/test_mirror_safety.py",
    "integration/mirror/test_mirror_standalone.py",
    "integration/mirror/test_ride_through.py",
    "integration/migration/",
    "integration/verify/",
    "integration/groups/",
    "integration/store/test_postgres_migration.py",
    "integration/test_sandbox.py",
    "integration/test_sandbox_zookeeper.py",
    "integration/zk/",
    "integration/kraft/",
    "integration/serve/test_console.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.fspath))
        parts = path.parts
        if "unit" in parts:
            item.add_marker(pytest.mark.unit)
        elif "integration" in parts:
            item.add_marker(pytest.mark.integration)
        if any(slow in path.as_posix() for slow in SLOW):
            item.add_marker(pytest.mark.slow)
