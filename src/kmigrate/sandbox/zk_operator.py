"""The sandbox as the operator of a ZooKeeper move: it stops and starts its own ZooKeeper
servers (rewriting their configuration files) and restarts its own brokers with a new
zookeeper.connect. Every change is saved to sandbox.json at once, so `sandbox status`
and `down` keep seeing the processes, even after a kill -9 of the move."""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from kmigrate.errors import SandboxError
from kmigrate.sandbox import process, zookeeper
from kmigrate.sandbox.jars import ensure_jars
from kmigrate.sandbox.node_files import broker_log_flag, broker_properties
from kmigrate.sandbox.properties import logging_config, logging_flag
from kmigrate.sandbox.state import SandboxEnsemble, SandboxState, ZkNode, load_state

_CONNECT = re.compile(r"^zookeeper\.connect=.*$", re.MULTILINE)


class SandboxOperator:
    def __init__(self, directory: Path, cluster: str | None = None) -> None:
        """``cluster`` is the one whose brokers it restarts (none: servers only)."""
        self.directory = directory.resolve()
        self.cluster = cluster or ""
        state = load_state(self.directory)
        if cluster is not None and cluster not in state.clusters:
            raise SandboxError(f"no sandbox cluster named {cluster} in {self.directory}")

    # ------------------------------------------------------------ ZooKeeper servers

    def _find(self, state: SandboxState, node_id: int) -> tuple[SandboxEnsemble, ZkNode]:
        for ensemble in state.ensembles.values():
            for node in ensemble.nodes:
                if node.node_id == node_id:
                    return ensemble, node
        raise SandboxError(f"no sandbox ZooKeeper server with id {node_id} in {self.directory}")

    def stop_server(self, node_id: int) -> None:
        state = load_state(self.directory)
        ensemble, node = self._find(state, node_id)
        folder = state.ensemble_dir(ensemble.name)
        if node.pid:
            process.stop_processes({node.pid: zookeeper.node_config_path(folder, node)}, grace=10.0)
        state.with_ensemble(ensemble.with_node(replace(node, pid=None))).save()

    def start_server(self, node_id: int, members: Sequence[int], *, fresh: bool) -> None:
        known = load_state(self.directory)
        for wanted in (node_id, *members):  # all known before anything stops
            self._find(known, wanted)
        self.stop_server(node_id)
        state = load_state(self.directory)
        ensemble, node = self._find(state, node_id)
        folder = state.ensemble_dir(ensemble.name)
        if fresh:
            shutil.rmtree(node.folder(folder) / "data" / "version-2", ignore_errors=True)
        listed = [self._find(state, i)[1] for i in members]
        cfg = zookeeper.write_node_files(folder, ensemble, node, listed)
        log_name, _ = logging_config(ensemble.kafka_version)
        pid = process.start_zookeeper(
            ensure_jars(ensemble.kafka_version),
            cfg,
            logging_flag(ensemble.kafka_version, node.folder(folder) / log_name),
        )
        state.with_ensemble(ensemble.with_node(replace(node, pid=pid))).save()

    # ------------------------------------------------------------ brokers

    def recover_broker(self, broker_id: int, zookeeper_connect: str, *, registered: bool) -> bool:
        """Starts the broker as its properties say if it does not run (the move then
        sees its connect string and restarts it again if it is not the one wanted)."""
        state = load_state(self.directory)
        cluster = state.clusters[self.cluster]
        broker = next(b for b in cluster.brokers if b.node_id == broker_id)
        props = broker_properties(self.directory, cluster, broker)
        if process.is_ours(broker.pid, props):
            return False
        pid = process.start_broker(
            ensure_jars(cluster.kafka_version),
            props,
            broker_log_flag(self.directory, cluster, broker),
        )
        state.with_cluster(cluster.with_broker(replace(broker, pid=pid))).save()
        return True

    def restart_broker(self, broker_id: int, zookeeper_connect: str) -> None:
        state = load_state(self.directory)
        cluster = state.clusters[self.cluster]
        broker = next((b for b in cluster.brokers if b.node_id == broker_id), None)
        if broker is None:
            raise SandboxError(f"cluster {self.cluster} has no broker {broker_id}")
        props = broker_properties(self.directory, cluster, broker)
        if broker.pid:
            process.stop_processes({broker.pid: props}, grace=60.0)  # controlled shutdown
        text = _CONNECT.sub(f"zookeeper.connect={zookeeper_connect}", props.read_text())
        props.write_text(text)
        pid = process.start_broker(
            ensure_jars(cluster.kafka_version),
            props,
            broker_log_flag(self.directory, cluster, broker),
        )
        cluster = cluster.with_broker(replace(broker, pid=pid))
        switched = all(
            _CONNECT.search(broker_properties(self.directory, cluster, b).read_text()).group(0)  # type: ignore[union-attr]
            == f"zookeeper.connect={zookeeper_connect}"
            for b in cluster.brokers
        )
        if switched:
            cluster = replace(cluster, zookeeper_connect=zookeeper_connect)
        state.with_cluster(cluster).save()
