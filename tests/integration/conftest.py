"""Real brokers for the integration tests, started once per session.

By default a fresh sandbox (clusters `source` and `target`, one broker and one Schema
Registry each) runs in a temporary directory and is purged at the end. To test against
clusters that already run, set KMIGRATE_TEST_CONFIG to their clusters.yaml (and
KMIGRATE_TEST_SOURCE / KMIGRATE_TEST_TARGET if they are not named source and target).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kmigrate.config import SANDBOX_CONFIG_NAME, ClusterConfig, Settings, load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.sandbox import manager
from kmigrate.sandbox.cds_build import ensure_archives
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION
from kmigrate.sandbox.state import SandboxState, load_state


@dataclass(frozen=True)
class Clusters:
    settings: Settings
    config_path: Path
    source: ClusterConfig
    target: ClusterConfig
    sandbox_dir: Path | None


@pytest.fixture(scope="session")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clusters]:
    existing = os.environ.get("KMIGRATE_TEST_CONFIG")
    if existing:
        settings = load_settings(existing)
        yield Clusters(
            settings,
            Path(existing),
            settings.cluster(os.environ.get("KMIGRATE_TEST_SOURCE", "source")),
            settings.cluster(os.environ.get("KMIGRATE_TEST_TARGET", "target")),
            None,
        )
        return
    directory = tmp_path_factory.mktemp("sandbox")
    ensure_archives(DEFAULT_KAFKA_VERSION, lambda _: None)  # made by `make jars` already
    manager.up(directory, manager.UpRequest(schema_registry=True))
    try:
        path = directory / SANDBOX_CONFIG_NAME
        settings = load_settings(path)
        yield Clusters(
            settings, path, settings.cluster("source"), settings.cluster("target"), directory
        )
    finally:
        manager.down(directory, purge=True, grace=10)


@pytest.fixture
def source_admin(clusters: Clusters) -> Iterator[ClusterAdmin]:
    with ClusterAdmin(clusters.source) as admin:
        yield admin


@pytest.fixture
def target_admin(clusters: Clusters) -> Iterator[ClusterAdmin]:
    with ClusterAdmin(clusters.target) as admin:
        yield admin


@pytest.fixture(scope="session")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxState]:
    """Two SASL/SCRAM clusters with the standard authorizer: `locked` and `vault`."""
    directory = tmp_path_factory.mktemp("secure")
    manager.up(directory, manager.UpRequest(clusters=["locked", "vault"], secure=True))
    try:
        yield load_state(directory.resolve())
    finally:
        manager.down(directory, purge=True, grace=10)
