"""The ZooKeeper-move tests' sandboxes: ensembles `old` (servers 1-3) and `new` (4-6,
empty), and cluster `legacy` in ZooKeeper mode on old/kafka. Each module that changes
them starts its own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kmigrate.sandbox import manager


@contextmanager
def old_and_new(
    tmp_path_factory: pytest.TempPathFactory, prefix: str, brokers: int = 1
) -> Iterator[Path]:
    """A fresh sandbox folder with both ensembles and the cluster, purged after."""
    directory = tmp_path_factory.mktemp(prefix).resolve()
    manager.up(directory, manager.UpRequest(clusters=[], ensembles=["old", "new"]))
    try:
        manager.up(
            directory,
            manager.UpRequest(clusters=["legacy"], brokers=brokers, zookeeper="old/kafka"),
        )
        yield directory
    finally:
        manager.down(directory, purge=True, grace=5)
