"""The sandbox as the operator of a migration to KRaft: it provisions KRaft controllers
next to its ZooKeeper-mode brokers (their folders, configuration, formatted storage and
pids saved in sandbox.json at once, so `sandbox down` stops them even after a kill -9 of
the migration) and restarts its brokers with a changed server.properties."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from kmigrate.errors import SandboxError
from kmigrate.kraft.plan import ConfigChange
from kmigrate.sandbox import process
from kmigrate.sandbox.jars import ensure_jars
from kmigrate.sandbox.node_files import broker_log_flag, broker_properties, controller_properties
from kmigrate.sandbox.properties import (
    logging_config,
    logging_flag,
    read_properties,
    write_properties,
)
from kmigrate.sandbox.readiness import wait_unregistered
from kmigrate.sandbox.state import ControllerNode, SandboxCluster, load_state

QUICK_STOP_S = 2.0


class SandboxKRaftOperator:
    def __init__(self, directory: Path, cluster: str) -> None:
        self.directory = directory.resolve()
        self.cluster = cluster
        if cluster not in load_state(self.directory).clusters:
            raise SandboxError(f"no sandbox cluster named {cluster} in {self.directory}")

    def _cluster(self) -> SandboxCluster:
        return load_state(self.directory).clusters[self.cluster]

    def _save(self, cluster: SandboxCluster) -> None:
        load_state(self.directory).with_cluster(cluster).save()

    # ------------------------------------------------------------------ controllers

    def start_controller(self, node_id: int, properties: dict[str, str], cluster_id: str) -> None:
        cluster = self._cluster()
        node = next((c for c in cluster.controllers if c.node_id == node_id), None)
        if node is None:
            port = int(properties["listeners"].rsplit(":", 1)[1])
            node = ControllerNode(node_id, port)
            cluster = cluster.with_controller(node)
            self._save(cluster)  # known before it runs: `sandbox down` finds it
        path = controller_properties(self.directory, cluster, node)
        folder = path.parent
        (folder / "data").mkdir(parents=True, exist_ok=True)
        name, content = logging_config(cluster.kafka_version)
        (folder / name).write_text(content)
        wanted = properties | {"log.dirs": str(folder / "data")}
        if node.pid and process.is_ours(node.pid, path):
            if read_properties(path) == wanted:
                return
            process.stop_processes({node.pid: path}, grace=30.0)
        write_properties(path, wanted)
        jars = ensure_jars(cluster.kafka_version)
        flag = logging_flag(cluster.kafka_version, folder / name)
        if not (folder / "data" / "meta.properties").exists():
            process.wait_formatted(
                [(path, process.format_storage(jars, path, cluster_id, [], flag))]
            )
        pid = process.start_broker(jars, path, flag)
        self._save(self._cluster().with_controller(replace(node, pid=pid)))

    def stop_controller(self, node_id: int, *, wipe: bool) -> None:
        cluster = self._cluster()
        node = next((c for c in cluster.controllers if c.node_id == node_id), None)
        if node is None:
            return
        path = controller_properties(self.directory, cluster, node)
        if node.pid:
            process.stop_processes({node.pid: path}, grace=30.0)
        if wipe:
            shutil.rmtree(path.parent, ignore_errors=True)
            self._save(self._cluster().without_controller(node_id))
        else:
            self._save(self._cluster().with_controller(replace(node, pid=None)))

    # ---------------------------------------------------------------------- brokers

    def broker_settings(self, broker_id: int) -> dict[str, str]:
        """The broker's server.properties as the sandbox wrote it."""
        cluster = self._cluster()
        broker = next((b for b in cluster.brokers if b.node_id == broker_id), None)
        if broker is None:
            raise SandboxError(f"cluster {self.cluster} has no broker {broker_id}")
        return read_properties(broker_properties(self.directory, cluster, broker))

    def restart_broker(self, broker_id: int, change: ConfigChange, *, quick_stop: bool) -> None:
        cluster = self._cluster()
        broker = next((b for b in cluster.brokers if b.node_id == broker_id), None)
        if broker is None:
            raise SandboxError(f"cluster {self.cluster} has no broker {broker_id}")
        path = broker_properties(self.directory, cluster, broker)
        if broker.pid:
            # a controlled shutdown, unless it cannot finish
            process.stop_processes({broker.pid: path}, grace=QUICK_STOP_S if quick_stop else 60.0)
        wait_unregistered(read_properties(path).get("zookeeper.connect"), broker_id)
        write_properties(path, change.applied(read_properties(path)))
        pid = process.start_broker(
            ensure_jars(cluster.kafka_version),
            path,
            broker_log_flag(self.directory, cluster, broker),
        )
        self._save(self._cluster().with_broker(replace(broker, pid=pid)))
