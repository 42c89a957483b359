"""Where a sandbox node's files are (server.properties, controller.properties, its
logging config) and writing a broker's: what `up`, the operators' stand-ins and
`status` share."""

from __future__ import annotations

from pathlib import Path

from kmigrate.sandbox import tls
from kmigrate.sandbox.properties import logging_config, logging_flag, server_properties
from kmigrate.sandbox.state import BrokerNode, ControllerNode, SandboxCluster


def write_broker_files(
    directory: Path, cluster: SandboxCluster, broker: BrokerNode, admin_password: str | None
) -> Path:
    folder = broker.folder(directory / cluster.name)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    name, content = logging_config(cluster.kafka_version)
    (folder / name).write_text(content)
    props = folder / "server.properties"
    props.touch(mode=0o600)  # may hold the admin password
    files = tls.tls_files(directory / cluster.name)
    stores = tls.broker_properties(files, client_certificates=cluster.mtls) if cluster.tls else None
    props.write_text(server_properties(cluster, broker, folder / "data", admin_password, stores))
    return props


def broker_properties(directory: Path, cluster: SandboxCluster, broker: BrokerNode) -> Path:
    """The broker's server.properties."""
    return broker.folder(directory / cluster.name) / "server.properties"


def controller_properties(directory: Path, cluster: SandboxCluster, node: ControllerNode) -> Path:
    """A KRaft controller's controller.properties (a migration to KRaft added it)."""
    return node.folder(directory / cluster.name) / "controller.properties"


def broker_log_flag(directory: Path, cluster: SandboxCluster, broker: BrokerNode) -> str:
    """The JVM flag that points the broker at its logging config."""
    name, _ = logging_config(cluster.kafka_version)
    folder = broker.folder(directory / cluster.name)
    return logging_flag(cluster.kafka_version, folder / name)
