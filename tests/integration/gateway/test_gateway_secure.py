"""Backends that require SASL/SCRAM (the session's `locked` and `vault` clusters, with
an authorizer): the gateway authenticates with the credentials of clusters.yaml while
its clients connect in plaintext, and no password reaches its log."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.gateway import Gateway, running_gateway
from harness.helpers import unique
from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.sandbox.clusters_yaml import load_passwords
from kmigrate.sandbox.state import SandboxState
from tests.integration.gateway.test_gateway_clients import _consume, _produce, _route


@pytest.fixture(scope="module")
def scram_gateway(
    secure: SandboxState, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    folder = tmp_path_factory.mktemp("gateway-scram").resolve()
    with running_gateway(secure.directory / "clusters.yaml", folder, group_home="vault") as gw:
        yield gw


def test_scram_backends_serve_plaintext_clients(
    secure: SandboxState, scram_gateway: Gateway
) -> None:
    settings = load_settings(scram_gateway.config)
    topic = unique("gw-scram")
    with ClusterAdmin(settings.cluster("locked")) as admin:
        admin.create_topic(topic, 2)
    _route(scram_gateway, topic, "locked")  # also creates it on the group home, `vault`
    values = [f"s-{n}".encode() for n in range(200)]
    assert _produce(scram_gateway.bootstrap, topic, values) == set(values)
    seen = _consume(scram_gateway.bootstrap, [topic], unique("gw-scram-group"), 200)
    assert sorted(seen) == sorted(values)
    logs = "".join(scram_gateway.log_tail(i) for i in scram_gateway.ports)
    for cluster in ("locked", "vault"):
        for password in load_passwords(secure.directory, cluster).values():
            assert password not in logs
