"""The demo's gateway (`kmigrate demo --via-gateway`): a one-server ZooKeeper ensemble in
the sandbox, a clusters.yaml next to the sandbox's with a `gateway:` section (group
home: the target), and two gateway instances on free ports, stopped at the end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import yaml

from kmigrate.config import SANDBOX_CONFIG_NAME, ClusterConfig, Settings, load_settings
from kmigrate.errors import KMigrateError
from kmigrate.gateway.control.shared_state import configured
from kmigrate.net import free_ports
from kmigrate.sandbox import manager

CONFIG_NAME = "demo-gateway.yaml"
INSTANCES = (1, 2)
START_S = 60.0


@contextmanager
def demo_gateway(
    directory: Path, report: Callable[[str], None]
) -> Iterator[tuple[Settings, ClusterConfig]]:
    """The settings that know the gateway, and the gateway as a cluster clients use."""
    manager.up(directory, manager.UpRequest(clusters=[], ensembles=["gw"], nodes=1), report=report)
    body = yaml.safe_load((directory / SANDBOX_CONFIG_NAME).read_text())
    body["gateway"] = {"group_home": "target", "zookeeper": "gw"}
    config = directory / CONFIG_NAME
    config.write_text(yaml.safe_dump(body, sort_keys=False))
    settings = load_settings(config)
    ports = dict(zip(INSTANCES, free_ports(len(INSTANCES)), strict=True))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for node, port in ports.items():
            with open(directory / f"demo-gateway-{node}.log", "ab") as log:
                procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "kmigrate",
                            "--config",
                            str(config),
                            "gateway",
                            "start",
                            "--listen",
                            f"127.0.0.1:{port}",
                            "--id",
                            str(node),
                        ],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        _wait_registered(settings, procs, directory)
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports.values())
        report(f"gateway instances {', '.join(map(str, ports))} on {bootstrap}")
        yield settings, ClusterConfig(name="gateway", bootstrap_servers=bootstrap)
    finally:
        for proc in procs:
            if proc.poll() is None:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            with suppress(subprocess.TimeoutExpired):
                proc.wait(30)


def _wait_registered(
    settings: Settings, procs: list[subprocess.Popen[bytes]], directory: Path
) -> None:
    registry, _home = configured(settings)
    try:
        deadline = time.monotonic() + START_S
        while {i.node_id for i in registry.instances()} < set(INSTANCES):
            exited = [p for p in procs if p.poll() is not None]
            if exited or time.monotonic() > deadline:
                raise KMigrateError(
                    "the demo's gateway instances did not start; see "
                    f"{directory}/demo-gateway-*.log"
                )
            time.sleep(0.2)
    finally:
        registry.close()
