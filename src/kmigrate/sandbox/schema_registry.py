"""The sandbox's Schema Registry: AxonOps Schema Registry (Go, Confluent's REST API),
built once from the pinned module in ``schema-registry/`` (package data), one process
per cluster on 127.0.0.1.

Memory storage only: a restarted registry starts empty. Like a broker, a registry
counts as ours only while its command line names its own registry.yaml.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from kmigrate.errors import SandboxError
from kmigrate.maven import cache_dir
from kmigrate.sandbox import process

MODULE_DIR = Path(__file__).with_name("schema-registry")
MAIN_PACKAGE = "github.com/axonops/axonops-schema-registry/cmd/schema-registry"
BUILD_TIMEOUT_S = 900.0
CONFIG_NAME = "registry.yaml"
LOG_NAME = "registry.log"
_ASK_TIMEOUT_S = 1.0
# Requests to 127.0.0.1 go straight there, whatever http_proxy says.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))

Report = Callable[[str], None]


def pinned_version(go_mod: str) -> str:
    """The registry release a wrapper go.mod requires, e.g. "v0.2.1"."""
    found = re.search(
        r"^\s*(?:require\s+)?github\.com/axonops/axonops-schema-registry\s+(v\S+)", go_mod, re.M
    )
    if found is None:
        raise SandboxError(f"{MODULE_DIR / 'go.mod'} requires no axonops-schema-registry version")
    return found.group(1)


def binary_path() -> Path:
    """Where the built registry lives: one file per pinned version, under the cache."""
    version = pinned_version((MODULE_DIR / "go.mod").read_text())
    return cache_dir() / "schema-registry" / version / "schema-registry"


def ensure_registry(report: Report = lambda _: None) -> Path:
    """The registry's binary, built once with Go (modules from the Go module proxy).
    The file is complete or absent: Go writes a temporary name that is then renamed."""
    target = binary_path()
    if target.is_file():
        return target
    go = shutil.which("go")
    if go is None:
        raise SandboxError(
            "Go is not on PATH; install Go >= 1.26 to build the sandbox's Schema Registry"
        )
    report("building the Schema Registry with Go (once; about a minute)")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        with tempfile.TemporaryDirectory(prefix="kmigrate-registry-") as build:
            for name in ("go.mod", "go.sum"):
                shutil.copy(MODULE_DIR / name, build)
            _go_build(go, Path(build), partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _go_build(go: str, folder: Path, output: Path) -> None:
    command = [go, "build", "-trimpath", "-o", str(output), MAIN_PACKAGE]
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false"}
    try:
        done = subprocess.run(
            command,
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise SandboxError(
            f"building the sandbox's Schema Registry with Go took over {BUILD_TIMEOUT_S:g}s; "
            "check that the Go module proxy is reachable"
        ) from exc
    if done.returncode != 0:
        lines = (done.stdout + done.stderr).strip().splitlines()
        raise SandboxError(
            f"could not build the sandbox's Schema Registry with {go}; it needs Go >= 1.26 "
            "on PATH and the Go module proxy (go's last lines below)",
            detail="\n".join(lines[-15:]),
        )


# ---------------------------------------------------------------- its process
# A cluster's registry lives in CLUSTER_DIR/schema-registry: registry.yaml, registry.log.


def config_path(cluster_dir: Path) -> Path:
    """The registry's registry.yaml: its settings, and what names its process."""
    return cluster_dir / "schema-registry" / CONFIG_NAME


def log_path(cluster_dir: Path) -> Path:
    return cluster_dir / "schema-registry" / LOG_NAME


def start(binary: Path, cluster_dir: Path, port: int) -> int:
    """Start a registry on 127.0.0.1:``port`` with memory storage, detached; its pid.
    Its environment is empty: none of the user's SCHEMA_REGISTRY_*, Vault or cloud
    settings reach it."""
    config = config_path(cluster_dir)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"server:\n  host: 127.0.0.1\n  port: {port}\nstorage:\n  type: memory\n")
    command = [str(binary), "-config", str(config)]
    return process.start_detached(command, log_path(cluster_dir), env={})


def is_ours(pid: int | None, cluster_dir: Path) -> bool:
    """True while ``pid`` lives and is the registry started for ``cluster_dir``."""
    return process.is_ours(pid, config_path(cluster_dir))


def answers(port: int) -> bool:
    """The registry on ``port`` answers GET /subjects with 200."""
    url = f"http://127.0.0.1:{port}/subjects"
    try:
        with _DIRECT.open(url, timeout=_ASK_TIMEOUT_S) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def wait_ready(cluster: str, pid: int | None, port: int, cluster_dir: Path, timeout: float) -> None:
    """Until the registry answers GET /subjects; a SandboxError with its log's last lines
    if its process exits or ``timeout`` passes first."""
    log = log_path(cluster_dir)
    deadline = time.monotonic() + timeout
    while True:
        # Alive first: whatever else may answer on its port, a dead registry is not ready.
        if not process.is_running(pid):
            raise SandboxError(
                f"the Schema Registry of cluster '{cluster}' exited during start; see {log}",
                detail=process.tail(log, lines=12),
            )
        if answers(port):
            return
        if time.monotonic() > deadline:
            raise SandboxError(
                f"the Schema Registry of cluster '{cluster}' did not answer GET /subjects "
                f"on port {port} within {timeout:g}s; see {log}",
                detail=process.tail(log, lines=12),
            )
        time.sleep(0.05)
