"""One real PostgreSQL server for the store tests (see postgres.py), started once per
session; no Kafka broker is involved."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.store.postgres import postgres_server


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with postgres_server(tmp_path_factory.mktemp("pg")) as url:
        yield url
