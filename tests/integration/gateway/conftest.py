"""A two-instance gateway in front of the session's two clusters (`source`, `target`),
its routes in a one-server ZooKeeper ensemble of its own; group home: `target`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.gateway import Gateway, running_gateway
from tests.integration.conftest import Clusters


@pytest.fixture(scope="session")
def gateway(clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    folder = tmp_path_factory.mktemp("gateway").resolve()
    with running_gateway(clusters.config_path, folder) as gw:
        yield gw
