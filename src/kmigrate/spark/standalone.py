"""A real Spark standalone cluster (one master, one worker) from pyspark's own jars.

For tests and benchmarks that must prove a job runs where driver and executors are
separate JVMs and Python processes with their own working directories. Binds to
127.0.0.1 on free ports; ``stop`` ends exactly the processes it started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from kmigrate.net import free_ports


def free_port() -> int:
    return free_ports(1)[0]


@dataclass
class StandaloneSpark:
    folder: Path
    cores: int = 2
    memory: str = "2g"
    master_port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def start(self, timeout: float = 120) -> StandaloneSpark:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.master_port),
            "--webui-port",
            str(self.ui_port),
        )
        self._launch(
            "worker",
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            "127.0.0.1",
            "--webui-port",
            str(free_port()),
            "--cores",
            str(self.cores),
            "--memory",
            self.memory,
            "--work-dir",
            str(self.folder / "work"),
            self.url,
        )
        deadline = time.monotonic() + timeout
        while self.alive_workers() < 1:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                self.stop()
                raise RuntimeError(f"Spark standalone did not start; see {self.folder}")
            time.sleep(0.5)
        return self

    def _launch(self, name: str, main: str, *args: str) -> None:
        home = Path(pyspark.__file__).parent
        # pyspark's folder has jars/ but no RELEASE file: without the Scala version the
        # worker's launcher looks for a source build and cannot start executors.
        env = {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_SCALA_VERSION": "2.13",
        }
        with open(self.folder / f"{name}.log", "ab") as log:
            self.processes.append(
                subprocess.Popen(
                    ["java", "-Xmx512m", "-cp", f"{home / 'jars'}/*", main, *args],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            )

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as r:
                state = json.load(r)
        except (OSError, ValueError):
            return 0
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=30)
        self.processes.clear()
