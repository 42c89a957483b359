"""A two-instance gateway in front of a config's clusters, its routes in a one-server
ZooKeeper ensemble of its own: what the gateway tests' fixture and the gateway kill-point
sweep (bench/killpoints_gateway.py) start."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness import zygote
from harness.helpers import wait_for
from kmigrate.config import load_settings
from kmigrate.gateway.control.shared_state import Registry
from kmigrate.net import free_ports
from kmigrate.sandbox import manager


@dataclass
class Gateway:
    config: Path
    connect: str  # the ensemble holding routes and instances
    ports: dict[int, int]  # instance id -> port
    logs: Path
    procs: dict[int, zygote.Forked | subprocess.Popen[bytes]] = field(default_factory=dict)
    http_ports: dict[int, int] = field(default_factory=dict)  # the DIS API, when started

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports.values())

    def instance(self, node_id: int) -> str:
        return f"127.0.0.1:{self.ports[node_id]}"

    def http(self, node_id: int) -> str:
        """The base URL of an instance's DIS API."""
        return f"http://127.0.0.1:{self.http_ports[node_id]}/v2/project"

    def start(self, node_id: int) -> None:
        # An instance killed with -9 stays registered until its ZooKeeper session ends:
        # started again before that, it would refuse its own id.
        wait_for(lambda: node_id not in self.registered(), timeout=30,
                 message=f"the old gateway instance {node_id} dropped out")  # fmt: skip
        self.procs[node_id] = zygote.spawn(
            ["--config", str(self.config), "gateway", "start",
             "--listen", self.instance(node_id), "--id", str(node_id),
             *(["--http-listen", f"127.0.0.1:{self.http_ports[node_id]}"]
               if node_id in self.http_ports else [])],
            os.environ, self.logs / f"gateway-{node_id}.log",
        )  # fmt: skip
        wait_for(
            lambda: node_id in self.registered() or self.procs[node_id].poll() is not None,
            timeout=60,
            message=f"gateway instance {node_id} registered",
        )
        assert self.procs[node_id].poll() is None, self.log_tail(node_id)

    def registered(self) -> set[int]:
        registry = Registry(self.connect, "/kmigrate-gateway", "gw")
        try:
            return {i.node_id for i in registry.instances()}
        finally:
            registry.close()

    def kill(self, node_id: int, sig: int = signal.SIGKILL) -> None:
        proc = self.procs.pop(node_id)
        if proc.poll() is None:
            os.killpg(proc.pid, sig)
        proc.wait(30)

    def log_tail(self, node_id: int) -> str:
        return (self.logs / f"gateway-{node_id}.log").read_text()[-3000:]


@contextmanager
def running_gateway(
    base: Path,
    folder: Path,
    extra: Path | None = None,
    group_home: str = "target",
    settings: dict[str, Any] | None = None,
) -> Iterator[Gateway]:
    """Two instances in front of the clusters of the config ``base`` (and those of
    ``extra``), their routes in a one-server ensemble of their own; ``settings`` adds to
    the 'gateway:' section (client authentication, principals)."""
    manager.up(folder / "zk", manager.UpRequest(clusters=[], ensembles=["gw"], nodes=1))
    try:
        ensemble = load_settings(folder / "zk" / "clusters.yaml").ensemble("gw")
        body = yaml.safe_load(base.read_text())
        if body.get("env_file"):
            body["env_file"] = str((base.parent / body["env_file"]).resolve())
        if extra is not None:
            more = yaml.safe_load(extra.read_text())
            body["clusters"].update(more["clusters"])
        body["store"] = {"url": f"sqlite:///{folder / 'kmigrate.db'}"}
        body["zookeeper"] = {"gw": {"connect": ensemble.connect}}
        body["gateway"] = {"group_home": group_home, "zookeeper": "gw", "age_every_s": 1}
        body["gateway"].update(settings or {})
        config = folder / "gateway.yaml"
        config.write_text(yaml.safe_dump(body))
        ports = free_ports(4)
        gw = Gateway(
            config, ensemble.connect, dict(zip((1, 2), ports[:2], strict=True)), folder,
            http_ports=dict(zip((1, 2), ports[2:], strict=True)),
        )  # fmt: skip
        try:
            for node_id in gw.ports:
                gw.start(node_id)
            yield gw
        finally:
            for node_id in list(gw.procs):
                gw.kill(node_id, signal.SIGTERM)
    finally:
        manager.down(folder / "zk", purge=True, grace=5)
