"""Clusters reached over TLS (`sandbox up --tls`): brokers with certificates from a CA of
their own, clusters.yaml trusting it. kmigrate's own Kafka connections (the mirror's
byte copy) and kafka-python's (quotas) use the same clusters.yaml entries as
librdkafka does, and check the brokers' certificates."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.helpers import unique
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.quotas import ClientQuotas
from kmigrate.model.quotas import Entity
from kmigrate.sandbox import manager
from kmigrate.sandbox.state import SandboxState, load_state
from tests.integration.cli_contract.harness import run_in


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxState]:
    """Two one-broker clusters, `sealed` and `vaulted`, clients over TLS only."""
    directory = tmp_path_factory.mktemp("tls")
    manager.up(directory, manager.UpRequest(clusters=["sealed", "vaulted"], tls=True))
    try:
        yield load_state(directory.resolve())
    finally:
        manager.down(directory, purge=True, grace=10)


def _config(state: SandboxState) -> Path:
    return state.directory / "clusters.yaml"


def test_the_clusters_yaml_entry_trusts_the_sandbox_ca(sealed: SandboxState) -> None:
    entry = yaml.safe_load(_config(sealed).read_text())["clusters"]["sealed"]
    assert entry["properties"]["security.protocol"] == "SSL"
    assert Path(entry["properties"]["ssl.ca.location"]).is_file()


def test_the_byte_copy_mirrors_between_tls_clusters(sealed: SandboxState, tmp_path: Path) -> None:
    """Fetch and Produce over TLS, the brokers' certificates checked against the CA and
    their host name (127.0.0.1): committed and aborted transactions and plain records
    arrive record for record."""
    from tests.integration.mirror.harness import byte_copy_checked

    assert byte_copy_checked(_config(sealed), "sealed", "vaulted", tmp_path) == 320


def test_quotas_are_copied_over_tls_by_kafka_python(sealed: SandboxState, tmp_path: Path) -> None:
    settings = load_settings(_config(sealed))
    entity: Entity = (("user", unique("tls-user")),)
    with ClientQuotas(settings.cluster("sealed")) as quotas:
        quotas.alter({entity: {"producer_byte_rate": 4096.0}})
    argv = ["--config", str(_config(sealed)), "quotas", "copy", "--source", "sealed"]
    done = run_in(tmp_path, [*argv, "--target", "vaulted"])
    assert done.code == 0, done.stderr
    with ClientQuotas(settings.cluster("vaulted")) as quotas:
        assert quotas.describe()[entity] == {"producer_byte_rate": 4096.0}


def test_the_gateway_reaches_tls_backends(
    sealed: SandboxState, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The gateway's backend connections use the clusters.yaml TLS settings: records
    written through it land on a TLS cluster and are read back through it."""
    from harness.gateway import running_gateway
    from tests.integration.gateway.test_gateway_clients import _consume, _produce, _route

    settings = load_settings(_config(sealed))
    topic = unique("gw-tls")
    with ClusterAdmin(settings.cluster("sealed")) as admin:
        admin.create_topic(topic, 2)
    folder = tmp_path_factory.mktemp("gateway-tls").resolve()
    with running_gateway(_config(sealed), folder, group_home="vaulted") as gw:
        _route(gw, topic, "sealed")
        values = [f"t-{n}".encode() for n in range(200)]
        assert _produce(gw.bootstrap, topic, values) == set(values)
        seen = _consume(gw.bootstrap, [topic], unique("gw-tls-group"), 200)
    assert sorted(seen) == sorted(values)
    with ClusterAdmin(settings.cluster("sealed")) as admin:
        assert sum(w.high for w in admin.watermarks(topic)) == 200
