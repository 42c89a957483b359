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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.fspath)).parts
        if "unit" in parts:
            item.add_marker(pytest.mark.unit)
        elif "integration" in parts:
            item.add_marker(pytest.mark.integration)
