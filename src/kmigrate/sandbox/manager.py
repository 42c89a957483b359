"""`kmigrate sandbox up | down | status`: real Apache Kafka clusters (KRaft, or ZooKeeper
mode on 3.9.x), their Schema Registries and ZooKeeper ensembles on 127.0.0.1.

``up`` is idempotent: clusters whose brokers all live are left alone, dead brokers
of a known cluster are restarted on their own data and ports (a ZooKeeper-mode
broker once its previous session has expired), unknown clusters are created. A
cluster's Schema Registry likewise: left alone while it lives, restarted on its port
(empty: memory storage) when dead, added with ``schema_registry``. It returns only
when every broker's process lives and the broker answers on its own endpoint
(``readiness``), and every registry answers; otherwise (an error, an exception,
Ctrl-C) it stops what it started, records that, and fails with the last log lines.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from kmigrate.errors import ConfigError, SandboxError
from kmigrate.net import free_ports
from kmigrate.sandbox import process, readiness, schema_registry, tls, zookeeper
from kmigrate.sandbox.clusters_yaml import (
    new_passwords,
    write_clusters_yaml,
)
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars, jars_cached, supported
from kmigrate.sandbox.node_files import (
    broker_log_flag,
    broker_properties,
    write_broker_files,
)
from kmigrate.sandbox.properties import (
    read_properties,
)
from kmigrate.sandbox.scram import write_users
from kmigrate.sandbox.state import (
    ADMIN_USER,
    CLIENT_USER,
    MAX_BROKERS,
    SCRAM_MECHANISM,
    BrokerNode,
    RegistryNode,
    SandboxCluster,
    SandboxState,
    ZkNode,
    load_state,
)
from kmigrate.sandbox.teardown import KINDS, Stopped, down, down_targets

# `manager` is the sandbox's way up and down: `down` and its kin live in teardown.py.
__all__ = [
    "DEFAULT_CLUSTERS",
    "MAX_BROKERS",
    "Stopped",
    "UpRequest",
    "down",
    "down_targets",
    "load_state",
    "stop_broker",
    "up",
]

DEFAULT_CLUSTERS = ("source", "target")
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")

Report = Callable[[str], None]


@dataclass(frozen=True)
class UpRequest:
    clusters: Sequence[str] = DEFAULT_CLUSTERS
    brokers: int = 1
    kafka_version: str | None = None
    secure: bool = False
    racks: Sequence[str] | None = None
    timeout: float = 120.0
    # "NAME[/chroot]": the clusters run in ZooKeeper mode on that ensemble (made if new).
    zookeeper: str | None = None
    ensembles: Sequence[str] = ()  # ensembles to bring up (besides ``zookeeper``'s)
    nodes: int = 3  # servers of a new ensemble
    schema_registry: bool = False  # give each cluster a Schema Registry if it has none
    tls: bool = False  # clients and brokers talk TLS (a CA of the cluster's own)
    internal_plaintext: bool = False  # secure ZooKeeper mode: brokers talk PLAINTEXT inside
    mtls: bool = False  # with tls, ZooKeeper mode: client certificates name every principal

    def ensemble_names(self) -> list[str]:
        names = list(self.ensembles)
        if self.zookeeper:
            name = _split_zookeeper(self.zookeeper)[0]
            if name not in names:
                names.append(name)
        return names


def _split_zookeeper(value: str) -> tuple[str, str]:
    """ "zk/kafka" -> ("zk", "/kafka"); "zk" -> ("zk", "")."""
    name, _, chroot = value.partition("/")
    return name, f"/{chroot.strip('/')}" if chroot.strip("/") else ""


def up(directory: Path, request: UpRequest, report: Report = lambda _: None) -> SandboxState:
    """Bring every requested cluster to 'all brokers answering' (and its Schema Registry,
    if it has or is asked for one, to answering). Changes nothing if they do.
    On any failure (an error, an exception, Ctrl-C) it stops what this call started,
    and only that, and records them as stopped."""
    _check_request(request)
    directory = directory.resolve()
    if request.schema_registry and request.clusters:
        # Go missing or a failed build fails here, before anything starts.
        schema_registry.ensure_registry(report)
    run = _Started(directory)
    try:
        state = load_state(directory)
        for name in request.ensemble_names():
            state = _ensemble_up(state, name, request, report, run)
        for name in request.clusters:
            cluster = state.clusters.get(name)
            if cluster is None:
                cluster = _new_cluster(directory, name, request, report, state)
            else:
                _check_matches(cluster, request, directory)
                cluster = _grown(directory, cluster, request, report)
            state = _start_dead_brokers(state, cluster, report, run)
            state = _start_registry(state, state.clusters[name], request, report, run)
        write_clusters_yaml(state)
        for name in request.clusters:
            readiness.wait_ready(state, state.clusters[name], request.timeout, report)
            _wait_registry(state, state.clusters[name], request.timeout)
    except BaseException:
        run.stop()
        raise
    return state


class _Started:
    """The processes one `up` started: on failure it stops them (never others) and
    records them as stopped in sandbox.json."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.before = set(_own_processes(directory))  # what ran before this `up`
        # pid: (its cluster or ensemble, the file its command line names)
        self.brokers: dict[int, tuple[str, Path]] = {}
        self.nodes: dict[int, tuple[str, Path]] = {}
        self.registries: dict[int, tuple[str, Path]] = {}

    def stop(self) -> None:
        clusters = {**self.brokers, **self.registries}
        # ... and any process of this sandbox that ran only since, recorded or not
        unrecorded = {
            pid: path
            for pid, path in _own_processes(self.directory).items()
            if pid not in self.before and pid not in clusters and pid not in self.nodes
        }
        process.stop_processes({pid: p for pid, (_, p) in clusters.items()}, grace=5.0)
        process.stop_processes(unrecorded, grace=5.0)
        process.stop_processes({pid: p for pid, (_, p) in self.nodes.items()}, grace=5.0)
        if not (clusters or self.nodes):
            return
        state = load_state(self.directory)
        for name, cluster in state.clusters.items():
            brokers = tuple(_stopped(b, name, self.brokers) for b in cluster.brokers)
            registry = cluster.schema_registry
            if registry is not None:
                registry = _stopped(registry, name, self.registries)
            state = state.with_cluster(replace(cluster, brokers=brokers, schema_registry=registry))
        for name, ensemble in state.ensembles.items():
            nodes = tuple(_stopped(n, name, self.nodes) for n in ensemble.nodes)
            state = state.with_ensemble(replace(ensemble, nodes=nodes))
        state.save()
        write_clusters_yaml(state)


def _own_processes(directory: Path) -> dict[int, Path]:
    """Every live process whose command line names one of this sandbox's files."""
    return process.processes_naming(directory, list(KINDS))


_Node = TypeVar("_Node", BrokerNode, ZkNode, RegistryNode)


def _stopped(node: _Node, name: str, started: dict[int, tuple[str, Path]]) -> _Node:
    """``node`` without its pid if that pid is one ``started`` in ``name``."""
    return replace(node, pid=None) if node.pid and started.get(node.pid, ("",))[0] == name else node


def _ensemble_up(
    state: SandboxState, name: str, request: UpRequest, report: Report, run: _Started
) -> SandboxState:
    """Create the ensemble if new, start its dead nodes, wait for its quorum."""
    folder = state.ensemble_dir(name)
    ensemble = state.ensembles.get(name)
    if ensemble is None:
        report(f"{name}: creating a ZooKeeper ensemble of {request.nodes} node(s)")
        # Server ids unique across the sandbox's ensembles: an ensemble move joins one
        # ensemble's servers to another's, and ZooKeeper needs distinct ids for that.
        taken = [n.node_id for e in state.ensembles.values() for n in e.nodes]
        first_id = max(taken, default=0) + 1
        ensemble = zookeeper.new_ensemble(folder, name, request.nodes, report, first_id)

    def started(node: ZkNode) -> None:
        nonlocal state
        run.nodes[node.pid or 0] = (name, zookeeper.node_config_path(folder, node))
        state = state.with_ensemble(state.ensembles[name].with_node(node))
        state.save()  # known before it serves: `sandbox down` finds it

    state = state.with_ensemble(ensemble)
    ensemble = zookeeper.start_dead_nodes(folder, ensemble, report, started)
    state = state.with_ensemble(ensemble)
    state.save()
    write_clusters_yaml(state)
    zookeeper.wait_ready(folder, ensemble, request.timeout, report)
    return state


# ---------------------------------------------------------------- creation


def _check_request(request: UpRequest) -> None:
    """The request's own mistakes (usage, exit 2), before anything starts."""
    if not 1 <= request.brokers <= MAX_BROKERS:
        raise ConfigError(f"--brokers must be between 1 and {MAX_BROKERS}")
    for name in request.clusters:
        if not _NAME.match(name):
            raise ConfigError(
                f"cluster name '{name}' is not valid; use lowercase letters, digits and '-'"
            )
    if request.racks is not None and len(request.racks) != request.brokers:
        raise ConfigError(f"--racks needs exactly {request.brokers} label(s), one per broker")
    if not 1 <= request.nodes <= zookeeper.MAX_NODES:
        raise ConfigError(f"--nodes must be between 1 and {zookeeper.MAX_NODES}")
    for name in request.ensemble_names():
        if not _NAME.match(name):
            raise ConfigError(
                f"ZooKeeper ensemble name '{name}' is not valid; use lowercase letters, "
                "digits and '-'"
            )
    version = request.kafka_version
    if version and not supported(version):
        raise ConfigError(
            f"Kafka {version} is not supported by the sandbox; use a 4.x or 3.9.x version"
        )
    if request.internal_plaintext and not (request.secure and request.zookeeper):
        raise ConfigError("--internal-plaintext needs --secure and --zookeeper")
    if request.mtls and (request.secure or not (request.tls and request.zookeeper)):
        raise ConfigError("--mtls needs --tls and --zookeeper, without --secure")
    if request.zookeeper and version and not version.startswith("3.9."):
        raise ConfigError(
            f"Kafka {version} has no ZooKeeper mode; use --kafka-version 3.9.1 with --zookeeper"
        )


def _check_matches(cluster: SandboxCluster, request: UpRequest, directory: Path) -> None:
    wanted_version = request.kafka_version or cluster.kafka_version
    have = (cluster.secure, cluster.tls, cluster.internal_plaintext, cluster.mtls,
            cluster.kafka_version)  # fmt: skip
    wanted = (request.secure, request.tls, request.internal_plaintext, request.mtls,
              wanted_version)  # fmt: skip
    if have != wanted or (request.brokers < len(cluster.brokers)):
        raise SandboxError(
            f"cluster '{cluster.name}' already exists in {directory} with "
            f"{len(cluster.brokers)} broker(s), secure={cluster.secure}, tls={cluster.tls}, Kafka "
            f"{cluster.kafka_version}; run `kmigrate sandbox down --purge --cluster "
            f"{cluster.name}` first or use another --dir (a cluster can grow, not shrink)"
        )
    if request.brokers > len(cluster.brokers) and cluster.secure:
        raise SandboxError(
            f"cluster '{cluster.name}' is secure: growing it is not supported; start a new one"
        )


def _grown(
    directory: Path, cluster: SandboxCluster, request: UpRequest, report: Report
) -> SandboxCluster:
    """``cluster`` with brokers added up to ``request.brokers`` (broker-only nodes: the
    controller quorum stays as it is), their files written and storage formatted."""
    have = len(cluster.brokers)
    if request.brokers <= have:
        return cluster
    first = max(b.node_id for b in cluster.brokers) + 1
    ports = free_ports(2 * (request.brokers - have))
    racks = list(request.racks or [])
    added = []
    for i in range(request.brokers - have):
        node_id = first + i
        rack = racks[have + i] if racks else f"rack-{node_id}"
        added.append(BrokerNode(node_id, ports[2 * i], ports[2 * i + 1], rack, voter=False))
    cluster = replace(cluster, brokers=(*cluster.brokers, *added))
    report(f"{cluster.name}: adding broker(s) {', '.join(str(b.node_id) for b in added)}")
    formatting = []
    for broker in added:
        props = write_broker_files(directory, cluster, broker, None)
        if cluster.zookeeper_connect is None:
            formatting.append(
                (
                    props,
                    process.format_storage(
                        ensure_jars(cluster.kafka_version),
                        props,
                        cluster.cluster_id,
                        [],
                        broker_log_flag(directory, cluster, broker),
                    ),
                )
            )
    process.wait_formatted(formatting)
    return cluster


def stop_broker(directory: Path, cluster_name: str, broker_id: int, *, kill: bool) -> None:
    """Stop one broker (controlled shutdown, or SIGKILL); `up` starts it again."""
    state = load_state(directory.resolve())
    cluster = state.clusters.get(cluster_name)
    if cluster is None:
        raise SandboxError(f"no sandbox cluster named {cluster_name} in {directory}")
    broker = next((b for b in cluster.brokers if b.node_id == broker_id), None)
    if broker is None:
        raise SandboxError(
            f"cluster {cluster_name} has no broker {broker_id} "
            f"(brokers: {', '.join(str(b.node_id) for b in cluster.brokers)})"
        )
    props = broker_properties(state.directory, cluster, broker)
    if broker.pid and process.is_ours(broker.pid, props):
        if kill:
            process.kill_process(broker.pid, props)
        else:
            process.stop_processes({broker.pid: props}, grace=60.0)
    state.with_cluster(cluster.with_broker(replace(broker, pid=None))).save()


def _new_cluster(
    directory: Path, name: str, request: UpRequest, report: Report, state: SandboxState
) -> SandboxCluster:
    connect = None
    if request.zookeeper:
        ensemble, chroot = _split_zookeeper(request.zookeeper)
        connect = state.ensembles[ensemble].connect + chroot
    version = request.kafka_version or (
        zookeeper.ZOOKEEPER_KAFKA_VERSION if connect else DEFAULT_KAFKA_VERSION
    )
    if not jars_cached(version):
        report(f"{name}: fetching Kafka {version} jars from Maven Central (once)")
    jars = ensure_jars(version)
    n = request.brokers
    ports = free_ports(2 * n)
    racks = list(request.racks or [f"rack-{i + 1}" for i in range(n)])
    voters = 1 if n < 3 else 3  # two voters would need both alive: worse than one
    brokers = tuple(
        BrokerNode(
            node_id=i + 1,
            port=ports[2 * i],
            controller_port=ports[2 * i + 1],
            rack=racks[i],
            voter=i < voters,
        )
        for i in range(n)
    )
    cluster = SandboxCluster(
        name, _cluster_id(), version, request.secure, brokers, connect, tls=request.tls,
        internal_plaintext=request.internal_plaintext, mtls=request.mtls,
    )  # fmt: skip
    if request.tls:
        tls.ensure_certificates(directory / name, name, (ADMIN_USER, CLIENT_USER))
    passwords = new_passwords(directory, name) if request.secure else {}
    if connect:
        # ZooKeeper mode: no storage to format; the broker registers in ZooKeeper, and
        # finds the SCRAM credentials there.
        for broker in brokers:
            write_broker_files(directory, cluster, broker, passwords.get(ADMIN_USER))
        if passwords:
            write_users(connect, passwords)
        return cluster
    report(f"{name}: formatting {n} broker(s)")
    formatting = []
    for broker in brokers:
        props = write_broker_files(directory, cluster, broker, passwords.get(ADMIN_USER))
        scram = [f"{SCRAM_MECHANISM}=[name={user},password={pw}]" for user, pw in passwords.items()]
        formatting.append(
            (
                props,
                process.format_storage(
                    jars,
                    props,
                    cluster.cluster_id,
                    scram,
                    broker_log_flag(directory, cluster, broker),
                ),
            )
        )
    process.wait_formatted(formatting)
    return cluster


def _cluster_id() -> str:
    # The form Kafka's Uuid.toString() prints: 16 random bytes, URL-safe base64, no padding.
    # Like Kafka's Uuid.randomUuid(), never start with '-': the storage tool's argument
    # parser would read such an id as an option.
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


# ---------------------------------------------------------------- running


def _start_dead_brokers(
    state: SandboxState, cluster: SandboxCluster, report: Report, run: _Started
) -> SandboxState:
    """Start the brokers whose process is gone, each saved in sandbox.json once started."""
    directory = state.directory
    dead = [
        b
        for b in cluster.brokers
        if not process.is_ours(b.pid, broker_properties(directory, cluster, b))
    ]
    state = state.with_cluster(cluster)
    if not dead:
        report(f"{cluster.name}: already running ({len(cluster.brokers)} broker(s))")
        return state
    jars = ensure_jars(cluster.kafka_version)
    report(f"{cluster.name}: starting {len(dead)} broker(s), Kafka {cluster.kafka_version}")
    for old in dead:
        props = broker_properties(directory, cluster, old)
        connect = read_properties(props).get("zookeeper.connect")
        readiness.wait_unregistered(connect, old.node_id, report=report)
        with process.recording():
            pid = process.start_broker(jars, props, broker_log_flag(directory, cluster, old))
            run.brokers[pid] = (cluster.name, props)
        cluster = cluster.with_broker(replace(old, pid=pid))
        state = state.with_cluster(cluster)
        state.save()
    return state


# ---------------------------------------------------------------- Schema Registries


def _start_registry(
    state: SandboxState, cluster: SandboxCluster, request: UpRequest, report: Report, run: _Started
) -> SandboxState:
    """Start ``cluster``'s registry if it has a dead one (on its port) or none while the
    request asks for one; saved in sandbox.json once started."""
    node = cluster.schema_registry
    if node is None and not request.schema_registry:
        return state
    cluster_dir = state.cluster_dir(cluster.name)
    if node is not None and schema_registry.is_ours(node.pid, cluster_dir):
        report(f"{cluster.name}: Schema Registry already running at {node.url}")
        return state
    binary = schema_registry.ensure_registry(report)
    if node is None:
        node = RegistryNode(free_ports(1)[0])
        report(f"{cluster.name}: starting a Schema Registry at {node.url}")
    else:
        report(
            f"{cluster.name}: restarting its Schema Registry at {node.url}; it starts empty "
            "(memory storage: the schemas it held are gone)"
        )
    with process.recording():
        pid = schema_registry.start(binary, cluster_dir, node.port)
        run.registries[pid] = (cluster.name, schema_registry.config_path(cluster_dir))
    state = state.with_cluster(replace(cluster, schema_registry=replace(node, pid=pid)))
    state.save()
    return state


def _wait_registry(state: SandboxState, cluster: SandboxCluster, timeout: float) -> None:
    node = cluster.schema_registry
    if node is not None:
        cluster_dir = state.cluster_dir(cluster.name)
        schema_registry.wait_ready(cluster.name, node.pid, node.port, cluster_dir, timeout)
