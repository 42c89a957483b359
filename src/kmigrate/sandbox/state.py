"""What a sandbox run directory holds: its clusters, brokers, ports and pids (sandbox.json)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

STATE_FILE = "sandbox.json"
SCRAM_MECHANISM = "SCRAM-SHA-512"
ADMIN_USER = "admin"
CLIENT_USER = "client"
MAX_BROKERS = 6  # brokers per sandbox cluster (`sandbox up --brokers`)


@dataclass(frozen=True)
class BrokerNode:
    node_id: int
    port: int
    controller_port: int
    rack: str
    voter: bool
    pid: int | None = None

    def folder(self, cluster_dir: Path) -> Path:
        return cluster_dir / f"broker-{self.node_id}"


@dataclass(frozen=True)
class ControllerNode:
    """A KRaft controller added to a ZooKeeper-mode cluster by a KRaft migration."""

    node_id: int
    port: int
    pid: int | None = None

    def folder(self, cluster_dir: Path) -> Path:
        return cluster_dir / f"controller-{self.node_id}"


@dataclass(frozen=True)
class RegistryNode:
    """A cluster's Schema Registry (memory storage: a restart forgets its schemas)."""

    port: int
    pid: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass(frozen=True)
class SandboxCluster:
    name: str
    cluster_id: str
    kafka_version: str
    secure: bool
    brokers: tuple[BrokerNode, ...]
    # ZooKeeper mode (Kafka 3.9.x): the broker's zookeeper.connect, as "host:port,.../chroot".
    # None: KRaft.
    zookeeper_connect: str | None = None
    # KRaft controllers a migration to KRaft provisioned (ZooKeeper-mode clusters only).
    controllers: tuple[ControllerNode, ...] = ()
    # Its own Schema Registry (`sandbox up --schema-registry`); None: it has none.
    schema_registry: RegistryNode | None = None
    # Clients reach its brokers over TLS (`sandbox up --tls`): SSL, or SASL_SSL if secure.
    tls: bool = False
    # ZooKeeper mode, secure: brokers talk to each other on a PLAINTEXT listener of their
    # own (INTERNAL, on controller_port) and clients on SASL; everyone allowed where no
    # ACL names a resource (`sandbox up --secure --internal-plaintext`).
    internal_plaintext: bool = False
    # With tls: the brokers ask every client for a certificate of the cluster's CA and name
    # principals by its common name (`sandbox up --mtls`); ZooKeeper mode: the brokers' and
    # the admin's certificates are the super users, nobody else is allowed without an ACL.
    mtls: bool = False

    @property
    def listener(self) -> str:
        """The security protocol (and name) of its one client and inter-broker listener."""
        if self.tls:
            return "SASL_SSL" if self.secure else "SSL"
        return "SASL_PLAINTEXT" if self.secure else "PLAINTEXT"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers)

    @property
    def voters(self) -> str:
        return ",".join(
            f"{b.node_id}@127.0.0.1:{b.controller_port}" for b in self.brokers if b.voter
        )

    def with_broker(self, broker: BrokerNode) -> SandboxCluster:
        brokers = tuple(broker if b.node_id == broker.node_id else b for b in self.brokers)
        return replace(self, brokers=brokers)

    def with_controller(self, node: ControllerNode) -> SandboxCluster:
        others = tuple(c for c in self.controllers if c.node_id != node.node_id)
        return replace(self, controllers=tuple(sorted((*others, node), key=lambda c: c.node_id)))

    def without_controller(self, node_id: int) -> SandboxCluster:
        return replace(self, controllers=tuple(c for c in self.controllers if c.node_id != node_id))


@dataclass(frozen=True)
class ZkNode:
    """One ZooKeeper server of an ensemble: its id (myid) and ports, and its pid."""

    node_id: int
    client_port: int
    quorum_port: int
    election_port: int
    pid: int | None = None

    def folder(self, ensemble_dir: Path) -> Path:
        return ensemble_dir / f"zk-{self.node_id}"

    @property
    def server_line(self) -> str:
        """Its line in ZooKeeper's dynamic configuration."""
        return (
            f"server.{self.node_id}=127.0.0.1:{self.quorum_port}:{self.election_port}"
            f":participant;127.0.0.1:{self.client_port}"
        )


@dataclass(frozen=True)
class SandboxEnsemble:
    """A ZooKeeper ensemble, run from the jar set of Kafka ``kafka_version`` (3.9.x
    ships ZooKeeper's server)."""

    name: str
    kafka_version: str
    nodes: tuple[ZkNode, ...]

    @property
    def connect(self) -> str:
        return ",".join(f"127.0.0.1:{n.client_port}" for n in self.nodes)

    def with_node(self, node: ZkNode) -> SandboxEnsemble:
        nodes = tuple(node if n.node_id == node.node_id else n for n in self.nodes)
        return replace(self, nodes=nodes)


@dataclass(frozen=True)
class SandboxState:
    directory: Path
    clusters: dict[str, SandboxCluster] = field(default_factory=dict)
    ensembles: dict[str, SandboxEnsemble] = field(default_factory=dict)

    def cluster_dir(self, name: str) -> Path:
        return self.directory / name

    def ensemble_dir(self, name: str) -> Path:
        return self.directory / "zookeeper" / name

    def with_cluster(self, cluster: SandboxCluster) -> SandboxState:
        return replace(self, clusters={**self.clusters, cluster.name: cluster})

    def with_ensemble(self, ensemble: SandboxEnsemble) -> SandboxState:
        return replace(self, ensembles={**self.ensembles, ensemble.name: ensemble})

    def save(self) -> None:
        """Write sandbox.json atomically, so a crash never leaves half a state file."""
        self.directory.mkdir(parents=True, exist_ok=True)
        data = {
            "clusters": {n: asdict(c) for n, c in sorted(self.clusters.items())},
            "ensembles": {n: asdict(e) for n, e in sorted(self.ensembles.items())},
        }
        tmp = self.directory / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        os.replace(tmp, self.directory / STATE_FILE)


def load_state(directory: Path) -> SandboxState:
    path = directory / STATE_FILE
    if not path.is_file():
        return SandboxState(directory)
    data = json.loads(path.read_text())
    clusters = {}
    for name, c in data.get("clusters", {}).items():
        brokers = tuple(BrokerNode(**b) for b in c.pop("brokers"))
        controllers = tuple(ControllerNode(**n) for n in c.pop("controllers", ()))
        registry = c.pop("schema_registry", None)
        clusters[name] = SandboxCluster(
            brokers=brokers,
            controllers=controllers,
            schema_registry=RegistryNode(**registry) if registry else None,
            **c,
        )
    ensembles = {}
    for name, e in data.get("ensembles", {}).items():
        nodes = tuple(ZkNode(**n) for n in e.pop("nodes"))
        ensembles[name] = SandboxEnsemble(nodes=nodes, **e)
    return SandboxState(directory, clusters, ensembles)
