"""`kmigrate sandbox status`: what runs of the sandbox, read from its state and processes.

Nothing here starts or stops anything; `manager` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kmigrate.net import is_listening
from kmigrate.sandbox import process, schema_registry, zookeeper
from kmigrate.sandbox.node_files import broker_properties
from kmigrate.sandbox.readiness import serving
from kmigrate.sandbox.state import load_state


@dataclass(frozen=True)
class BrokerStatus:
    cluster: str
    node_id: int
    port: int
    rack: str
    pid: int | None
    alive: bool  # its process (the one the sandbox started) lives
    listening: bool  # ... and its port accepts connections
    serving: bool  # ... and it answers metadata on its own endpoint, listing its cluster


def status(directory: Path) -> list[BrokerStatus]:
    """Per broker: whether its process is ours and alive, whether its port accepts
    connections and whether the broker answers (a ZooKeeper registration counts for
    nothing: it outlives a stopped broker)."""
    directory = directory.resolve()
    state = load_state(directory)
    rows = []
    for name, cluster in sorted(state.clusters.items()):
        for b in cluster.brokers:
            pid = process.running_pid(b.pid, broker_properties(directory, cluster, b))
            alive = pid is not None
            listening = alive and is_listening(b.port)
            rows.append(
                BrokerStatus(
                    name,
                    b.node_id,
                    b.port,
                    b.rack,
                    pid,
                    alive,
                    listening,
                    listening and serving(state, cluster, b),
                )
            )
    return rows


@dataclass(frozen=True)
class ZkNodeStatus:
    ensemble: str
    node_id: int
    client_port: int
    pid: int | None
    alive: bool
    mode: str | None  # leader / follower / ... while it serves


def ensemble_status(directory: Path) -> list[ZkNodeStatus]:
    """Per ZooKeeper node: whether its process is ours and alive, and what it serves as."""
    directory = directory.resolve()
    state = load_state(directory)
    rows = []
    for name, ensemble in sorted(state.ensembles.items()):
        folder = state.ensemble_dir(name)
        for n in ensemble.nodes:
            pid = process.running_pid(n.pid, zookeeper.node_config_path(folder, n))
            mode = zookeeper.mode(n.client_port) if pid else None
            rows.append(ZkNodeStatus(name, n.node_id, n.client_port, pid, pid is not None, mode))
    return rows


@dataclass(frozen=True)
class RegistryStatus:
    cluster: str
    url: str
    pid: int | None
    alive: bool  # its process (the one the sandbox started) lives
    serving: bool  # ... and it answers GET /subjects


def registry_status(directory: Path) -> list[RegistryStatus]:
    """Per cluster with a Schema Registry: whether its process is ours and alive, and
    whether it answers."""
    directory = directory.resolve()
    state = load_state(directory)
    rows = []
    for name, cluster in sorted(state.clusters.items()):
        node = cluster.schema_registry
        if node is None:
            continue
        config = schema_registry.config_path(state.cluster_dir(name))
        pid = process.running_pid(node.pid, config)
        serving = pid is not None and schema_registry.answers(node.port)
        rows.append(RegistryStatus(name, node.url, pid, pid is not None, serving))
    return rows
