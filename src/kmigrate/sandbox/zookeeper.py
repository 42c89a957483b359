"""Sandbox ZooKeeper ensembles: real ZooKeeper servers on 127.0.0.1.

They run from Kafka 3.9.x's jar set (it ships ZooKeeper 3.8's server and what it needs,
FACTS.md), with dynamic reconfiguration enabled: each node has its own ``zoo.cfg`` and
``zoo.cfg.dynamic`` (ZooKeeper rewrites the dynamic file on reconfig), ``myid`` in its
data folder, free client, quorum and election ports. A node counts as ours only while
its command line names its own ``zoo.cfg`` (pids are reused).

Rendering the files is pure; starting, waiting and asking a node (four-letter words)
are the I/O around it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from kmigrate.errors import BrokerStartError
from kmigrate.net import free_ports
from kmigrate.sandbox import process
from kmigrate.sandbox.jars import ensure_jars, jars_cached
from kmigrate.sandbox.properties import logging_config, logging_flag
from kmigrate.sandbox.state import SandboxEnsemble, ZkNode
from kmigrate.zookeeper.words import server_mode

# ZooKeeper-mode Kafka and the ensembles run from this release's jars.
ZOOKEEPER_KAFKA_VERSION = "3.9.1"
MAX_NODES = 5
Report = Callable[[str], None]


def zoo_cfg(node: ZkNode, data_dir: Path, dynamic_file: Path) -> str:
    """The static part of one node's configuration (the members live in the dynamic file)."""
    lines = {
        # Sessions may last up to 20 ticks: 2 s ticks allow Kafka's 18 s session.
        "tickTime": 2000,
        "initLimit": 10,
        "syncLimit": 5,
        "dataDir": data_dir,
        "reconfigEnabled": "true",
        "standaloneEnabled": "false",
        "dynamicConfigFile": dynamic_file,
        # reconfig needs a super user or skipACL; ACLs are still stored and compared.
        "skipACL": "yes",
        "4lw.commands.whitelist": "*",
        "admin.enableServer": "false",
        "autopurge.purgeInterval": 1,
    }
    return "".join(f"{k}={v}\n" for k, v in lines.items())


def dynamic_cfg(members: Sequence[ZkNode]) -> str:
    """ZooKeeper's dynamic configuration listing ``members`` as participants."""
    return "".join(f"{n.server_line}\n" for n in sorted(members, key=lambda n: n.node_id))


def node_config_path(ensemble_dir: Path, node: ZkNode) -> Path:
    return node.folder(ensemble_dir) / "zoo.cfg"


def new_ensemble(
    ensemble_dir: Path, name: str, nodes: int, report: Report, first_id: int = 1
) -> SandboxEnsemble:
    """Files for a new ensemble of ``nodes`` servers (ids from ``first_id``); not started."""
    if not jars_cached(ZOOKEEPER_KAFKA_VERSION):
        report(f"{name}: fetching Kafka {ZOOKEEPER_KAFKA_VERSION} jars (ZooKeeper's server)")
    ensure_jars(ZOOKEEPER_KAFKA_VERSION)
    ports = free_ports(3 * nodes)
    members = tuple(
        ZkNode(first_id + i, ports[3 * i], ports[3 * i + 1], ports[3 * i + 2]) for i in range(nodes)
    )
    ensemble = SandboxEnsemble(name, ZOOKEEPER_KAFKA_VERSION, members)
    for node in members:
        write_node_files(ensemble_dir, ensemble, node, members)
    return ensemble


def write_node_files(
    ensemble_dir: Path, ensemble: SandboxEnsemble, node: ZkNode, members: Sequence[ZkNode]
) -> Path:
    """A node's zoo.cfg, its dynamic file listing ``members``, myid and logging config."""
    folder = node.folder(ensemble_dir)
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "myid").write_text(f"{node.node_id}\n")
    dynamic = folder / "zoo.cfg.dynamic"
    dynamic.write_text(dynamic_cfg(members))
    log_name, content = logging_config(ensemble.kafka_version)
    (folder / log_name).write_text(content)
    cfg = node_config_path(ensemble_dir, node)
    cfg.write_text(zoo_cfg(node, data, dynamic))
    return cfg


def start_dead_nodes(
    ensemble_dir: Path,
    ensemble: SandboxEnsemble,
    report: Report,
    started: Callable[[ZkNode], None] = lambda _: None,
) -> SandboxEnsemble:
    """Start the nodes that are not running (on their own data and ports); ``started``
    hears of each at once, so a failure later can stop it."""
    dead = [n for n in ensemble.nodes if not is_ours(ensemble_dir, n)]
    if not dead:
        report(f"{ensemble.name}: already running ({len(ensemble.nodes)} ZooKeeper node(s))")
        return ensemble
    jars = ensure_jars(ensemble.kafka_version)
    log_name, _ = logging_config(ensemble.kafka_version)
    report(f"{ensemble.name}: starting {len(dead)} ZooKeeper node(s)")
    for node in dead:
        folder = node.folder(ensemble_dir)
        with process.recording():
            pid = process.start_zookeeper(
                jars,
                node_config_path(ensemble_dir, node),
                logging_flag(ensemble.kafka_version, folder / log_name),
            )
            running = replace(node, pid=pid)
            ensemble = ensemble.with_node(running)
            started(running)
    return ensemble


def is_ours(ensemble_dir: Path, node: ZkNode) -> bool:
    return process.is_ours(node.pid, node_config_path(ensemble_dir, node))


def wait_ready(
    ensemble_dir: Path, ensemble: SandboxEnsemble, timeout: float, report: Report
) -> None:
    """Until every node serves as leader or follower of one quorum."""
    report(f"{ensemble.name}: waiting for a quorum of {len(ensemble.nodes)} node(s)")
    deadline = time.monotonic() + timeout
    while True:
        modes = {}
        for node in ensemble.nodes:
            if not process.is_running(node.pid):
                log = node.folder(ensemble_dir) / "zookeeper.log"
                raise BrokerStartError(
                    f"ZooKeeper node {node.node_id} of ensemble '{ensemble.name}' exited "
                    f"during start; see {log}",
                    detail=process.failure_excerpt(log),
                )
            modes[node.node_id] = mode(node.client_port)
        if all(m in ("leader", "follower") for m in modes.values()):
            report(f"{ensemble.name}: ready at {ensemble.connect}")
            return
        if time.monotonic() > deadline:
            log = ensemble.nodes[0].folder(ensemble_dir) / "zookeeper.log"
            raise BrokerStartError(
                f"ZooKeeper ensemble '{ensemble.name}' formed no quorum within {timeout:g}s "
                f"(modes: {modes}); see {log}",
                detail=process.failure_excerpt(log),
            )
        time.sleep(0.3)


def mode(client_port: int) -> str | None:
    """leader / follower / observer / standalone, or None when the node does not serve."""
    return server_mode(f"127.0.0.1:{client_port}")
